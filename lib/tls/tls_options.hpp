// SPDX-License-Identifier: GPL-2.0-only
// What a host asks of the secure channel (the engine's tls* options) and
// what it offers for it: the PSK identity and the TLS PSK derived from the
// configured key, or an identity the user names.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "lib/tls/tls_psk.hpp"

namespace mpnvme::tls {

// auto: kernel TLS where the socket takes it (TCP on a kernel with the tls
// module), else the user-space record layer; kernel / user: only that.
enum class Mode : uint8_t { Auto, Kernel, User };
const char *mode_name(Mode m); // "auto", "ktls", "user"

struct HostTlsConfig {
  bool enabled = false;
  std::optional<ConfiguredPsk> key;
  std::string identity; // "": the version 1 identity derived from the key
  std::vector<PskHash> suites{std::begin(kSuites), std::end(kSuites)};
  Mode mode = Mode::Auto;
  bool compat = false; // libnvme's first derivation (tls_psk.hpp), as older nvme-cli inserts keys
  // Secure channel concatenation (concat=1): no configured key; the admin
  // queue's DH-HMAC-CHAP generates the TLS PSK of every other queue.
  bool concat = false;
  bool operator==(const HostTlsConfig &) const = default;
};

// "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384" (tls_ciphers=): in order,
// without repeats. Throws std::invalid_argument naming `option` and the item.
std::vector<PskHash> parse_suite_list(const std::string &list, const std::string &option);

// What the host offers to `subnqn`: the identity (the derived version 1
// one, or the configured one, whose TLS PSK is derived for it when it is an
// NVMe identity and is the retained key itself otherwise) and its PSK.
struct Offer {
  std::string identity;
  SecretBytes psk;
  PskHash hash;
};
Offer host_offer(const HostTlsConfig &c, const std::string &hostnqn, const std::string &subnqn);

} // namespace mpnvme::tls
