#include "path_policy.hpp"

#include <limits>

namespace mpnvme::host {

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
  int found = -1, fallback = -1;
  int found_distance = std::numeric_limits<int>::max(), fallback_distance = found_distance;
  for (int i = 0; i < static_cast<int>(paths.size()); i++) {
    const PathView &p = paths[i];
    if (!p.usable) continue;
    if (p.optimized && p.numa_distance < found_distance) {
      found = i;
      found_distance = p.numa_distance;
    } else if (!p.optimized && p.numa_distance < fallback_distance) {
      fallback = i;
      fallback_distance = p.numa_distance;
    }
  }
  return found >= 0 ? found : fallback;
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
  int best_opt = -1, best_nonopt = -1;
  unsigned min_opt = std::numeric_limits<unsigned>::max(), min_nonopt = min_opt;
  for (int i = 0; i < static_cast<int>(paths.size()); i++) {
    const PathView &p = paths[i];
    if (!p.usable) continue;
    if (p.optimized && p.inflight < min_opt) {
      min_opt = p.inflight;
      best_opt = i;
      if (min_opt == 0) return best_opt;
    } else if (!p.optimized && p.inflight < min_nonopt) {
      min_nonopt = p.inflight;
      best_nonopt = i;
    }
  }
  return best_opt >= 0 ? best_opt : best_nonopt;
}

// Service time: the path that would finish this command first, i.e. the
// smallest (bytes in flight + this command) / measured rate. Until every
// candidate's rate is known all rates count as equal, which spreads the
// first commands by bytes and so measures every path.
int PathSelector::service_time(std::span<const PathView> paths, uint64_t bytes) {
  for (bool optimized : {true, false}) {
    bool rates_known = true, any = false;
    for (const PathView &p : paths) {
      if (!p.usable || p.optimized != optimized) continue;
      any = true;
      rates_known = rates_known && p.bytes_per_sec > 0;
    }
    if (!any) continue;
    int best = -1;
    double best_time = std::numeric_limits<double>::max();
    for (int i = 0; i < static_cast<int>(paths.size()); i++) {
      const PathView &p = paths[i];
      if (!p.usable || p.optimized != optimized) continue;
      const double t = static_cast<double>(p.inflight_bytes + bytes) / (rates_known ? p.bytes_per_sec : 1.0);
      if (t < best_time) {
        best_time = t;
        best = i;
      }
    }
    return best;
  }
  return -1;
}

} // namespace mpnvme::host
