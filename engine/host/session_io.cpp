// SPDX-License-Identifier: GPL-2.0-only
// Session: the data path. fio I/O units become NVMe commands on the path
// the I/O policy picks; completions are decided (complete, retry, fail
// over) as the Linux host does; paths that fail or come back are noticed
// here, between the waits.
#include <algorithm>
#include <cerrno>
#include <fmt/format.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "engine/host/disposition.hpp"
#include "engine/host/fio_errno.hpp"
#include "engine/host/session.hpp"
#include "lib/base/log.hpp"
#include "lib/wire/wire.hpp"

namespace mpnvme::host {
namespace {
constexpr auto kRateWindow = std::chrono::milliseconds(20);
constexpr auto kMaxDeadlineCheck = std::chrono::milliseconds(100);
// hybrid: never spin longer than this before sleeping.
constexpr auto kMaxSpin = std::chrono::microseconds(200);
} // namespace

void RateMeter::busy(Clock::time_point now, bool any_inflight_before) {
  if (!any_inflight_before) busy_start_ = now;
}

// Busy time runs from the last busy() or completion; after an idle gap the
// next busy() restarts it, so idle time never counts.
void RateMeter::completed(Clock::time_point now, uint64_t bytes) {
  bytes_ += bytes;
  busy_ += now - busy_start_;
  busy_start_ = now;
  if (busy_ < kRateWindow) return;
  const double sample = static_cast<double>(bytes_) / std::chrono::duration<double>(busy_).count();
  rate_ = rate_ > 0 ? 0.8 * rate_ + 0.2 * sample : sample;
  bytes_ = 0;
  busy_ = {};
}

bool Session::build(const mpnvme_io &io, Request &r, int &error) {
  Command &c = r.cmd;
  c.sqe = {};
  c.data = nullptr;
  c.len = 0;
  c.dir = DataDir::None;
  r.io_u = io.cookie;
  r.bytes = 0;
  r.retries = 0;
  if (io.ddir != MPNVME_SYNC && ((io.offset | io.len) & (lba_bytes_ - 1))) {
    log().error("job {}: I/O at offset {} length {} is not aligned to the LBA size {}", job_.name, io.offset, io.len, lba_bytes_);
    error = EINVAL;
    return false;
  }
  const uint64_t slba = io.offset >> lba_shift_;
  const auto nlb = static_cast<uint32_t>(io.len >> lba_shift_);
  switch (io.ddir) {
  case MPNVME_READ:
  case MPNVME_WRITE:
    c.sqe = nvme::make_rw(io.ddir == MPNVME_READ ? nvme::kCmdRead : nvme::kCmdWrite, o_.nsid, slba, nlb);
    c.data = static_cast<uint8_t *>(io.buf);
    c.len = static_cast<uint32_t>(io.len);
    c.dir = io.ddir == MPNVME_READ ? DataDir::FromController : DataDir::ToController;
    r.bytes = io.len;
    break;
  case MPNVME_SYNC: c.sqe = nvme::make_cmd(nvme::kCmdFlush, o_.nsid); break;
  case MPNVME_TRIM:
    if (o_.trim_mode == TrimMode::WriteZeroes) {
      c.sqe = nvme::make_rw(nvme::kCmdWriteZeroes, o_.nsid, slba, nlb);
      break;
    }
    {
      uint8_t *range = dsm_[io.index].data();
      wire::put32(range, 0, 0);
      wire::put32(range, 4, nlb);
      wire::put64(range, 8, slba);
      c.sqe = nvme::make_cmd(nvme::kCmdDsm, o_.nsid);
      c.sqe.set_cdw(10, 0);       // one range (0's based)
      c.sqe.set_cdw(11, 1u << 2); // AD: deallocate
      c.data = range;
      c.len = nvme::kDsmRangeLen;
      c.dir = DataDir::ToController;
    }
    break;
  }
  return true;
}

bool Session::usable(const Path &p) const {
  if (!p.ch || p.ch->queue().failed()) return false;
  if (p.ctrl->state() != CtrlState::Live || p.ctrl->generation() != p.generation) return false;
  return ana_usable(p.att->ana.load(std::memory_order_relaxed)) && p.att->ana_pending.load(std::memory_order_relaxed) == 0;
}

// The policy sees each traddr path as the sum of the job's queues on it
// (queue-depth: the whole controller, as the kernel counts); the command
// then takes that path's usable queue with the fewest in flight.
int Session::pick_path(uint64_t bytes) {
  if (paths_.size() == 1) return usable(paths_[0]) ? 0 : -1;
  const bool qd = o_.iopolicy == IoPolicy::QueueDepth;
  for (size_t i = 0; i < views_.size(); i++) {
    views_[i] = PathView{};
    views_[i].numa_distance = paths_[i].numa_distance;
    if (qd) views_[i].inflight = paths_[i].ctrl->nr_active.load(std::memory_order_relaxed);
  }
  for (const Path &p : paths_) {
    PathView &v = views_[p.route];
    if (!usable(p)) continue;
    v.usable = true;
    v.optimized = v.optimized || p.att->ana.load(std::memory_order_relaxed) == AnaState::Optimized;
    if (!qd) v.inflight += p.inflight;
    v.inflight_bytes += p.inflight_bytes;
    v.bytes_per_sec += p.rate.bytes_per_sec();
  }
  const int route = selector_.choose(views_, bytes);
  if (route < 0 || o_.nr_io_queues == 1) return route;
  return least_busy_queue(static_cast<size_t>(route));
}

int Session::least_busy_queue(size_t route) const {
  int best = -1;
  for (size_t e = route; e < paths_.size(); e += views_.size())
    if (usable(paths_[e]) && (best < 0 || paths_[e].inflight < paths_[static_cast<size_t>(best)].inflight))
      best = static_cast<int>(e);
  return best;
}

// Put `r` on a path. False when no path is usable or the chosen path's
// queue is full.
bool Session::submit(Request &r) {
  const int i = pick_path(r.bytes);
  if (i < 0) return false;
  Path &p = paths_[static_cast<size_t>(i)];
  if (!p.ch->queue().submit(r.cmd)) return false;
  const auto now = Clock::now();
  r.path = i;
  r.issued = now;
  r.deadline = now + o_.recovery.io_timeout;
  p.rate.busy(now, p.inflight > 0);
  p.inflight++;
  p.inflight_bytes += r.bytes;
  p.stats.commands++;
  p.stats.inflight_max = std::max(p.stats.inflight_max, p.inflight);
  if (o_.iopolicy == IoPolicy::QueueDepth) p.ctrl->nr_active.fetch_add(1, std::memory_order_relaxed);
  return true;
}

int Session::queue(const mpnvme_io &io, int &error) {
  if (io.index >= requests_.size()) {
    error = EINVAL;
    return MPNVME_COMPLETED;
  }
  Request &r = requests_[io.index];
  if (!build(io, r, error)) return MPNVME_COMPLETED;
  if (submit(r)) return MPNVME_QUEUED;
  for (const Path &p : paths_)
    if (usable(p)) return MPNVME_BUSY; // a usable path's queue is full: fio reaps first
  r.path = -1;
  r.waiting_since = Clock::now();
  waiting_.push_back(&r);
  return MPNVME_QUEUED;
}

void Session::watch_output(size_t i) {
  Path &p = paths_[i];
  const bool want = p.ch && p.ch->wants_write();
  if (want == p.polling_out) return;
  epoll_event ev{};
  ev.events = want ? EPOLLIN | EPOLLOUT : EPOLLIN;
  ev.data.u64 = i;
  epoll_ctl(epfd_, EPOLL_CTL_MOD, p.ch->fd(), &ev);
  p.polling_out = want;
}

void Session::send_all() {
  for (size_t i = 0; i < paths_.size(); i++) {
    Path &p = paths_[i];
    if (!p.ch) continue;
    if (p.ch->wants_write()) p.ch->send();
    watch_output(i);
  }
}

void Session::commit() { send_all(); }

void Session::harvest(size_t i, Clock::time_point now) {
  Path &p = paths_[i];
  if (!p.ch) return;
  auto &done = p.ch->queue().completions();
  // finish() may resubmit on this very queue, which never touches `done`.
  for (size_t k = 0; k < done.size(); k++)
    finish(*static_cast<Request *>(done[k].cookie), done[k], now);
  done.clear();
}

void Session::finish(Request &r, const Completion &c, Clock::time_point now) {
  Path &p = paths_[static_cast<size_t>(r.path)];
  p.inflight--;
  p.inflight_bytes -= r.bytes;
  if (o_.iopolicy == IoPolicy::QueueDepth) p.ctrl->nr_active.fetch_sub(1, std::memory_order_relaxed);
  p.rate.completed(now, c.ok() ? r.bytes : 0);
  if (c.ok()) {
    const auto ns = static_cast<uint64_t>(std::chrono::nanoseconds(now - r.issued).count());
    p.stats.latency.add(ns);
    recent_latency_ns_ = recent_latency_ns_ - recent_latency_ns_ / 8 + ns / 8;
    if (r.cmd.dir == DataDir::FromController)
      p.stats.bytes_read += r.bytes;
    else if (r.cmd.sqe.opcode() == nvme::kCmdWrite)
      p.stats.bytes_written += r.bytes;
  }
  const Disposition d = decide_disposition(c, r.retries, o_.max_retries);
  r.path = -1;
  switch (d) {
  case Disposition::Complete:
    if (!c.ok())
      log().error("{} cid {:#x}: {} failed: {}", p.label, c.cid, nvme::opcode_name(c.opcode, false),
                  c.aborted ? p.ch->queue().failure() : nvme::status_string(c.status));
    ready_.push_back({r.io_u, completion_errno(c)});
    return;
  case Disposition::Retry:
    r.retries++;
    log().debug("{} cid {:#x}: {}: retry {} of {}", p.label, c.cid, nvme::status_string(c.status), r.retries, o_.max_retries);
    break;
  case Disposition::Failover:
    p.stats.failovers++;
    if (!c.aborted && is_ana_error(c.status)) {
      p.ctrl->request_ana_read(&p.att->ana_pending); // unusable until the ANA log says otherwise
      log().info("{} cid {:#x}: {}: failing over, reading the ANA log again", p.label, c.cid, nvme::status_string(c.status));
    }
    break;
  }
  if (!submit(r)) {
    r.waiting_since = now;
    waiting_.push_back(&r);
  }
}

void Session::adopt(size_t i, Clock::time_point now) {
  Path &p = paths_[i];
  uint32_t gen = 0;
  std::unique_ptr<Channel> ch = p.att->take(gen);
  if (!ch || gen != p.ctrl->generation()) return; // a connection of a reset association: closed here
  if (p.ch) path_down(i, "replaced by a new connection", now);
  p.ch = std::move(ch);
  p.generation = gen;
  p.att->held_generation.store(gen, std::memory_order_release);
  if (p.ever_up) p.stats.reconnects++;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = i;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, p.ch->fd(), &ev);
  p.polling_out = false;
}

// The path's connection is gone: its commands in flight fail over (they
// come back aborted), the socket goes.
void Session::path_down(size_t i, const std::string &why, Clock::time_point now) {
  Path &p = paths_[i];
  const unsigned moved = p.inflight;
  if (p.ch) {
    p.ch->queue().fail(why);
    epoll_ctl(epfd_, EPOLL_CTL_DEL, p.ch->fd(), nullptr);
    harvest(i, now);
    p.ch.reset();
    p.att->held_generation.store(0, std::memory_order_release); // its commands are handed back
  }
  if (p.up) {
    p.up = false;
    p.down_since = now;
    log().info("job {} {}: path down: {}{}", job_.name, p.label, why,
               moved ? fmt::format("; {} command(s) in flight moved to other paths", moved) : "");
  }
}

void Session::maintain(Clock::time_point now) {
  for (size_t i = 0; i < paths_.size(); i++) {
    Path &p = paths_[i];
    if (p.att->has_connection()) adopt(i, now);
    if (p.ch) {
      if (p.ctrl->generation() != p.generation) {
        path_down(i, fmt::format("controller reset: {}", p.ctrl->reason()), now);
      } else if (p.ch->queue().failed()) {
        const std::string why = p.ch->queue().failure();
        p.ctrl->report_failure(p.generation, fmt::format("I/O queue {}: {}", p.att->qid, why));
        path_down(i, why, now);
      }
    }
    const bool up = usable(p);
    if (up == p.up) continue;
    if (up) {
      p.stats.down_ns += static_cast<uint64_t>(std::chrono::nanoseconds(now - p.down_since).count());
      if (p.ever_up)
        log().info("job {} {}: path up again after {:.1f} s", job_.name, p.label,
                   std::chrono::duration<double>(now - p.down_since).count());
      p.ever_up = true;
    } else {
      p.down_since = now;
      log().info("job {} {}: path not usable: ANA {}{}", job_.name, p.label, ana_state_name(p.att->ana.load()),
                 p.att->ana_pending.load() ? " (ANA log being read again)" : "");
    }
    p.up = up;
  }
  if (now >= next_deadline_check_) check_deadlines(now);
  if (!waiting_.empty()) resubmit_waiting(now);
}

// A command past its io_timeout: the kernel resets the whole controller
// association; so does the engine, and the path's commands fail over.
void Session::check_deadlines(Clock::time_point now) {
  next_deadline_check_ = now + std::min<Clock::duration>(o_.recovery.io_timeout / 4, kMaxDeadlineCheck);
  for (Request &r : requests_) {
    if (r.path < 0 || now <= r.deadline) continue;
    const auto i = static_cast<size_t>(r.path);
    Path &p = paths_[i];
    const std::string why = fmt::format("I/O timeout: {} not answered within io_timeout ({} ms)",
                                        nvme::opcode_name(r.cmd.sqe.opcode(), false), o_.recovery.io_timeout.count());
    p.ctrl->report_failure(p.generation, why);
    path_down(i, why, now);
  }
}

// A path that could still serve: live, or reconnecting within its limits.
bool Session::any_path_available(Clock::time_point now) const {
  for (const Path &p : paths_) {
    if (p.ctrl->state() == CtrlState::Deleted || p.ctrl->failfast_expired(now)) continue;
    if (!p.att->refusal().empty()) continue;
    return true;
  }
  return false;
}

void Session::resubmit_waiting(Clock::time_point now) {
  for (size_t n = waiting_.size(); n > 0; n--) {
    Request *r = waiting_.front();
    waiting_.pop_front();
    if (!submit(*r)) waiting_.push_back(r);
  }
  if (waiting_.empty()) return;
  const bool available = any_path_available(now);
  const auto &loss = o_.recovery.ctrl_loss_tmo;
  size_t failed = 0;
  for (size_t n = waiting_.size(); n > 0; n--) {
    Request *r = waiting_.front();
    waiting_.pop_front();
    if (available && !(loss && now - r->waiting_since > *loss)) {
      waiting_.push_back(r);
      continue;
    }
    ready_.push_back({r->io_u, ENOLINK});
    failed++;
  }
  if (failed)
    log().error("job {}: {} command(s) failed: no usable path{}: {}", job_.name, failed,
                available ? fmt::format(" within ctrl_loss_tmo ({} s)", loss->count() / 1000.0) : "", path_states());
}

int Session::wait_ms(Clock::time_point now, Clock::time_point fio_deadline) const {
  auto until = now + std::chrono::seconds(1);
  bool inflight = false;
  for (const Path &p : paths_)
    inflight = inflight || p.inflight;
  if (inflight) until = std::min(until, next_deadline_check_);
  if (!waiting_.empty()) until = std::min(until, now + kMaxDeadlineCheck);
  until = std::min(until, fio_deadline);
  return ms_until(until, now, 1000);
}

void Session::wait(int timeout_ms) {
  epoll_event ev[16];
  const int n = epoll_wait(epfd_, ev, 16, timeout_ms);
  for (int k = 0; k < n; k++) {
    if (ev[k].data.u64 == UINT64_MAX) {
      uint64_t v;
      [[maybe_unused]] ssize_t r = ::read(wake_fd_, &v, sizeof v);
      continue;
    }
    Path &p = paths_[ev[k].data.u64];
    if (!p.ch) continue;
    if (ev[k].events & EPOLLOUT) p.ch->send();
    if (ev[k].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) p.ch->receive();
  }
}

int Session::getevents(unsigned min, unsigned max, long long timeout_ns) {
  ready_.erase(ready_.begin(), ready_.begin() + static_cast<long>(handed_));
  handed_ = 0;
  // Completions received earlier satisfy fio: hand them over without a
  // syscall, so that the commands fio queues meanwhile leave in one send
  // when it next has to wait (fio's defaults reap one event per call).
  if (min > 0 && ready_.size() >= min) {
    handed_ = std::min<size_t>(ready_.size(), max);
    return static_cast<int>(handed_);
  }
  const auto start = Clock::now();
  const auto fio_deadline = timeout_ns >= 0 ? start + std::chrono::nanoseconds(timeout_ns) : Clock::time_point::max();
  bool polled = false; // the sockets were read at least once in this call
  // poll=busy spins while commands are in flight; hybrid spins for about
  // twice the recent completion time, then sleeps; block sleeps at once.
  const auto spin_until = o_.poll == PollMode::Busy ? Clock::time_point::max()
                          : o_.poll == PollMode::Hybrid
                              ? start + std::min<Clock::duration>(std::chrono::nanoseconds(2 * recent_latency_ns_), kMaxSpin)
                              : start;
  for (;;) {
    const auto now = Clock::now();
    maintain(now);
    for (size_t i = 0; i < paths_.size(); i++)
      harvest(i, now);
    send_all(); // commands fio committed, resubmitted ones, H2CData for R2Ts
    // min 0 is fio polling: look at the sockets once before answering.
    if ((ready_.size() >= min && (min > 0 || polled)) || now >= fio_deadline) break;
    if (now < spin_until || !polled) {
      bool inflight = false, got = false;
      for (Path &p : paths_) {
        if (!p.ch || !p.inflight) continue;
        inflight = true;
        got = p.ch->receive() || got;
      }
      polled = true;
      // Spinning, or bytes were waiting already: no need to sleep. With
      // nothing in flight (all waiting for a path) sleep below.
      if (inflight && (got || now < spin_until)) continue;
    }
    wait(wait_ms(now, fio_deadline));
  }
  handed_ = std::min<size_t>(ready_.size(), max);
  return static_cast<int>(handed_);
}

unsigned Session::ready() const { return static_cast<unsigned>(ready_.size() - handed_); }

void *Session::event(unsigned i, int &error) const {
  error = ready_[i].error;
  return ready_[i].io_u;
}

} // namespace mpnvme::host
