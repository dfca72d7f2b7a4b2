// SPDX-License-Identifier: GPL-2.0-only
#include "toolkit/nvmet/connect_options.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace mpnvme::toolkit {

namespace {

// The kernel's bounds of queue_size (NVMF_MIN_QUEUE_SIZE, NVMF_MAX_QUEUE_SIZE).
constexpr unsigned kKernelMinQueue = 16, kKernelMaxQueue = 1024;

unsigned fio_number(const JobSection &j, const char *key, unsigned dflt, const std::string &path) {
  const auto v = j.get(key);
  if (!v) return dflt;
  if (const auto n = parse_count(*v, 65536)) return *n;
  throw std::runtime_error(fmt::format("{}: job {}: {}={}: not a number the kernel host can use", path, j.name, key, *v));
}

// Kernel options are whole seconds; -1 is "forever" or "off".
int whole_seconds(const std::optional<std::chrono::milliseconds> &ms) {
  return ms ? static_cast<int>(std::ceil(ms->count() / 1000.0)) : -1;
}

} // namespace

std::vector<std::string> connect_options_from_job(ConnectRequest &r, const EngineOptions &e, const std::vector<JobSection> &jobs,
                                                  const std::string &path) {
  std::vector<std::string> notes;
  // The engine opens one I/O queue per fio job on every path, each with
  // queue_size entries (iodepth when unset): the kernel gets as many
  // queues (it keeps at most one per CPU) of the same size.
  unsigned queues = 0, depth = 0;
  for (const auto &j : jobs) {
    queues += fio_number(j, "numjobs", 1, path);
    depth = std::max(depth, fio_number(j, "iodepth", 1, path));
  }
  r.nr_io_queues = static_cast<int>(queues);
  unsigned size = e.queue_size ? e.queue_size : std::max(depth, 2u);
  if (size < kKernelMinQueue) {
    notes.push_back(fmt::format("queue size {} raised to {}, the kernel's smallest", size, kKernelMinQueue));
    size = kKernelMinQueue;
  }
  r.queue_size = static_cast<int>(std::min(size, kKernelMaxQueue));
  r.hdr_digest = e.digests.header;
  r.data_digest = e.digests.data;
  r.keep_alive_tmo = static_cast<int>(e.kato_ms / 1000);
  r.ctrl_loss_tmo = whole_seconds(e.recovery.ctrl_loss_tmo);
  r.reconnect_delay = std::max(1, whole_seconds(std::optional(e.recovery.reconnect_delay)));
  r.fast_io_fail_tmo = whole_seconds(e.recovery.fast_io_fail_tmo);
  r.disable_sqflow = e.disable_sqflow;
  // One TOS and one socket priority for all of the kernel host's queues:
  // the I/O queues' (the admin queue carries almost nothing).
  if (const auto tos = e.tos.for_queue(1)) r.tos = static_cast<int>(*tos);
  if (const auto prio = e.sk_priority.for_queue(1)) r.so_priority = static_cast<int>(*prio);
  if (e.tos.for_queue(0) != e.tos.for_queue(1) || e.sk_priority.for_queue(0) != e.sk_priority.for_queue(1))
    notes.push_back("the kernel host has one TOS and one socket priority for every queue: the I/O queues' apply to its "
                    "admin queue too");
  return notes;
}

} // namespace mpnvme::toolkit
