// SPDX-License-Identifier: GPL-2.0-only
// TLS PSKs in the kernel's .nvme keyring, where tlshd finds them for nvmet
// and for the Linux host, put there as nvme-cli does: for a configured key,
// a host and a subsystem, the TLS PSK of the version 1 identity and of the
// version 0 one (a 6.12 host offers version 1 first, older hosts and
// targets know only version 0), as keys of type "psk" (keyutils).
#pragma once
#include <string>
#include <vector>

#include "lib/tls/tls_psk.hpp"

namespace mpnvme::toolkit {

// Returns the identities inserted (or updated). Throws std::runtime_error
// saying what the kernel lacks or refused; never shows a key.
std::vector<std::string> insert_tls_psks(const tls::ConfiguredPsk &key, const std::string &hostnqn, const std::string &subnqn,
                                         bool compat);

} // namespace mpnvme::toolkit
