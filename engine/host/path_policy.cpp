// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/path_policy.hpp"

namespace mpnvme::host {
namespace {

// The usable optimized path with the smallest key, else the usable
// non-optimized one with the smallest key; the first in path order on a tie.
// The kernel's numa and queue-depth selections both have this shape.
template <typename Key> int smallest(std::span<const PathView> paths, Key key) {
  int best[2] = {-1, -1}; // [optimized, non-optimized]
  decltype(key(paths[0])) least[2]{};
  for (int i = 0; i < static_cast<int>(paths.size()); i++) {
    const PathView &p = paths[i];
    if (!p.usable) continue;
    const int g = p.optimized ? 0 : 1;
    const auto k = key(p);
    if (best[g] < 0 || k < least[g]) {
      best[g] = i;
      least[g] = k;
    }
  }
  return best[0] >= 0 ? best[0] : best[1];
}

} // namespace

int PathSelector::choose(std::span<const PathView> paths, uint64_t bytes) {
  switch (policy_) {
  case IoPolicy::Numa:
    // The cached path stays while it is usable and optimized; a
    // non-optimized one is re-evaluated every time, so an optimized path
    // that comes back is taken again (nvme_find_path).
    if (current_ < 0 || current_ >= static_cast<int>(paths.size()) || !paths[current_].usable || !paths[current_].optimized)
      current_ = nearest(paths);
    return current_;
  case IoPolicy::RoundRobin: return round_robin(paths);
  case IoPolicy::QueueDepth: return queue_depth(paths);
  case IoPolicy::ServiceTime: return service_time(paths, bytes);
  }
  return -1;
}

// The usable optimized path nearest to the job's NUMA node, else the
// nearest non-optimized one; the first in path order on a tie.
int PathSelector::nearest(std::span<const PathView> paths) const {
  return smallest(paths, [](const PathView &p) { return p.numa_distance; });
}

// nvme_round_robin_path: the next usable optimized path after the last one;
// a non-optimized one only when no optimized path is usable; the last path
// again when it is the only optimized (or the only usable) one.
int PathSelector::round_robin(std::span<const PathView> paths) {
  const int n = static_cast<int>(paths.size());
  if (current_ < 0 || current_ >= n) return current_ = nearest(paths);
  int found = -1;
  for (int k = 1; k < n; k++) {
    const int i = (current_ + k) % n;
    if (!paths[i].usable) continue;
    if (paths[i].optimized) {
      found = i;
      break;
    }
    found = i; // the kernel keeps the last non-optimized path it saw
  }
  const PathView &old = paths[current_];
  if (old.usable && (old.optimized || found < 0)) {
    if (found < 0 || !paths[found].optimized) return current_;
  }
  if (found >= 0) current_ = found;
  return found;
}

// nvme_queue_depth_path: fewest commands in flight among optimized paths,
// non-optimized only when no optimized path is usable.
int PathSelector::queue_depth(std::span<const PathView> paths) {
  return smallest(paths, [](const PathView &p) { return p.inflight; });
}

// Service time: the path that would finish this command first, i.e. the
// smallest (bytes in flight + this command) / measured rate. Until every
// candidate's rate is known all rates count as equal, which spreads the
// first commands by bytes and so measures every path. Candidates are the
// usable optimized paths, or the non-optimized ones when there is none, so
// "every candidate" is counted per group.
int PathSelector::service_time(std::span<const PathView> paths, uint64_t bytes) {
  bool rates_known[2] = {true, true}; // [optimized, non-optimized]
  for (const PathView &p : paths)
    if (p.usable && p.bytes_per_sec <= 0) rates_known[p.optimized ? 0 : 1] = false;
  return smallest(paths, [&](const PathView &p) {
    const double rate = rates_known[p.optimized ? 0 : 1] ? p.bytes_per_sec : 1.0;
    return static_cast<double>(p.inflight_bytes + bytes) / rate;
  });
}

} // namespace mpnvme::host
