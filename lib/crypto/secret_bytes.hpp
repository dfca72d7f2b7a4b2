// SPDX-License-Identifier: GPL-2.0-only
// Key material in memory: DH-HMAC-CHAP secrets and their derivations, TLS
// PSKs. Wiped when it goes, compared in constant time, never formatted.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace mpnvme {

// Memory for key material: whole pages of their own, marked so that a
// core dump leaves them out (MADV_DONTDUMP).
void *secret_pages(size_t bytes);
void free_secret_pages(void *p, size_t bytes) noexcept;

template <typename T> struct SecretAllocator {
  using value_type = T;
  SecretAllocator() = default;
  template <typename U> SecretAllocator(const SecretAllocator<U> &) {}
  T *allocate(size_t n) { return static_cast<T *>(secret_pages(n * sizeof(T))); }
  void deallocate(T *p, size_t n) noexcept { free_secret_pages(p, n * sizeof(T)); }
  template <typename U> bool operator==(const SecretAllocator<U> &) const { return true; }
};

// Bytes that hold key material: kept out of core dumps, wiped when they go.
class SecretBytes {
public:
  SecretBytes() = default;
  explicit SecretBytes(size_t n) : b_(n) {}
  SecretBytes(std::span<const uint8_t> s) : b_(s.begin(), s.end()) {}
  SecretBytes(const SecretBytes &) = default;
  SecretBytes(SecretBytes &&o) noexcept : b_(std::move(o.b_)) {}
  SecretBytes &operator=(const SecretBytes &o);
  SecretBytes &operator=(SecretBytes &&o) noexcept;
  ~SecretBytes();
  uint8_t *data() { return b_.data(); }
  const uint8_t *data() const { return b_.data(); }
  size_t size() const { return b_.size(); }
  bool empty() const { return b_.empty(); }
  std::span<const uint8_t> span() const { return {b_.data(), b_.size()}; }
  // Constant time: a response compared byte by byte would say how much of it matched.
  bool operator==(const SecretBytes &o) const;

private:
  void wipe();
  std::vector<uint8_t, SecretAllocator<uint8_t>> b_;
};

} // namespace mpnvme
