// SPDX-License-Identifier: GPL-2.0-only
#include "lib/crypto/key_interchange.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <isa-l/crc.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/log.hpp"

namespace mpnvme {

namespace {
std::invalid_argument bad(const std::string &what, const std::string &why) {
  return std::invalid_argument(fmt::format("{}: {}", what, why));
}
constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
} // namespace

InterchangeKey decode_interchange(const std::string &text, const InterchangeFormat &f, const std::string &what) {
  const std::string form = fmt::format("expected {}", f.example);
  const size_t plen = std::strlen(f.prefix);
  if (text.compare(0, plen, f.prefix) != 0 || text.size() < plen + 4 || text[plen + 2] != ':')
    throw bad(what, fmt::format("not a {} ({})", f.kind, form));
  const std::string nn = text.substr(plen, 2);
  if (nn[0] != '0' || nn[1] < '0' || nn[1] > '0' + f.max_nn)
    throw bad(what, fmt::format("unknown key transformation {} ({})", nn, f.nn_names));
  std::string b64 = text.substr(plen + 3);
  if (!b64.empty() && b64.back() == ':') b64.pop_back();
  if (b64.empty() || b64.size() % 4 || b64.find_first_not_of(kBase64) != std::string::npos)
    throw bad(what, "the key is not base64 (" + form + ")");
  const size_t pad = b64.size() - b64.find_last_not_of('=') - 1;
  SecretBytes raw(b64.size() / 4 * 3);
  const int n = EVP_DecodeBlock(raw.data(), reinterpret_cast<const unsigned char *>(b64.data()), static_cast<int>(b64.size()));
  OPENSSL_cleanse(b64.data(), b64.size());
  if (n < 0 || pad > 2) throw bad(what, "the key is not base64 (" + form + ")");
  const size_t len = static_cast<size_t>(n) - pad;
  const size_t key_len = len >= 4 ? len - 4 : 0;
  if (!key_len || std::find(f.key_lengths.begin(), f.key_lengths.end(), key_len) == f.key_lengths.end()) {
    std::string lengths;
    for (size_t l : f.key_lengths)
      if (l) lengths += fmt::format("{}{}", lengths.empty() ? "" : " or ", l);
    throw bad(what, fmt::format("a key of {} bytes; a {} has {} (and a 4-byte CRC)", key_len, f.kind, lengths));
  }
  const uint8_t *r = raw.data();
  const uint32_t stored = r[key_len] | r[key_len + 1] << 8 | r[key_len + 2] << 16 | static_cast<uint32_t>(r[key_len + 3]) << 24;
  if (crc32_gzip_refl(0, r, key_len) != stored) throw bad(what, "the key's CRC does not match (a mistyped or truncated key)");
  return {static_cast<uint8_t>(nn[1] - '0'), SecretBytes(std::span<const uint8_t>(r, key_len))};
}

std::string encode_interchange(const InterchangeFormat &f, uint8_t nn, const SecretBytes &key) {
  SecretBytes raw(key.size() + 4);
  std::copy(key.data(), key.data() + key.size(), raw.data());
  const uint32_t crc = crc32_gzip_refl(0, key.data(), key.size());
  for (size_t i = 0; i < 4; i++)
    raw.data()[key.size() + i] = static_cast<uint8_t>(crc >> (8 * i));
  return fmt::format("{}{:02}:{}:", f.prefix, nn, base64(raw.span()));
}

std::string base64(std::span<const uint8_t> bytes) {
  std::string s(((bytes.size() + 2) / 3) * 4 + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char *>(s.data()), bytes.data(), static_cast<int>(bytes.size()));
  s.resize(static_cast<size_t>(n));
  return s;
}

// The key file is judged by the descriptor it is read from (no window in
// which another file could take its name): a file others may read holds a
// secret that is no longer one, so it is refused, not used with a warning.
// Only a regular file: a FIFO or a terminal would block the reader (the
// target's one control thread) until someone else wrote to it; opened
// without blocking so that even the open cannot wait for a writer.
std::string read_key_line(const std::string &path, const std::string &what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw bad(what, fmt::format("cannot read {}: {}", path, strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw bad(what, fmt::format("{} is not a regular file: refused", path));
  }
  if (st.st_mode & (S_IRGRP | S_IROTH)) {
    ::close(fd);
    throw bad(what, fmt::format("{} can be read by other users: refused (chmod 600 it)", path));
  }
  std::string text(4096, '\0'); // a key is one short line
  size_t got = 0;
  for (ssize_t n; got < text.size() && (n = ::read(fd, text.data() + got, text.size() - got)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      OPENSSL_cleanse(text.data(), text.size());
      throw bad(what, fmt::format("cannot read {}: {}", path, strerror(err)));
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  std::string line = text.substr(0, std::min(got, text.find('\n')));
  OPENSSL_cleanse(text.data(), text.size());
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
    line.pop_back();
  return line;
}

} // namespace mpnvme
