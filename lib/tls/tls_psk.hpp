// SPDX-License-Identifier: GPL-2.0-only
// TLS PSKs for NVMe/TCP as the NVMe/TCP transport specification derives
// them and nvme-cli (libnvme) puts them into the kernel's .nvme keyring,
// where tlshd finds them for the Linux host and nvmet:
//
//   configured PSK  "NVMeTLSkey-1:NN:BASE64:" (nvme gen-tls-key), NN the
//                   hash that turns it into the retained PSK (00 none);
//   retained PSK    HKDF-Expand-Label(HKDF-Extract(0, configured),
//                   "HostNQN", host NQN, length of the key);
//   PSK identity    "NVMe0R<hh> <hostnqn> <subnqn>" (version 0) or
//                   "NVMe1R<hh> <hostnqn> <subnqn> <digest>" (version 1,
//                   digest = base64 HMAC(retained, "<hostnqn> <subnqn>
//                   NVMe-over-Fabrics")), hh the cipher suite's hash;
//   TLS PSK         HKDF-Expand-Label(HKDF-Extract(0, retained),
//                   "nvme-tls-psk", identity (v0) or "<hh> <digest>" (v1),
//                   length of the key).
//
// `compat` is the derivation libnvme used before it followed RFC 8446's
// HkdfLabel (no length bytes before label and context, the length little
// endian); nvme-cli's --compat, for keys inserted by older tools.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "lib/crypto/dhchap_crypto.hpp"
#include "lib/crypto/secret_bytes.hpp"

namespace mpnvme::tls {

// The hash of the cipher suite a PSK goes with: SHA-256 for
// TLS_AES_128_GCM_SHA256, SHA-384 for TLS_AES_256_GCM_SHA384.
enum class PskHash : uint8_t { Sha256 = 1, Sha384 = 2 };
constexpr PskHash kSuites[] = {PskHash::Sha256, PskHash::Sha384};
const char *cipher_suite(PskHash h); // OpenSSL's (and IANA's) name
size_t hash_len(PskHash h);
// The suite hash as DH-HMAC-CHAP names it (the same SHA-2 function, its
// HMAC and its OpenSSL digest live there).
inline dhchap::Hash as_hash(PskHash h) { return static_cast<dhchap::Hash>(h); }

struct ConfiguredPsk {
  uint8_t hmac = 0; // NN: 0 none, 1 SHA-256, 2 SHA-384
  SecretBytes key;  // 32 or 48 bytes
  bool operator==(const ConfiguredPsk &) const = default;
};

// `what` names the source in errors (an option, a file, a host entry);
// errors never show the key. Throws std::invalid_argument.
ConfiguredPsk parse_psk(const std::string &text, const std::string &what);
std::string format_psk(const ConfiguredPsk &k);
ConfiguredPsk read_psk_file(const std::string &path, const std::string &what);

// The suite's hash: the key's transformation, or its length for NN 00.
PskHash psk_hash(const ConfiguredPsk &k);
SecretBytes retained_psk(const ConfiguredPsk &k, const std::string &hostnqn, bool compat = false);

struct PskIdentity {
  unsigned version = 0;   // 0 or 1
  bool generated = false; // 'G': from DH-HMAC-CHAP (secure concatenation), 'R': retained
  PskHash hash = PskHash::Sha256;
  std::string hostnqn, subnqn;
  std::string digest; // version 1 only
};
std::string to_string(const PskIdentity &id);
// nullopt for text that is not an NVMe PSK identity.
std::optional<PskIdentity> parse_identity(const std::string &text);

// base64 HMAC(retained, "<hostnqn> <subnqn> NVMe-over-Fabrics").
std::string psk_digest(PskHash h, const SecretBytes &retained, const std::string &hostnqn, const std::string &subnqn);
SecretBytes derive_tls_psk(const SecretBytes &retained, const PskIdentity &id, bool compat = false);

// RFC 8446's HKDF-Expand-Label(secret, label, "", length) alone (no
// extract): the record keys and IVs of a traffic secret, for kernel TLS.
SecretBytes traffic_key(PskHash h, const SecretBytes &secret, const std::string &label, size_t length);

// What a host offers in its ClientHello for a configured key.
struct OfferedPsk {
  PskIdentity identity;
  SecretBytes psk;
};
OfferedPsk host_psk(const ConfiguredPsk &k, const std::string &hostnqn, const std::string &subnqn, unsigned version,
                    bool compat = false);

// Secure channel concatenation: what a DH-HMAC-CHAP transaction's
// generated PSK (dhchap::generated_psk) becomes, on both sides, as Linux
// derives it: the identity "NVMe1G<hh> <hostnqn> <subnqn> <digest>" (hh
// the transaction's hash, digest as above with the generated PSK) and the
// TLS PSK HKDF-Expand-Label(HKDF-Extract(0, generated), "nvme-tls-psk",
// "<hh> <digest>", length of the hash). SHA-512 has no cipher suite:
// std::invalid_argument.
OfferedPsk generated_offer(dhchap::Hash h, const SecretBytes &generated, const std::string &hostnqn, const std::string &subnqn);

} // namespace mpnvme::tls
