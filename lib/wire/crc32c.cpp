// SPDX-License-Identifier: GPL-2.0-only
#include "lib/wire/crc32c.hpp"

#include <isa-l/crc.h>

namespace mpnvme {

uint32_t crc32c_update(uint32_t running, const void *data, size_t len) {
  if (len == 0) return running;
  // ISA-L takes a non-const pointer but does not write through it.
  return crc32_iscsi(static_cast<unsigned char *>(const_cast<void *>(data)), static_cast<int>(len), running);
}

} // namespace mpnvme
