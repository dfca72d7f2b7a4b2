// SPDX-License-Identifier: GPL-2.0-only
#include "lib/crypto/dhchap_crypto.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/dh.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <stdexcept>

namespace mpnvme::dhchap {

namespace {

// The reason OpenSSL gave for the last failure, for the message.
std::runtime_error ssl_error(const char *what) {
  const unsigned long e = ERR_get_error();
  char buf[256] = "no reason given";
  if (e) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return std::runtime_error(fmt::format("{}: {}", what, buf));
}

// OpenSSL's names of the groups, which are RFC 7919's.
const char *ossl_group(DhGroup g) {
  switch (g) {
  case DhGroup::Ffdhe2048: return "ffdhe2048";
  case DhGroup::Ffdhe3072: return "ffdhe3072";
  case DhGroup::Ffdhe4096: return "ffdhe4096";
  case DhGroup::Ffdhe6144: return "ffdhe6144";
  case DhGroup::Ffdhe8192: return "ffdhe8192";
  case DhGroup::Null: break;
  }
  throw std::invalid_argument("the null DH group has no key");
}

struct CtxFree {
  void operator()(EVP_PKEY_CTX *c) const { EVP_PKEY_CTX_free(c); }
  void operator()(EVP_PKEY *k) const { EVP_PKEY_free(k); }
  void operator()(BIGNUM *b) const { BN_clear_free(b); }
  void operator()(OSSL_PARAM_BLD *b) const { OSSL_PARAM_BLD_free(b); }
  void operator()(OSSL_PARAM *p) const { OSSL_PARAM_free(p); }
};
template <typename T> using Owned = std::unique_ptr<T, CtxFree>;

} // namespace

std::string hash_name(Hash h) {
  switch (h) {
  case Hash::Sha256: return "hmac(sha256)";
  case Hash::Sha384: return "hmac(sha384)";
  case Hash::Sha512: return "hmac(sha512)";
  }
  return "?";
}

std::string dhgroup_name(DhGroup g) { return g == DhGroup::Null ? "null" : ossl_group(g); }

std::optional<Hash> hash_from_id(uint8_t id) {
  for (Hash h : kHashes)
    if (static_cast<uint8_t>(h) == id) return h;
  return std::nullopt;
}

std::optional<DhGroup> dhgroup_from_id(uint8_t id) {
  for (DhGroup g : kDhGroups)
    if (static_cast<uint8_t>(g) == id) return g;
  return std::nullopt;
}

std::optional<Hash> hash_from_name(const std::string &s) {
  for (Hash h : kHashes) {
    const std::string n = hash_name(h);                 // hmac(sha256)
    const std::string bare = n.substr(5, n.size() - 6); // sha256
    if (s == n || s == bare || s == std::to_string(static_cast<unsigned>(h))) return h;
  }
  return std::nullopt;
}

std::optional<DhGroup> dhgroup_from_name(const std::string &s) {
  for (DhGroup g : kDhGroups)
    if (s == dhgroup_name(g) || s == std::to_string(static_cast<unsigned>(g))) return g;
  return std::nullopt;
}

namespace {
template <typename T, typename From>
std::vector<T> name_list(const std::string &v, const std::string &option, From from, const char *what, const char *names) {
  std::vector<T> out;
  size_t start = 0;
  while (start <= v.size()) {
    const size_t comma = std::min(v.find(',', start), v.size());
    const std::string item = v.substr(start, comma - start);
    const auto got = from(item);
    if (!got) throw std::invalid_argument(fmt::format("{}: '{}' is not {} (accepted: {})", option, item, what, names));
    if (std::find(out.begin(), out.end(), *got) == out.end()) out.push_back(*got);
    start = comma + 1;
  }
  return out;
}
} // namespace

std::vector<Hash> parse_hash_list(const std::string &v, const std::string &option) {
  if (v.empty()) return {std::begin(kHashes), std::end(kHashes)};
  return name_list<Hash>(v, option, hash_from_name, "a hash function", "sha256, sha384, sha512, or hmac(sha256) ...");
}

std::vector<DhGroup> parse_dhgroup_list(const std::string &v, const std::string &option) {
  if (v.empty()) return {std::begin(kDhGroups), std::end(kDhGroups)};
  return name_list<DhGroup>(v, option, dhgroup_from_name, "a DH group",
                            "null, ffdhe2048, ffdhe3072, ffdhe4096, ffdhe6144, ffdhe8192");
}

const EVP_MD *evp_md(Hash h) {
  switch (h) {
  case Hash::Sha256: return EVP_sha256();
  case Hash::Sha384: return EVP_sha384();
  case Hash::Sha512: return EVP_sha512();
  }
  throw std::invalid_argument("unknown DH-HMAC-CHAP hash");
}

size_t hash_len(Hash h) { return static_cast<size_t>(EVP_MD_get_size(evp_md(h))); }

size_t dhgroup_value_len(DhGroup g) {
  switch (g) {
  case DhGroup::Null: return 0;
  case DhGroup::Ffdhe2048: return 256;
  case DhGroup::Ffdhe3072: return 384;
  case DhGroup::Ffdhe4096: return 512;
  case DhGroup::Ffdhe6144: return 768;
  case DhGroup::Ffdhe8192: return 1024;
  }
  return 0;
}

SecretBytes digest(Hash h, std::span<const uint8_t> data) {
  SecretBytes out(hash_len(h));
  unsigned n = 0;
  if (!EVP_Digest(data.data(), data.size(), out.data(), &n, evp_md(h), nullptr)) throw ssl_error("digest");
  return out;
}

SecretBytes hmac(Hash h, std::span<const uint8_t> key, std::span<const uint8_t> data) {
  SecretBytes out(hash_len(h));
  unsigned n = 0;
  if (!HMAC(evp_md(h), key.data(), static_cast<int>(key.size()), data.data(), data.size(), out.data(), &n))
    throw ssl_error("HMAC");
  return out;
}

void random_bytes(uint8_t *out, size_t n) {
#ifdef MPNVME_FUZZING
  // The fuzz build's challenges and sequence numbers are known, so that its
  // seeds can carry a right response and the fuzzer reaches what comes
  // after a successful authentication. Never in a program.
  std::memset(out, 0x5a, n);
  return;
#endif
  if (RAND_bytes(out, static_cast<int>(n)) != 1) throw ssl_error("random bytes");
}

struct DhKey::Pkey {
  Owned<EVP_PKEY> k;
};

DhKey::DhKey(DhGroup g) : group_(g), key_(std::make_unique<Pkey>()) {
  Owned<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_from_name(nullptr, "DH", nullptr));
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) <= 0) throw ssl_error("DH key generation");
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, const_cast<char *>(ossl_group(g)), 0),
                               OSSL_PARAM_construct_end()};
  EVP_PKEY *k = nullptr;
  if (EVP_PKEY_CTX_set_params(ctx.get(), params) <= 0 || EVP_PKEY_generate(ctx.get(), &k) <= 0)
    throw ssl_error(fmt::format("{} key generation", ossl_group(g)).c_str());
  key_->k.reset(k);
}

DhKey::~DhKey() = default;

std::vector<uint8_t> DhKey::public_value() const {
  BIGNUM *raw = nullptr;
  if (!EVP_PKEY_get_bn_param(key_->k.get(), OSSL_PKEY_PARAM_PUB_KEY, &raw)) throw ssl_error("DH public value");
  Owned<BIGNUM> pub(raw);
  std::vector<uint8_t> out(dhgroup_value_len(group_));
  if (BN_bn2binpad(pub.get(), out.data(), static_cast<int>(out.size())) < 0) throw ssl_error("DH public value");
  return out;
}

SecretBytes DhKey::shared_secret(std::span<const uint8_t> peer) const {
  const size_t len = dhgroup_value_len(group_);
  if (peer.size() != len)
    throw std::runtime_error(fmt::format("the peer's {} value has {} bytes, not {}", ossl_group(group_), peer.size(), len));
  Owned<BIGNUM> pub(BN_bin2bn(peer.data(), static_cast<int>(peer.size()), nullptr));
  Owned<OSSL_PARAM_BLD> bld(OSSL_PARAM_BLD_new());
  if (!pub || !bld || !OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, ossl_group(group_), 0) ||
      !OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, pub.get()))
    throw ssl_error("DH peer value");
  Owned<OSSL_PARAM> params(OSSL_PARAM_BLD_to_param(bld.get()));
  Owned<EVP_PKEY_CTX> from(EVP_PKEY_CTX_new_from_name(nullptr, "DH", nullptr));
  EVP_PKEY *raw_peer = nullptr;
  if (!params || !from || EVP_PKEY_fromdata_init(from.get()) <= 0 ||
      EVP_PKEY_fromdata(from.get(), &raw_peer, EVP_PKEY_PUBLIC_KEY, params.get()) <= 0)
    throw ssl_error("DH peer value");
  Owned<EVP_PKEY> peer_key(raw_peer);
  Owned<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, key_->k.get(), nullptr));
  // Validate the peer's value (1 < y < p-1) before using it: set_peer_ex
  // with validation, and the secret padded to the prime's size as nvmet's.
  size_t n = len;
  SecretBytes out(len);
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) <= 0 || EVP_PKEY_derive_set_peer_ex(ctx.get(), peer_key.get(), 1) <= 0)
    throw ssl_error(fmt::format("the peer's {} value", ossl_group(group_)).c_str());
  if (EVP_PKEY_CTX_set_dh_pad(ctx.get(), 1) <= 0 || EVP_PKEY_derive(ctx.get(), out.data(), &n) <= 0 || n != len)
    throw ssl_error("DH shared secret");
  return out;
}

} // namespace mpnvme::dhchap
