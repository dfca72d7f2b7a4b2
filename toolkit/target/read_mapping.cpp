// SPDX-License-Identifier: GPL-2.0-only
#include "read_mapping.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sys/mman.h>
#include <sys/resource.h>

#include "log.hpp"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 // Linux 5.14
#endif

namespace mpnvme::target {

ReadMapping::ReadMapping(uint8_t *mem, size_t len, uint32_t nsid) : thread_(map, mem, len, nsid) {}

void ReadMapping::map(std::stop_token stop, uint8_t *mem, size_t len, uint32_t nsid) {
  // Below the event loops, which serve commands while this runs beside
  // them (on Linux the nice value is the calling thread's own).
  setpriority(PRIO_PROCESS, 0, 10);
  const auto start = std::chrono::steady_clock::now();
  constexpr size_t kChunk = 64 << 20; // a stop is noticed within one chunk (about 4 ms)
  for (size_t off = 0; off < len; off += kChunk) {
    if (stop.stop_requested()) return;
    if (madvise(mem + off, std::min(kChunk, len - off), MADV_POPULATE_READ) != 0) {
      // An older kernel (EINVAL): blocks are mapped on their first read, as before.
      log().debug("namespace {}: not mapped for reading ahead: madvise: {}", nsid, strerror(errno));
      return;
    }
  }
  log().debug("namespace {}: {} MiB mapped for reading in {} ms", nsid, len >> 20,
              std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
}

} // namespace mpnvme::target
