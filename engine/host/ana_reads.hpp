// SPDX-License-Identifier: GPL-2.0-only
// When the admin thread reads the ANA log page again. Jobs (an ANA status
// on a command) and asynchronous event notices ask for a read from any
// thread; the admin thread sends one read at a time.
//
// A request is never lost: one made while a read is outstanding causes one
// more read after it, because the outstanding read may have been answered
// before the change that prompted the request. Requests are numbered, and
// a read "covers" the requests made before it was sent: a job's ANA-pending
// mark is cleared only by a read that covers it, never by an older one.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>

namespace mpnvme::host {

class AnaReads {
public:
  // Any thread: ask for a read, and set `mark` (when given) to the
  // request's number before the admin thread can see the request, so no
  // read that covers it can finish before the mark is there to clear.
  uint64_t request(std::atomic<uint64_t> *mark = nullptr) {
    const uint64_t n = tickets_.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (mark) mark->store(n, std::memory_order_release);
    uint64_t cur = requested_.load(std::memory_order_acquire);
    while (cur < n && !requested_.compare_exchange_weak(cur, n, std::memory_order_acq_rel)) {
    }
    return n;
  }
  // Admin thread: the number a read sent now covers, when one should be
  // sent (a request not yet covered, none outstanding); nullopt otherwise.
  std::optional<uint64_t> start() {
    if (outstanding_) return std::nullopt;
    const uint64_t want = requested_.load(std::memory_order_acquire);
    if (want == covered_) return std::nullopt;
    outstanding_ = true;
    sending_ = want;
    return want;
  }
  // Admin thread: the outstanding read ended (answered or not). Returns
  // the number it covers.
  uint64_t finish() {
    outstanding_ = false;
    covered_ = std::max(covered_, sending_);
    return sending_;
  }
  // Admin thread: a read outside this schedule (connection set-up) covers
  // everything asked so far. Returns that number.
  uint64_t read_now() {
    const uint64_t n = requested_.load(std::memory_order_acquire);
    covered_ = std::max(covered_, n);
    return n;
  }
  // The association went away: an outstanding read will never answer (the
  // reconnect's read_now covers what it would have).
  void reset() { outstanding_ = false; }

private:
  std::atomic<uint64_t> tickets_{0};   // numbers handed out
  std::atomic<uint64_t> requested_{0}; // highest number the admin thread may serve
  uint64_t covered_ = 0, sending_ = 0; // admin thread only
  bool outstanding_ = false;
};

// A job's mark that its path is unusable until an ANA read covering
// request `seq` has been applied. 0: no mark.
inline void clear_ana_pending(std::atomic<uint64_t> &pending, uint64_t covered) {
  uint64_t seq = pending.load(std::memory_order_acquire);
  // A newer mark set meanwhile stays.
  while (seq && seq <= covered && !pending.compare_exchange_weak(seq, 0, std::memory_order_acq_rel)) {
  }
}

} // namespace mpnvme::host
