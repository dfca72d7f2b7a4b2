// SPDX-License-Identifier: GPL-2.0-only
#include "backend.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/fs.h>
#include <stdexcept>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mpnvme::target {

std::unique_ptr<Backend> Backend::open(const NamespaceConfig &cfg) {
  std::unique_ptr<Backend> b(new Backend);
  b->kind_ = cfg.backing;
  b->lba_ = cfg.lba;
  switch (cfg.backing) {
  case Backing::Null: b->bytes_ = cfg.size; break;
  case Backing::Ram: {
    b->bytes_ = cfg.size;
    // MAP_NORESERVE: pages are only committed when written.
    void *m = mmap(nullptr, cfg.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
      throw std::runtime_error(fmt::format("namespace {} ({}): mmap: {}", cfg.nsid, cfg.spec(), strerror(errno)));
    b->mem_ = static_cast<uint8_t *>(m);
    b->read_mapping_ = std::make_unique<ReadMapping>(b->mem_, cfg.size, cfg.nsid);
    break;
  }
  case Backing::File: {
    b->fd_ = ::open(cfg.path.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
    if (b->fd_ < 0)
      throw std::runtime_error(fmt::format("namespace {}: open {} (O_DIRECT): {}", cfg.nsid, cfg.path, strerror(errno)));
    struct stat st {};
    fstat(b->fd_, &st);
    if (S_ISBLK(st.st_mode)) {
      uint64_t sz = 0;
      ioctl(b->fd_, BLKGETSIZE64, &sz);
      b->bytes_ = sz;
    } else if (S_ISREG(st.st_mode)) {
      b->bytes_ = static_cast<uint64_t>(st.st_size);
    } else {
      throw std::runtime_error(fmt::format("namespace {}: {} is neither a regular file nor a block device", cfg.nsid, cfg.path));
    }
    b->bytes_ -= b->bytes_ % cfg.lba;
    if (!b->bytes_)
      throw std::runtime_error(fmt::format("namespace {}: {} is smaller than one {}-byte block", cfg.nsid, cfg.path, cfg.lba));
    break;
  }
  }
  return b;
}

Backend::~Backend() {
  read_mapping_.reset();
  if (mem_) munmap(mem_, bytes_);
  if (fd_ >= 0) ::close(fd_);
}

void Backend::zero(uint64_t off, uint64_t len) {
  if (kind_ != Backing::Ram) return;
  // Whole pages go back to the kernel (and read as zeroes); edges are cleared.
  const uint64_t page = 4096;
  uint64_t a = (off + page - 1) / page * page, e = (off + len) / page * page;
  if (a < e) {
    std::memset(mem_ + off, 0, a - off);
    madvise(mem_ + a, e - a, MADV_DONTNEED);
    std::memset(mem_ + e, 0, off + len - e);
  } else {
    std::memset(mem_ + off, 0, len);
  }
}

} // namespace mpnvme::target
