// SPDX-License-Identifier: GPL-2.0-only
#include "lib/tls/tls_options.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <sstream>
#include <stdexcept>

namespace mpnvme::tls {

const char *mode_name(Mode m) {
  switch (m) {
  case Mode::Auto: return "auto";
  case Mode::Kernel: return "ktls";
  case Mode::User: return "user";
  }
  return "?";
}

std::vector<PskHash> parse_suite_list(const std::string &list, const std::string &option) {
  std::vector<PskHash> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::optional<PskHash> h;
    for (PskHash s : kSuites)
      if (item == cipher_suite(s)) h = s;
    if (!h)
      throw std::invalid_argument(fmt::format("{}={}: unknown cipher suite '{}' (NVMe/TCP uses TLS_AES_128_GCM_SHA256 and "
                                              "TLS_AES_256_GCM_SHA384)",
                                              option, list, item));
    if (std::find(out.begin(), out.end(), *h) == out.end()) out.push_back(*h);
  }
  if (out.empty()) throw std::invalid_argument(fmt::format("{}: no cipher suite given", option));
  return out;
}

Offer host_offer(const HostTlsConfig &c, const std::string &hostnqn, const std::string &subnqn) {
  const ConfiguredPsk &k = *c.key;
  Offer o;
  if (c.identity.empty()) {
    OfferedPsk d = host_psk(k, hostnqn, subnqn, 1, c.compat);
    o = {to_string(d.identity), std::move(d.psk), d.identity.hash};
  } else if (const auto id = parse_identity(c.identity)) {
    const SecretBytes retained = retained_psk(k, hostnqn, c.compat);
    o = {c.identity, derive_tls_psk(retained, *id, c.compat), id->hash};
  } else {
    o = {c.identity, retained_psk(k, hostnqn, c.compat), psk_hash(k)};
  }
  return o;
}

} // namespace mpnvme::tls
