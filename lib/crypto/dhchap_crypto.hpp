// SPDX-License-Identifier: GPL-2.0-only
// The cryptography of NVMe in-band authentication (DH-HMAC-CHAP), all of
// it from OpenSSL 3: the hash functions and their HMACs, the RFC 7919
// FFDHE groups, and random bytes. Identifiers are the NVMe Base
// Specification's, as the Linux host and nvmet put them on the wire.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/crypto/secret_bytes.hpp"

struct evp_md_st; // OpenSSL's EVP_MD

namespace mpnvme::dhchap {

// Hash function identifiers (HMAC-SHA-2).
enum class Hash : uint8_t { Sha256 = 1, Sha384 = 2, Sha512 = 3 };
// Diffie-Hellman group identifiers: none, or an RFC 7919 FFDHE group.
enum class DhGroup : uint8_t { Null = 0, Ffdhe2048 = 1, Ffdhe3072 = 2, Ffdhe4096 = 3, Ffdhe6144 = 4, Ffdhe8192 = 5 };

constexpr Hash kHashes[] = {Hash::Sha256, Hash::Sha384, Hash::Sha512};
constexpr DhGroup kDhGroups[] = {DhGroup::Null,      DhGroup::Ffdhe2048, DhGroup::Ffdhe3072,
                                 DhGroup::Ffdhe4096, DhGroup::Ffdhe6144, DhGroup::Ffdhe8192};

// nvmet's and nvme-cli's names: hmac(sha256)/sha256, null/ffdhe2048.
std::string hash_name(Hash h);
std::string dhgroup_name(DhGroup g);
std::optional<Hash> hash_from_id(uint8_t id);
std::optional<DhGroup> dhgroup_from_id(uint8_t id);
// Accepts "sha256", "hmac(sha256)" and the identifier "1" (dhchap_hash=).
std::optional<Hash> hash_from_name(const std::string &s);
// Accepts "null", "ffdhe2048" and the identifier (dhchap_dhgroup=).
std::optional<DhGroup> dhgroup_from_name(const std::string &s);
// Comma-separated lists of those names, in their order without repeats
// (dhchap_hash=, --dhchap-dhgroup, ...); "" is every one. Throws
// std::invalid_argument naming `option` and the item.
std::vector<Hash> parse_hash_list(const std::string &list, const std::string &option);
std::vector<DhGroup> parse_dhgroup_list(const std::string &list, const std::string &option);
size_t hash_len(Hash h);
// The group's public value size in bytes (its prime's), 0 for Null.
size_t dhgroup_value_len(DhGroup g);

// OpenSSL's digest of a hash (TLS PSKs use the same SHA-2 functions).
const evp_md_st *evp_md(Hash h);
SecretBytes digest(Hash h, std::span<const uint8_t> data);
SecretBytes hmac(Hash h, std::span<const uint8_t> key, std::span<const uint8_t> data);
void random_bytes(uint8_t *out, size_t n);

// One side's ephemeral FFDHE key pair.
class DhKey {
public:
  explicit DhKey(DhGroup g); // generates the pair
  ~DhKey();
  DhKey(const DhKey &) = delete;
  DhKey &operator=(const DhKey &) = delete;
  // The public value, big-endian, padded to the group's size.
  std::vector<uint8_t> public_value() const;
  // The shared secret with the peer's public value, padded to the group's
  // size as the kernel computes it. Throws on a value outside the group
  // (too long, 0, 1, p-1 or above: a hostile or broken peer).
  SecretBytes shared_secret(std::span<const uint8_t> peer) const;

private:
  DhGroup group_;
  struct Pkey;
  std::unique_ptr<Pkey> key_;
};

} // namespace mpnvme::dhchap
