// SPDX-License-Identifier: GPL-2.0-only
#include "toolkit/nvmet/tls_keyring.hpp"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <keyutils.h>
#include <stdexcept>

namespace mpnvme::toolkit {

std::vector<std::string> insert_tls_psks(const tls::ConfiguredPsk &key, const std::string &hostnqn, const std::string &subnqn,
                                         bool compat) {
  const key_serial_t ring = find_key_by_type_and_desc("keyring", ".nvme", 0);
  if (ring < 0)
    throw std::runtime_error("the kernel has no .nvme keyring (CONFIG_NVME_KEYRING: load nvme-tcp or nvmet-tcp first)");
  std::vector<std::string> ids;
  for (unsigned version : {1u, 0u}) {
    const tls::OfferedPsk o = tls::host_psk(key, hostnqn, subnqn, version, compat);
    const std::string id = tls::to_string(o.identity);
    // add_key updates a key of the same type and description in place.
    if (add_key("psk", id.c_str(), o.psk.data(), o.psk.size(), ring) < 0)
      throw std::runtime_error(fmt::format("TLS PSK '{}' into .nvme: {}{}", id, strerror(errno),
                                           errno == ENODEV ? " (no psk key type: this kernel's NVMe has no TLS)" : ""));
    ids.push_back(id);
  }
  return ids;
}

} // namespace mpnvme::toolkit
