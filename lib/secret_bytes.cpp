// SPDX-License-Identifier: GPL-2.0-only
#include "secret_bytes.hpp"

#include <openssl/crypto.h>

namespace mpnvme {

SecretBytes &SecretBytes::operator=(const SecretBytes &o) {
  if (this != &o) {
    wipe();
    b_ = o.b_;
  }
  return *this;
}

SecretBytes &SecretBytes::operator=(SecretBytes &&o) noexcept {
  if (this != &o) {
    wipe();
    b_ = std::move(o.b_);
  }
  return *this;
}

SecretBytes::~SecretBytes() { wipe(); }

void SecretBytes::wipe() {
  if (!b_.empty()) OPENSSL_cleanse(b_.data(), b_.size());
}

bool SecretBytes::operator==(const SecretBytes &o) const {
  return b_.size() == o.b_.size() && CRYPTO_memcmp(b_.data(), o.b_.data(), b_.size()) == 0;
}

} // namespace mpnvme
