// SPDX-License-Identifier: GPL-2.0-only
// ram:SIZE: the namespace is an anonymous mapping. Reads are sent straight
// from it, writes received straight into it (write_destination); every
// command completes inline.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <stdexcept>
#include <sys/mman.h>

#include "lib/base/log.hpp"
#include "mpnvme-target/backend/backend.hpp"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 // Linux 5.14
#endif

namespace mpnvme::target {
namespace {

// A block nobody has written reads from the kernel's zero page, but only
// after a page fault on its first touch, and that fault came in the
// sendmsg that copies the block out, on the command's path (the cost is
// in docs/measurements.md, "Where the target's time per command went").
// MADV_POPULATE_READ maps the zero page wherever nothing is written and
// commits no memory but page tables. Done before the
// target listens, so that it runs its first commands as its last, as
// SPDK's malloc bdev, whose memory is allocated and touched up front.
void map_for_reading(uint8_t *mem, size_t len, uint32_t nsid) {
  const auto start = std::chrono::steady_clock::now();
  if (madvise(mem, len, MADV_POPULATE_READ) != 0) { // an older kernel (EINVAL): mapped on first reads, as before
    log().debug("namespace {}: not mapped for reading at start: madvise: {}", nsid, strerror(errno));
    return;
  }
  log().debug("namespace {}: {} MiB mapped for reading in {} ms", nsid, len >> 20,
              std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
}

class RamBackend final : public Backend {
public:
  explicit RamBackend(const NamespaceConfig &cfg) : Backend(cfg.size, cfg.lba) {
    // MAP_NORESERVE: pages are only committed when written.
    void *m = mmap(nullptr, cfg.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
      throw std::runtime_error(fmt::format("namespace {} ({}): mmap: {}", cfg.nsid, cfg.spec(), strerror(errno)));
    mem_ = static_cast<uint8_t *>(m);
    map_for_reading(mem_, cfg.size, cfg.nsid);
  }
  ~RamBackend() override { munmap(mem_, bytes()); }

  bool deallocated_reads_zero() const override { return true; }
  uint8_t *write_destination(uint64_t off, uint64_t) override { return mem_ + off; }
  void read(uint64_t off, uint32_t len, BackendCompletion &done) override {
    done.send_data(mem_ + off, len);
    done.complete(0);
  }
  void write(uint64_t off, uint32_t len, uint8_t *data, BackendCompletion &done) override {
    if (data != mem_ + off) std::memcpy(mem_ + off, data, len); // in-capsule data
    done.complete(0);
  }
  void flush(BackendCompletion &done) override { done.complete(0); }
  void write_zeroes(uint64_t off, uint64_t len, BackendCompletion &done) override {
    zero(off, len);
    done.complete(0);
  }
  void deallocate(std::span<const ByteRange> ranges, BackendCompletion &done) override {
    for (const ByteRange &r : ranges)
      zero(r.off, r.len);
    done.complete(0);
  }

private:
  // Whole pages go back to the kernel (and read as zeroes); edges are cleared.
  void zero(uint64_t off, uint64_t len) {
    const uint64_t page = 4096;
    const uint64_t a = (off + page - 1) / page * page, e = (off + len) / page * page;
    if (a < e) {
      std::memset(mem_ + off, 0, a - off);
      madvise(mem_ + a, e - a, MADV_DONTNEED);
      std::memset(mem_ + e, 0, off + len - e);
    } else {
      std::memset(mem_ + off, 0, len);
    }
  }
  uint8_t *mem_ = nullptr;
};

} // namespace

std::unique_ptr<Backend> open_ram_backend(const NamespaceConfig &cfg) { return std::make_unique<RamBackend>(cfg); }

} // namespace mpnvme::target
