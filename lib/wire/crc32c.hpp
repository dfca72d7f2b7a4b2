// SPDX-License-Identifier: GPL-2.0-only
// CRC32C (Castagnoli) as NVMe/TCP digests use it: seed 0xFFFFFFFF, result
// inverted, stored little endian. Backed by ISA-L's crc32_iscsi.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mpnvme {

constexpr uint32_t kCrc32cSeed = 0xFFFFFFFFu;

// Running (not yet inverted) CRC over one more segment; start with kCrc32cSeed.
uint32_t crc32c_update(uint32_t running, const void *data, size_t len);
// Final digest value from a running CRC.
inline uint32_t crc32c_final(uint32_t running) { return running ^ 0xFFFFFFFFu; }
// Digest of one contiguous buffer.
inline uint32_t crc32c(const void *data, size_t len) { return crc32c_final(crc32c_update(kCrc32cSeed, data, len)); }

} // namespace mpnvme
