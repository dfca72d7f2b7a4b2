// SPDX-License-Identifier: GPL-2.0-only
// Maps a RAM namespace's pages for reading, in the background, once.
//
// A block nobody has written reads from the kernel's zero page, but only
// after a page fault on its first touch, and that fault lands in the
// sendmsg that copies the block out, on the command's path: 0.4 faults
// per command on a fresh 1 GiB namespace at QD1 (random 4 KiB reads),
// about 2 us each in a VM, and the QD1 p50 0.5 us (5 %) above the same
// target after a full read (bench notes in docs/design.md). SPDK's malloc
// bdev has its memory allocated and touched up front. MADV_POPULATE_READ
// maps the zero page wherever nothing was written yet, commits no memory
// (page tables: 2 MiB per GiB) and took 68 ms per GiB here; a thread of
// its own does it so that the target listens at once, whatever the size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <thread>

namespace mpnvme::target {

class ReadMapping {
public:
  // Starts mapping [mem, mem+len); nsid names it in the log.
  ReadMapping(uint8_t *mem, size_t len, uint32_t nsid);
  // Stops and waits: the memory may be unmapped afterwards.
  ~ReadMapping() = default;

private:
  static void map(std::stop_token stop, uint8_t *mem, size_t len, uint32_t nsid);
  std::jthread thread_;
};

} // namespace mpnvme::target
