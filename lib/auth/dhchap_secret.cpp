// SPDX-License-Identifier: GPL-2.0-only
#include "lib/auth/dhchap_secret.hpp"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <stdexcept>

#include "lib/crypto/key_interchange.hpp"

namespace mpnvme::dhchap {

namespace {
constexpr char kSuffix[] = "NVMe-over-Fabrics";
const InterchangeFormat kDhchapFormat{"DHHC-1:", "DHHC-1:NN:BASE64: as nvme gen-dhchap-key prints it", "DH-HMAC-CHAP secret",
                                      3,         "00 none, 01 SHA-256, 02 SHA-384, 03 SHA-512",        {32, 48, 64}};
} // namespace

Secret parse_secret(const std::string &text, const std::string &what) {
  InterchangeKey k = decode_interchange(text, kDhchapFormat, what);
  if (k.nn && k.key.size() != hash_len(*hash_from_id(k.nn)))
    throw std::invalid_argument(fmt::format("{}: transformation 0{} needs a {}-byte key, this one has {}", what, k.nn,
                                            hash_len(*hash_from_id(k.nn)), k.key.size()));
  return {k.nn, std::move(k.key)};
}

std::string format_secret(const Secret &s) { return encode_interchange(kDhchapFormat, s.transform, s.key); }

SecretBytes transformed_key(const Secret &s, const std::string &nqn) {
  if (!s.transform) return s.key;
  std::vector<uint8_t> data(nqn.begin(), nqn.end());
  data.insert(data.end(), kSuffix, kSuffix + sizeof kSuffix - 1);
  return hmac(*hash_from_id(s.transform), s.key.span(), data);
}

Secret read_secret_file(const std::string &path, const std::string &what) {
  std::string line = read_key_line(path, what);
  const Secret s = parse_secret(line, fmt::format("{} ({})", what, path));
  OPENSSL_cleanse(line.data(), line.size());
  return s;
}

} // namespace mpnvme::dhchap
