// SPDX-License-Identifier: GPL-2.0-only
#include "lib/tls/tls_psk.hpp"

#include <fmt/format.h>
#include <memory>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "lib/crypto/dhchap_crypto.hpp"
#include "lib/crypto/key_interchange.hpp"

namespace mpnvme::tls {

namespace {

const InterchangeFormat kTlsFormat{
    "NVMeTLSkey-1:", "NVMeTLSkey-1:NN:BASE64: as nvme gen-tls-key prints it", "TLS PSK", 2, "00 none, 01 SHA-256, 02 SHA-384",
    {32, 48, 0}};

// RFC 8446's HkdfLabel: uint16 length, then label and context, each
// with a one-byte length. The compat form is libnvme's first one.
std::vector<uint8_t> hkdf_label(size_t length, const std::string &label, const std::string &context, bool compat) {
  std::vector<uint8_t> info;
  const std::string full = "tls13 " + label;
  if (full.size() > 255 || context.size() > 255) throw std::invalid_argument("TLS PSK derivation: an NQN is too long");
  if (compat) {
    info = {static_cast<uint8_t>(length), static_cast<uint8_t>(length >> 8)};
    info.insert(info.end(), full.begin(), full.end());
    info.insert(info.end(), context.begin(), context.end());
    return info;
  }
  info = {static_cast<uint8_t>(length >> 8), static_cast<uint8_t>(length), static_cast<uint8_t>(full.size())};
  info.insert(info.end(), full.begin(), full.end());
  info.push_back(static_cast<uint8_t>(context.size()));
  info.insert(info.end(), context.begin(), context.end());
  return info;
}

// HKDF-Expand-Label(HKDF-Extract(0, key), label, context, key length),
// OpenSSL's HKDF in its extract-and-expand mode with an empty salt.
SecretBytes expand_label(PskHash h, const SecretBytes &key, const std::string &label, const std::string &context, bool compat,
                         size_t length = 0, bool extract = true) {
  if (!length) length = key.size();
  const std::vector<uint8_t> info = hkdf_label(length, label, context, compat);
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr), EVP_PKEY_CTX_free);
  SecretBytes out(length);
  size_t n = out.size();
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) <= 0 || EVP_PKEY_CTX_set_hkdf_md(ctx.get(), dhchap::evp_md(as_hash(h))) <= 0 ||
      (!extract && EVP_PKEY_CTX_set_hkdf_mode(ctx.get(), EVP_PKEY_HKDEF_MODE_EXPAND_ONLY) <= 0) ||
      EVP_PKEY_CTX_set1_hkdf_key(ctx.get(), key.data(), static_cast<int>(key.size())) <= 0 ||
      EVP_PKEY_CTX_add1_hkdf_info(ctx.get(), info.data(), static_cast<int>(info.size())) <= 0 ||
      EVP_PKEY_derive(ctx.get(), out.data(), &n) <= 0 || n != out.size()) {
    ERR_clear_error();
    throw std::runtime_error("TLS PSK derivation failed in OpenSSL's HKDF");
  }
  return out;
}

} // namespace

const char *cipher_suite(PskHash h) { return h == PskHash::Sha256 ? "TLS_AES_128_GCM_SHA256" : "TLS_AES_256_GCM_SHA384"; }
size_t hash_len(PskHash h) { return dhchap::hash_len(as_hash(h)); }

ConfiguredPsk parse_psk(const std::string &text, const std::string &what) {
  InterchangeKey k = decode_interchange(text, kTlsFormat, what);
  if (k.nn && k.key.size() != hash_len(static_cast<PskHash>(k.nn)))
    throw std::invalid_argument(fmt::format("{}: transformation 0{} needs a {}-byte key, this one has {}", what, k.nn,
                                            hash_len(static_cast<PskHash>(k.nn)), k.key.size()));
  return {k.nn, std::move(k.key)};
}

std::string format_psk(const ConfiguredPsk &k) { return encode_interchange(kTlsFormat, k.hmac, k.key); }

ConfiguredPsk read_psk_file(const std::string &path, const std::string &what) {
  std::string line = read_key_line(path, what);
  ConfiguredPsk k = parse_psk(line, fmt::format("{} ({})", what, path));
  OPENSSL_cleanse(line.data(), line.size());
  return k;
}

PskHash psk_hash(const ConfiguredPsk &k) {
  if (k.hmac) return static_cast<PskHash>(k.hmac);
  return k.key.size() == 48 ? PskHash::Sha384 : PskHash::Sha256;
}

SecretBytes retained_psk(const ConfiguredPsk &k, const std::string &hostnqn, bool compat) {
  if (!k.hmac) return k.key;
  return expand_label(static_cast<PskHash>(k.hmac), k.key, "HostNQN", hostnqn, compat);
}

std::string to_string(const PskIdentity &id) {
  std::string s = fmt::format("NVMe{}{}{:02} {} {}", id.version, id.generated ? 'G' : 'R', static_cast<unsigned>(id.hash),
                              id.hostnqn, id.subnqn);
  if (id.version == 1) s += " " + id.digest;
  return s;
}

std::optional<PskIdentity> parse_identity(const std::string &text) {
  // "NVMe" version type hash, then the space-separated fields.
  if (text.size() < 9 || text.compare(0, 4, "NVMe") != 0 || text[8] != ' ') return std::nullopt;
  PskIdentity id;
  if (text[4] != '0' && text[4] != '1') return std::nullopt;
  id.version = static_cast<unsigned>(text[4] - '0');
  if (text[5] != 'R' && text[5] != 'G') return std::nullopt;
  id.generated = text[5] == 'G';
  if (text.compare(6, 2, "01") == 0)
    id.hash = PskHash::Sha256;
  else if (text.compare(6, 2, "02") == 0)
    id.hash = PskHash::Sha384;
  else
    return std::nullopt;
  std::istringstream fields(text.substr(9));
  std::string extra;
  fields >> id.hostnqn >> id.subnqn;
  if (id.version == 1) fields >> id.digest;
  fields >> extra;
  if (id.hostnqn.empty() || id.subnqn.empty() || (id.version == 1 && id.digest.empty()) || !extra.empty()) return std::nullopt;
  if (to_string(id) != text) return std::nullopt; // one space between fields, nothing else
  return id;
}

std::string psk_digest(PskHash h, const SecretBytes &retained, const std::string &hostnqn, const std::string &subnqn) {
  const std::string msg = hostnqn + " " + subnqn + " NVMe-over-Fabrics";
  const SecretBytes mac = dhchap::hmac(as_hash(h), retained.span(), {reinterpret_cast<const uint8_t *>(msg.data()), msg.size()});
  return base64(mac.span());
}

SecretBytes derive_tls_psk(const SecretBytes &retained, const PskIdentity &id, bool compat) {
  const std::string context =
      id.version == 0 ? to_string(id) : fmt::format("{:02} {}", static_cast<unsigned>(id.hash), id.digest);
  return expand_label(id.hash, retained, "nvme-tls-psk", context, compat);
}

SecretBytes traffic_key(PskHash h, const SecretBytes &secret, const std::string &label, size_t length) {
  return expand_label(h, secret, label, "", false, length, false);
}

namespace {
// The identity of an input PSK (retained, or generated) and its TLS PSK.
OfferedPsk offer(PskHash h, const SecretBytes &input, const std::string &hostnqn, const std::string &subnqn, unsigned version,
                 bool generated, bool compat) {
  OfferedPsk o;
  o.identity.version = version;
  o.identity.generated = generated;
  o.identity.hash = h;
  o.identity.hostnqn = hostnqn;
  o.identity.subnqn = subnqn;
  if (version == 1) o.identity.digest = psk_digest(h, input, hostnqn, subnqn);
  o.psk = derive_tls_psk(input, o.identity, compat);
  return o;
}
} // namespace

OfferedPsk host_psk(const ConfiguredPsk &k, const std::string &hostnqn, const std::string &subnqn, unsigned version,
                    bool compat) {
  return offer(psk_hash(k), retained_psk(k, hostnqn, compat), hostnqn, subnqn, version, false, compat);
}

OfferedPsk generated_offer(dhchap::Hash h, const SecretBytes &generated, const std::string &hostnqn, const std::string &subnqn) {
  if (h != dhchap::Hash::Sha256 && h != dhchap::Hash::Sha384)
    throw std::invalid_argument(
        fmt::format("no TLS PSK from a {} transaction: TLS 1.3 has suites for SHA-256 and SHA-384 only", dhchap::hash_name(h)));
  return offer(static_cast<PskHash>(h), generated, hostnqn, subnqn, 1, true, false);
}

} // namespace mpnvme::tls
