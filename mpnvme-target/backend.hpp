// SPDX-License-Identifier: GPL-2.0-only
// Namespace storage: RAM (anonymous mapping), null (writes discarded, reads
// zeroes) or a regular file / block device opened with O_DIRECT. RAM and
// null complete inline; file I/O is submitted to the connection's io_uring.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "lib/config/target_config.hpp"

namespace mpnvme::target {

class Backend {
public:
  static std::unique_ptr<Backend> open(const NamespaceConfig &cfg);
  ~Backend();
  Backend(const Backend &) = delete;
  Backend &operator=(const Backend &) = delete;

  Backing kind() const { return kind_; }
  uint64_t bytes() const { return bytes_; }
  uint32_t lba() const { return lba_; }
  uint64_t blocks() const { return bytes_ / lba_; }
  // Blocks lba .. lba+n-1 are all in the namespace (without overflow).
  bool contains(uint64_t lba, uint64_t n) const { return lba < blocks() && n <= blocks() - lba; }
  // RAM: the namespace's bytes; nullptr otherwise.
  uint8_t *memory() const { return mem_; }
  // File: the O_DIRECT descriptor; -1 otherwise.
  int fd() const { return fd_; }
  // Deallocate / zero a range inline (RAM and null; file goes through io_uring).
  void zero(uint64_t off, uint64_t len);

private:
  Backend() = default;
  Backing kind_ = Backing::Ram;
  uint64_t bytes_ = 0;
  uint32_t lba_ = 512;
  uint8_t *mem_ = nullptr;
  int fd_ = -1;
};

} // namespace mpnvme::target
