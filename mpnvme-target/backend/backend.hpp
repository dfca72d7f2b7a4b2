// SPDX-License-Identifier: GPL-2.0-only
// Namespace storage behind one interface, as SPDK's bdev layer: a backend
// knows its size and block size, says what Identify reports of it, and
// carries out read, write, flush, write zeroes and deallocate. It finishes
// each command through a BackendCompletion: at once (RAM and null answer
// inline) or by handing an operation to the connection's io_uring (file
// and block device), whose result the connection completes. A new backend
// is one file with its class and an open function, plus its line in
// backend_registry.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "lib/config/target_config.hpp"

namespace mpnvme::target {

// What the event loop does for a file backend (io_uring operations).
enum class FileOp : uint8_t { Read, Write, Fsync, Deallocate, WriteZeroes };

// How a backend finishes the command it was given (the connection's side).
class BackendCompletion {
public:
  // Done now with this NVMe status (0: success).
  virtual void complete(uint16_t status) = 0;
  // Done now with an error the host is told and the log explains.
  virtual void refuse(uint16_t status, const std::string &why) = 0;
  // A read's data, sent from here; `data` stays valid until it is sent.
  virtual void send_data(const uint8_t *data, uint32_t len) = 0;
  // The command's own buffer of at least `len` bytes; nullptr when there is
  // no memory for it.
  virtual uint8_t *buffer(uint32_t len) = 0;
  // Hand an operation to the event loop; the connection completes the
  // command when it is done.
  virtual void submit(FileOp op, int fd, uint8_t *buf, uint64_t len, uint64_t off) = 0;

protected:
  ~BackendCompletion() = default;
};

// A byte range of a deallocate.
struct ByteRange {
  uint64_t off, len;
};

class Backend {
public:
  virtual ~Backend() = default;
  Backend(const Backend &) = delete;
  Backend &operator=(const Backend &) = delete;

  uint64_t bytes() const { return bytes_; }
  uint32_t lba() const { return lba_; }
  uint64_t blocks() const { return bytes_ / lba_; }
  // Blocks lba .. lba+n-1 are all in the namespace (without overflow).
  bool contains(uint64_t lba, uint64_t n) const { return lba < blocks() && n <= blocks() - lba; }

  // Identify Namespace: deallocated blocks read as zeroes (DLFEAT).
  virtual bool deallocated_reads_zero() const = 0;
  // Where a write of [off, off+len) may be received straight into (RAM:
  // the namespace's memory, so the data is copied once); nullptr: into the
  // command's buffer.
  virtual uint8_t *write_destination(uint64_t off, uint64_t len) {
    (void)off, (void)len;
    return nullptr;
  }
  // The range is checked against the namespace before any of these.
  virtual void read(uint64_t off, uint32_t len, BackendCompletion &done) = 0;
  virtual void write(uint64_t off, uint32_t len, uint8_t *data, BackendCompletion &done) = 0;
  virtual void flush(BackendCompletion &done) = 0;
  virtual void write_zeroes(uint64_t off, uint64_t len, BackendCompletion &done) = 0;
  virtual void deallocate(std::span<const ByteRange> ranges, BackendCompletion &done) = 0;

protected:
  Backend(uint64_t bytes, uint32_t lba) : bytes_(bytes), lba_(lba) {}

private:
  const uint64_t bytes_;
  const uint32_t lba_;
};

// The backend a namespace's configuration names (backend_registry.cpp).
// Throws std::runtime_error naming the namespace.
std::unique_ptr<Backend> open_backend(const NamespaceConfig &cfg);

// Each backend's open function, listed in the registry.
std::unique_ptr<Backend> open_ram_backend(const NamespaceConfig &cfg);
std::unique_ptr<Backend> open_null_backend(const NamespaceConfig &cfg);
std::unique_ptr<Backend> open_file_backend(const NamespaceConfig &cfg);

} // namespace mpnvme::target
