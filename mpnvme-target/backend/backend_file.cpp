// SPDX-License-Identifier: GPL-2.0-only
// file:PATH or a block device: opened with O_DIRECT, every command an
// operation on the connection's io_uring (read, write, fsync, fallocate).
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/fs.h>
#include <stdexcept>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/wire/nvme.hpp"
#include "mpnvme-target/backend/backend.hpp"

namespace mpnvme::target {
namespace {

// The descriptor and usable size (whole blocks) of a file or block device.
std::pair<int, uint64_t> open_direct(const NamespaceConfig &cfg) {
  const int fd = ::open(cfg.path.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("namespace {}: open {} (O_DIRECT): {}", cfg.nsid, cfg.path, strerror(errno)));
  struct stat st {};
  fstat(fd, &st);
  uint64_t bytes = 0;
  if (S_ISBLK(st.st_mode)) {
    ioctl(fd, BLKGETSIZE64, &bytes);
  } else if (S_ISREG(st.st_mode)) {
    bytes = static_cast<uint64_t>(st.st_size);
  } else {
    ::close(fd);
    throw std::runtime_error(fmt::format("namespace {}: {} is neither a regular file nor a block device", cfg.nsid, cfg.path));
  }
  bytes -= bytes % cfg.lba;
  if (!bytes) {
    ::close(fd);
    throw std::runtime_error(fmt::format("namespace {}: {} is smaller than one {}-byte block", cfg.nsid, cfg.path, cfg.lba));
  }
  return {fd, bytes};
}

class FileBackend final : public Backend {
public:
  FileBackend(const NamespaceConfig &cfg, std::pair<int, uint64_t> opened) : Backend(opened.second, cfg.lba), fd_(opened.first) {}
  ~FileBackend() override { ::close(fd_); }

  // Deallocate punches holes, which a block device need not read as zeroes.
  bool deallocated_reads_zero() const override { return false; }
  void read(uint64_t off, uint32_t len, BackendCompletion &done) override {
    uint8_t *buf = done.buffer(len);
    if (!buf) return done.complete(nvme::kStatusInternal);
    done.submit(FileOp::Read, fd_, buf, len, off);
  }
  void write(uint64_t off, uint32_t len, uint8_t *data, BackendCompletion &done) override {
    done.submit(FileOp::Write, fd_, data, len, off);
  }
  void flush(BackendCompletion &done) override { done.submit(FileOp::Fsync, fd_, nullptr, 0, 0); }
  void write_zeroes(uint64_t off, uint64_t len, BackendCompletion &done) override {
    done.submit(FileOp::WriteZeroes, fd_, nullptr, len, off);
  }
  void deallocate(std::span<const ByteRange> ranges, BackendCompletion &done) override {
    // One range per file operation keeps the bookkeeping simple; hosts
    // (Linux, fio) send one range per command.
    if (ranges.size() != 1)
      return done.refuse(nvme::kStatusInvalidField,
                         fmt::format("{} ranges in one deallocate on a file namespace", ranges.size()));
    done.submit(FileOp::Deallocate, fd_, nullptr, ranges[0].len, ranges[0].off);
  }

private:
  const int fd_;
};

} // namespace

std::unique_ptr<Backend> open_file_backend(const NamespaceConfig &cfg) {
  return std::make_unique<FileBackend>(cfg, open_direct(cfg));
}

} // namespace mpnvme::target
