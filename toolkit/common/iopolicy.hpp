// SPDX-License-Identifier: GPL-2.0-only
// Setting the native NVMe multipath I/O policy, per subsystem or as the
// nvme_core default, with the value read back and every kernel refusal
// explained.
#pragma once
#include <string>
#include <vector>

#include "lib/config/engine_options.hpp" // kernel_iopolicy_names()
#include "toolkit/common/topology.hpp"

namespace mpnvme::toolkit {

// Throw std::runtime_error naming the sysfs file and the reason.
void set_subsystem_iopolicy(const SubsystemInfo &s, const std::string &policy);
void set_default_iopolicy(const std::string &policy);
// Why the kernel could refuse `policy`: "" when it should accept it.
std::string policy_support_problem(const std::string &policy);

} // namespace mpnvme::toolkit
