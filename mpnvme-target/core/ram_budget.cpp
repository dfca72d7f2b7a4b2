// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/core/ram_budget.hpp"

#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <sstream>

#include "lib/config/target_limits.hpp"

namespace mpnvme::target {

namespace {

// MemTotal from /proc/meminfo in bytes; 0 when it cannot be read.
uint64_t mem_total() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string key;
    uint64_t kib = 0;
    if (words >> key >> kib && key == "MemTotal:") return kib * 1024;
  }
  return 0;
}

// The lowest memory.max of this process's cgroup (v2) and the cgroups above
// it: a container's limit is often set on a parent.
uint64_t cgroup_memory_max() {
  uint64_t lowest = std::numeric_limits<uint64_t>::max();
  std::ifstream self("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(self, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty()) return lowest;
  for (;;) {
    std::ifstream max("/sys/fs/cgroup" + path + "/memory.max");
    uint64_t v = 0;
    if (max >> v && v < lowest) lowest = v; // "max" reads as no number
    if (path == "/" || path.empty()) break;
    const size_t slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return lowest;
}

} // namespace

uint64_t default_max_ram() {
  const uint64_t machine = std::min(mem_total(), cgroup_memory_max());
  return machine ? machine / 2 : std::numeric_limits<uint64_t>::max();
}

RamGrant &RamGrant::operator=(RamGrant &&o) noexcept {
  if (this != &o) {
    release();
    held_ = std::move(o.held_);
    bytes_ = o.bytes_;
    o.bytes_ = 0;
  }
  return *this;
}

void RamGrant::release() {
  if (held_ && bytes_) held_->fetch_sub(bytes_);
  bytes_ = 0;
}

RamGrant RamBudget::take(uint64_t bytes, const std::string &what) {
  if (bytes == 0) return {};
  uint64_t held = held_->load();
  do {
    if (bytes > limit_ - held)
      throw LimitReached(fmt::format("{}: RAM namespaces of {}: --max-ram {} leaves {} ({} held by RAM namespaces)", what,
                                     bytes_text(bytes), bytes_text(limit_), bytes_text(limit_ - held), bytes_text(held)));
  } while (!held_->compare_exchange_weak(held, held + bytes));
  return RamGrant(held_, bytes);
}

} // namespace mpnvme::target
