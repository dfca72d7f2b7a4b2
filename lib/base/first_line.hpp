// SPDX-License-Identifier: GPL-2.0-only
// The first line of a small text file (sysfs attributes, /etc/nvme/*,
// /proc), trailing white space removed; "" when it cannot be read.
#pragma once
#include <string>

namespace mpnvme {

std::string read_first_line(const std::string &path);

} // namespace mpnvme
