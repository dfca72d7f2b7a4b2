// SPDX-License-Identifier: GPL-2.0-only
// The bytes RAM namespaces may have together (--max-ram). A RAM namespace
// commits memory only where hosts write, so a target may start with more
// than it can hold and be killed by the kernel when hosts fill it; the
// budget refuses that at the configuration instead. Bytes are taken before
// a namespace is mapped (a refusal allocates nothing) and given back when
// the subsystem holding them goes, after its last controller.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace mpnvme::target {

// The default --max-ram: half of the memory this process may have (the
// machine's MemTotal, or its cgroup's memory.max when lower), as tmpfs and
// so /dev/shm, where nvmet's RAM namespaces live (toolkit/nvmet), are
// sized by default. Fixed by the machine, not by what runs beside at the
// moment of a start.
uint64_t default_max_ram();

class RamBudget;

// Bytes taken from a budget, given back when dropped.
class RamGrant {
public:
  RamGrant() = default;
  RamGrant(RamGrant &&o) noexcept : held_(std::move(o.held_)), bytes_(o.bytes_) { o.bytes_ = 0; }
  RamGrant &operator=(RamGrant &&o) noexcept;
  RamGrant(const RamGrant &) = delete;
  RamGrant &operator=(const RamGrant &) = delete;
  ~RamGrant() { release(); }
  uint64_t bytes() const { return bytes_; }

private:
  friend class RamBudget;
  RamGrant(std::shared_ptr<std::atomic<uint64_t>> held, uint64_t bytes) : held_(std::move(held)), bytes_(bytes) {}
  void release();
  // Shared with the budget: a subsystem a controller keeps alive may
  // outlive the registry that made it.
  std::shared_ptr<std::atomic<uint64_t>> held_;
  uint64_t bytes_ = 0;
};

class RamBudget {
public:
  explicit RamBudget(uint64_t limit) : limit_(limit) {}
  // `bytes` for `what` (a subsystem's NQN); throws LimitReached naming
  // --max-ram, the request and what is left. Lock-free: the control
  // socket's thread takes, whichever event loop drops a subsystem's last
  // controller gives back.
  RamGrant take(uint64_t bytes, const std::string &what);
  uint64_t held() const { return held_->load(); }
  uint64_t limit() const { return limit_; }

private:
  const uint64_t limit_;
  std::shared_ptr<std::atomic<uint64_t>> held_ = std::make_shared<std::atomic<uint64_t>>(0);
};

} // namespace mpnvme::target
