// SPDX-License-Identifier: GPL-2.0-only
// The text form NVMe gives its keys, shared by DH-HMAC-CHAP secrets
// ("DHHC-1:NN:BASE64:", nvme gen-dhchap-key) and TLS PSKs
// ("NVMeTLSkey-1:NN:BASE64:", nvme gen-tls-key): a prefix, a two-digit
// transformation, and the base64 of the key followed by its CRC-32 (the
// zlib one, little endian). Errors say what is wrong with a key, never
// the key.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "lib/crypto/secret_bytes.hpp"

namespace mpnvme {

struct InterchangeFormat {
  const char *prefix;                // "DHHC-1:"
  const char *example;               // "DHHC-1:NN:BASE64: as nvme gen-dhchap-key prints it"
  const char *kind;                  // "DH-HMAC-CHAP secret"
  uint8_t max_nn;                    // the highest transformation the format knows
  const char *nn_names;              // "00 none, 01 SHA-256, ..."
  std::array<size_t, 3> key_lengths; // 0: unused
};

struct InterchangeKey {
  uint8_t nn = 0;
  SecretBytes key;
};

// `what` names the source in errors (an option, a file, a host entry).
// Throws std::invalid_argument.
InterchangeKey decode_interchange(const std::string &text, const InterchangeFormat &f, const std::string &what);
std::string encode_interchange(const InterchangeFormat &f, uint8_t nn, const SecretBytes &key);
// Standard base64 with padding (OpenSSL's), as these formats and the TLS
// PSK identity's digest use it.
std::string base64(std::span<const uint8_t> bytes);

// The first line of a key file, as the *_file= options and @FILE read it,
// without trailing blanks; a file others may read gets a warning in the
// log. The caller wipes the line once decoded.
std::string read_key_line(const std::string &path, const std::string &what);

} // namespace mpnvme
