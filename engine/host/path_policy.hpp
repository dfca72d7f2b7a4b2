// SPDX-License-Identifier: GPL-2.0-only
// The I/O policy: which path the next command takes. Pure logic over a
// snapshot of the paths, with the Linux host's semantics for numa,
// round-robin and queue-depth (drivers/nvme/host/multipath.c), and
// service-time (dm-multipath's idea) for paths of unequal speed.
#pragma once
#include <cstdint>
#include <span>

#include "lib/config/engine_options.hpp"

namespace mpnvme::host {

// How one path looks when a command is about to go out.
struct PathView {
  bool usable = false;    // controller live, queue connected, ANA optimized or non-optimized
  bool optimized = false; // ANA optimized (else non-optimized)
  unsigned inflight = 0;  // commands in flight (queue-depth: on the whole controller)
  uint64_t inflight_bytes = 0;
  double bytes_per_sec = 0; // measured service rate; 0 = not known yet
  int numa_distance = 10;   // from the job's node to the path's host interface (10 = local)
};

class PathSelector {
public:
  explicit PathSelector(IoPolicy p) : policy_(p) {}
  // Index of the path for a command moving `bytes`, or -1 when no path is
  // usable.
  int choose(std::span<const PathView> paths, uint64_t bytes);
  IoPolicy policy() const { return policy_; }

private:
  int nearest(std::span<const PathView> paths) const; // the kernel's __nvme_find_path
  int round_robin(std::span<const PathView> paths);
  static int queue_depth(std::span<const PathView> paths);
  static int service_time(std::span<const PathView> paths, uint64_t bytes);

  IoPolicy policy_;
  int current_ = -1; // numa: the cached path; round-robin: the last one used
};

} // namespace mpnvme::host
