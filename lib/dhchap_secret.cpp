// SPDX-License-Identifier: GPL-2.0-only
#include "dhchap_secret.hpp"

#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <isa-l/crc.h>
#include <openssl/evp.h>
#include <stdexcept>
#include <sys/stat.h>

#include "log.hpp"

namespace mpnvme::dhchap {

namespace {
constexpr char kPrefix[] = "DHHC-1:";
constexpr char kSuffix[] = "NVMe-over-Fabrics";

std::invalid_argument bad(const std::string &what, const std::string &why) {
  return std::invalid_argument(fmt::format("{}: {}", what, why));
}
} // namespace

Secret parse_secret(const std::string &text, const std::string &what) {
  const std::string form = "expected DHHC-1:NN:BASE64: as nvme gen-dhchap-key prints it";
  if (text.compare(0, sizeof kPrefix - 1, kPrefix) != 0 || text.size() < 11 || text[9] != ':')
    throw bad(what, "not a DH-HMAC-CHAP secret (" + form + ")");
  const std::string nn = text.substr(7, 2);
  if (nn != "00" && nn != "01" && nn != "02" && nn != "03")
    throw bad(what, fmt::format("unknown key transformation {} (00 none, 01 SHA-256, 02 SHA-384, 03 SHA-512)", nn));
  std::string b64 = text.substr(10);
  if (!b64.empty() && b64.back() == ':') b64.pop_back();
  if (b64.empty() || b64.size() % 4 ||
      b64.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != std::string::npos)
    throw bad(what, "the key is not base64 (" + form + ")");
  const size_t pad = b64.size() - b64.find_last_not_of('=') - 1;
  SecretBytes raw(b64.size() / 4 * 3);
  const int n = EVP_DecodeBlock(raw.data(), reinterpret_cast<const unsigned char *>(b64.data()), static_cast<int>(b64.size()));
  if (n < 0 || pad > 2) throw bad(what, "the key is not base64 (" + form + ")");
  const size_t len = static_cast<size_t>(n) - pad;
  if (len != 36 && len != 52 && len != 68)
    throw bad(what,
              fmt::format("a key of {} bytes; DH-HMAC-CHAP keys have 32, 48 or 64 (and a 4-byte CRC)", len >= 4 ? len - 4 : 0));
  const size_t key_len = len - 4;
  const uint32_t crc = crc32_gzip_refl(0, raw.data(), key_len);
  const uint32_t stored = raw.data()[key_len] | raw.data()[key_len + 1] << 8 | raw.data()[key_len + 2] << 16 |
                          static_cast<uint32_t>(raw.data()[key_len + 3]) << 24;
  if (crc != stored) throw bad(what, "the key's CRC does not match (a mistyped or truncated secret)");
  Secret s;
  s.transform = static_cast<uint8_t>(nn[1] - '0');
  if (s.transform && key_len != hash_len(*hash_from_id(s.transform)))
    throw bad(what, fmt::format("transformation {} needs a {}-byte key, this one has {}", nn,
                                hash_len(*hash_from_id(s.transform)), key_len));
  s.key = SecretBytes(std::span<const uint8_t>(raw.data(), key_len));
  return s;
}

std::string format_secret(const Secret &s) {
  SecretBytes raw(s.key.size() + 4);
  std::copy(s.key.data(), s.key.data() + s.key.size(), raw.data());
  const uint32_t crc = crc32_gzip_refl(0, s.key.data(), s.key.size());
  for (int i = 0; i < 4; i++)
    raw.data()[s.key.size() + static_cast<size_t>(i)] = static_cast<uint8_t>(crc >> (8 * i));
  std::string b64(((raw.size() + 2) / 3) * 4 + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char *>(b64.data()), raw.data(), static_cast<int>(raw.size()));
  b64.resize(static_cast<size_t>(n));
  return fmt::format("DHHC-1:0{}:{}:", s.transform, b64);
}

SecretBytes transformed_key(const Secret &s, const std::string &nqn) {
  if (!s.transform) return s.key;
  std::vector<uint8_t> data(nqn.begin(), nqn.end());
  data.insert(data.end(), kSuffix, kSuffix + sizeof kSuffix - 1);
  return hmac(*hash_from_id(s.transform), s.key.span(), data);
}

Secret read_secret_file(const std::string &path, const std::string &what) {
  std::ifstream f(path);
  struct stat st {};
  if (!f || ::stat(path.c_str(), &st) != 0) throw bad(what, fmt::format("cannot read {}: {}", path, strerror(errno)));
  if (st.st_mode & (S_IRGRP | S_IROTH)) log().warn("{}: {} can be read by other users (chmod 600 it)", what, path);
  std::string line;
  std::getline(f, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
    line.pop_back();
  const Secret s = parse_secret(line, fmt::format("{} ({})", what, path));
  OPENSSL_cleanse(line.data(), line.size());
  return s;
}

} // namespace mpnvme::dhchap
