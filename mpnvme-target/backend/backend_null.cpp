// SPDX-License-Identifier: GPL-2.0-only
// null:SIZE: writes are discarded and reads return zeroes, inline: the
// target's own cost without storage (nvmet's null_blk counterpart).
#include <cstring>

#include "lib/wire/nvme.hpp"
#include "mpnvme-target/backend/backend.hpp"

namespace mpnvme::target {
namespace {

class NullBackend final : public Backend {
public:
  explicit NullBackend(const NamespaceConfig &cfg) : Backend(cfg.size, cfg.lba) {}

  bool deallocated_reads_zero() const override { return true; }
  void read(uint64_t, uint32_t len, BackendCompletion &done) override {
    uint8_t *buf = done.buffer(len);
    if (!buf) return done.complete(nvme::kStatusInternal);
    std::memset(buf, 0, len);
    done.send_data(buf, len);
    done.complete(0);
  }
  void write(uint64_t, uint32_t, uint8_t *, BackendCompletion &done) override { done.complete(0); }
  void flush(BackendCompletion &done) override { done.complete(0); }
  void write_zeroes(uint64_t, uint64_t, BackendCompletion &done) override { done.complete(0); }
  void deallocate(std::span<const ByteRange>, BackendCompletion &done) override { done.complete(0); }
};

} // namespace

std::unique_ptr<Backend> open_null_backend(const NamespaceConfig &cfg) { return std::make_unique<NullBackend>(cfg); }

} // namespace mpnvme::target
