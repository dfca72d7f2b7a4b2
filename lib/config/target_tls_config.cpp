// SPDX-License-Identifier: GPL-2.0-only
#include "lib/config/target_tls_config.hpp"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <stdexcept>

#include "lib/base/printable.hpp"
#include "lib/config/target_auth_config.hpp"

namespace mpnvme::target {

namespace {

constexpr size_t kMaxNqn = 223; // NVMe base specification, NQN field

bool ends_with(const std::string &s, const std::string &suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// KEY or @FILE; `what` names the source in messages.
tls::ConfiguredPsk key_or_file(const std::string &v, const std::string &what) {
  if (!v.empty() && v[0] == '@') return tls::read_psk_file(v.substr(1), what);
  return tls::parse_psk(v, what);
}

} // namespace

const char *tls_port_name(TlsPort t) {
  switch (t) {
  case TlsPort::None: return "plaintext";
  case TlsPort::Optional: return "TLS optional";
  case TlsPort::Required: return "TLS required";
  }
  return "?";
}

FirstByte classify_first_byte(uint8_t first, TlsPort port) {
  if (first == 0x16) return FirstByte::Tls;
  return port == TlsPort::Required ? FirstByte::Refused : FirstByte::Plaintext;
}

TlsPort take_tls_suffix(std::string &item) {
  if (ends_with(item, ":tls-optional")) {
    item.resize(item.size() - 13);
    return TlsPort::Optional;
  }
  if (ends_with(item, ":tls")) {
    item.resize(item.size() - 4);
    return TlsPort::Required;
  }
  return TlsPort::None;
}

TlsPort tls_port_from_json(const std::string &tsas, const std::string &treq, const std::string &where) {
  if (tsas.empty() || tsas == "none") return TlsPort::None;
  if (tsas != "tls1.3") throw std::runtime_error(fmt::format("{}.addr.tsas: '{}' (accepted: none, tls1.3)", where, tsas));
  if (treq.empty() || treq == "not specified" || treq == "required") return TlsPort::Required;
  if (treq == "not required") return TlsPort::Optional;
  throw std::runtime_error(fmt::format("{}.addr.treq: '{}' (accepted: not specified, required, not required)", where, treq));
}

void add_cli_tls_keys(TlsKeys &keys, const std::vector<std::string> &args) {
  for (const auto &a : args) {
    auto [host, v] = host_value(a, "--tls-key");
    keys[host] = key_or_file(v, fmt::format("--tls-key for {}", host));
    OPENSSL_cleanse(v.data(), v.size());
  }
}

void add_json_tls_keys(TlsKeys &keys, const nlohmann::json &hosts, const std::string &where) {
  for (size_t i = 0; i < hosts.size(); i++) {
    const auto &h = hosts[i];
    if (!h.is_object() || !h.contains("tls_key")) continue;
    const std::string at = fmt::format("{}: hosts[{}]", where, i);
    if (!h.contains("nqn") || !h["nqn"].is_string()) throw std::runtime_error(at + ".nqn: required with tls_key");
    if (!h["tls_key"].is_string()) throw std::runtime_error(at + ".tls_key: must be a string");
    try {
      keys[h["nqn"].get<std::string>()] = key_or_file(h["tls_key"].get<std::string>(), at + ".tls_key");
    } catch (const std::invalid_argument &e) {
      throw std::runtime_error(e.what());
    }
  }
}

std::optional<tls::ServerPsk> psk_for_identity(const TlsKeys &keys, const std::function<bool(const std::string &)> &serves,
                                               const std::string &identity, bool compat, std::string &refusal,
                                               const GeneratedLookup &generated) {
  const auto parsed = tls::parse_identity(identity);
  if (!parsed) {
    refusal = "not an NVMe PSK identity (NVMe<0|1><R|G><01|02> HOSTNQN SUBNQN [DIGEST])";
    return std::nullopt;
  }
  const tls::PskIdentity &id = *parsed;
  // NQNs are at most 223 bytes; a version 0 identity is the context of its
  // PSK's HKDF label, which holds at most 255.
  if (id.hostnqn.size() > kMaxNqn || id.subnqn.size() > kMaxNqn) {
    refusal = fmt::format("an NQN longer than {} bytes", kMaxNqn);
    return std::nullopt;
  }
  if (id.version == 0 && identity.size() > 255) {
    refusal = fmt::format("a version 0 identity of {} bytes, longer than the 255 its PSK derivation can take", identity.size());
    return std::nullopt;
  }
  if (id.generated) {
    if (!serves(id.subnqn)) {
      refusal = fmt::format("no subsystem {} on this port", printable(id.subnqn));
      return std::nullopt;
    }
    if (auto psk = generated ? generated(identity) : std::nullopt) return psk;
    refusal = fmt::format("no generated PSK with this identity: host {} has not passed DH-HMAC-CHAP with secure channel "
                          "concatenation for it (or its keys changed since)",
                          printable(id.hostnqn));
    return std::nullopt;
  }
  const auto it = keys.find(id.hostnqn);
  if (it == keys.end()) {
    refusal = fmt::format("no TLS key for host {}", printable(id.hostnqn));
    return std::nullopt;
  }
  if (!serves(id.subnqn)) {
    refusal = fmt::format("no subsystem {} on this port", printable(id.subnqn));
    return std::nullopt;
  }
  const tls::ConfiguredPsk &k = it->second;
  if (id.hash != tls::psk_hash(k)) {
    refusal = fmt::format("the identity asks for {}, host {}'s key goes with {}", tls::cipher_suite(id.hash),
                          printable(id.hostnqn), tls::cipher_suite(tls::psk_hash(k)));
    return std::nullopt;
  }
  if (id.version == 1) { // the digest says which derivation made the host's key
    for (bool old : {false, true}) {
      const SecretBytes retained = tls::retained_psk(k, id.hostnqn, old);
      if (tls::psk_digest(id.hash, retained, id.hostnqn, id.subnqn) == id.digest)
        return tls::ServerPsk{tls::derive_tls_psk(retained, id, old), id.hash};
    }
    refusal = fmt::format("the identity's digest does not match host {}'s key (the host has another key)", printable(id.hostnqn));
    return std::nullopt;
  }
  const SecretBytes retained = tls::retained_psk(k, id.hostnqn, compat);
  return tls::ServerPsk{tls::derive_tls_psk(retained, id, compat), id.hash};
}

} // namespace mpnvme::target
