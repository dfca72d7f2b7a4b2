// SPDX-License-Identifier: GPL-2.0-only
// DH-HMAC-CHAP secrets in the NVMe representation nvme-cli's gen-dhchap-key
// prints and the Linux host and nvmet read: "DHHC-1:NN:BASE64:", the base64
// of the key (32, 48 or 64 bytes) and its CRC-32, NN the hash the key is
// transformed with before use (00: none, 01..03: SHA-256/384/512). Errors
// say what is wrong with a secret, never the secret.
#pragma once
#include <string>

#include "lib/crypto/dhchap_crypto.hpp"

namespace mpnvme::dhchap {

struct Secret {
  uint8_t transform = 0; // NN
  SecretBytes key;
  bool operator==(const Secret &o) const { return transform == o.transform && key == o.key; }
};

// `what` names the source in errors (an option, a file, a host entry).
Secret parse_secret(const std::string &text, const std::string &what);

// The DHHC-1 representation of a secret (for nvmet's configfs and the
// kernel host, which take the text).
std::string format_secret(const Secret &s);

// The key as the protocol uses it: HMAC-NN(key, nqn || "NVMe-over-Fabrics")
// for NN != 00 (the host key with the host NQN, the controller key with
// the subsystem NQN), else the key itself.
SecretBytes transformed_key(const Secret &s, const std::string &nqn);

// The secret of a file (its first line), as dhchap_secret_file= and
// @FILE read it; a file others may read gets a warning in the log.
Secret read_secret_file(const std::string &path, const std::string &what);

} // namespace mpnvme::dhchap
