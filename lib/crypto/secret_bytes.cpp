// SPDX-License-Identifier: GPL-2.0-only
#include "lib/crypto/secret_bytes.hpp"

#include <new>
#include <openssl/crypto.h>
#include <sys/mman.h>
#include <unistd.h>

namespace mpnvme {

namespace {
size_t pages(size_t n) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}
} // namespace

void *secret_pages(size_t bytes) {
  void *p = mmap(nullptr, pages(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  madvise(p, pages(bytes), MADV_DONTDUMP); // best effort: a kernel without it still runs
  return p;
}

void free_secret_pages(void *p, size_t bytes) noexcept { munmap(p, pages(bytes)); }

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
