// SPDX-License-Identifier: GPL-2.0-only
// Little-endian field access for NVMe/TCP PDUs and NVMe structures.
// The wire format is little endian; going through memcpy keeps unaligned
// access well defined and compiles to plain loads/stores on x86.
#pragma once
#include <cstdint>
#include <cstring>

namespace mpnvme::wire {

template <typename T> inline T get(const uint8_t *p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof v);
  return v; // host is little endian (checked below)
}
template <typename T> inline void put(uint8_t *p, size_t off, T v) { std::memcpy(p + off, &v, sizeof v); }

inline uint8_t get8(const uint8_t *p, size_t o) { return p[o]; }
inline uint16_t get16(const uint8_t *p, size_t o) { return get<uint16_t>(p, o); }
inline uint32_t get32(const uint8_t *p, size_t o) { return get<uint32_t>(p, o); }
inline uint64_t get64(const uint8_t *p, size_t o) { return get<uint64_t>(p, o); }
inline void put8(uint8_t *p, size_t o, uint8_t v) { p[o] = v; }
inline void put16(uint8_t *p, size_t o, uint16_t v) { put(p, o, v); }
inline void put32(uint8_t *p, size_t o, uint32_t v) { put(p, o, v); }
inline void put64(uint8_t *p, size_t o, uint64_t v) { put(p, o, v); }

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "mpnvme assumes a little-endian host");

} // namespace mpnvme::wire
