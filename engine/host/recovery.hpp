// SPDX-License-Identifier: GPL-2.0-only
// A controller association's states and their transitions, as the Linux
// host's error recovery (nvme_tcp_error_recovery ->
// nvme_tcp_reconnect_or_remove) moves them, with nvme-cli's timeouts:
//
//   LIVE -> RESETTING     the association failed; the generation goes up and
//                         jobs hand back the commands they had on it
//   RESETTING -> CONNECTING  every job has handed back the old generation
//                         (or the first reconnect is due)
//   CONNECTING -> LIVE    a reconnect attempt succeeded
//   CONNECTING -> DELETED ctrl_loss_tmo passed since the failure
//
// Pure: no sockets, no clock reads (times are passed in), so the unit
// tests drive every transition deterministically. The admin thread makes
// the transitions; jobs read state and generation lock-free, the reason
// and times under the mutex.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "engine/host/clock.hpp"
#include "lib/config/engine_options.hpp"

namespace mpnvme::host {

enum class CtrlState : uint8_t { Connecting, Live, Resetting, Deleted };
const char *ctrl_state_name(CtrlState s);

// Recovery options, with nvme-cli's names and the kernel's defaults.
class ControllerRecovery {
public:
  explicit ControllerRecovery(const RecoveryOptions &o, Clock::time_point now);

  CtrlState state() const { return state_.load(std::memory_order_acquire); }
  // Bumped at every reset: a connection of an older generation is gone.
  uint32_t generation() const { return generation_.load(std::memory_order_acquire); }
  Clock::time_point down_since() const;
  std::string reason() const;
  unsigned attempts() const { return attempts_; }
  // fast_io_fail_tmo passed since the controller went down.
  bool failfast_expired(Clock::time_point now) const;

  // LIVE or CONNECTING -> RESETTING: the association is gone (`why`).
  void reset(Clock::time_point now, const std::string &why);
  // RESETTING -> CONNECTING when the jobs have handed back the old
  // generation's commands, or when the first reconnect is due anyway (a job
  // that does not look, e.g. in thinktime, does not hold up recovery).
  // True when the state changed.
  bool finish_reset(Clock::time_point now, bool handed_back);

  enum class Next { Wait, Attempt, Delete };
  // What CONNECTING does now; Wait until wake_at().
  Next next(Clock::time_point now) const;
  Clock::time_point wake_at() const;
  // An attempt starts / failed (`why`) / succeeded.
  void attempting() { attempts_++; }
  void attempt_failed(Clock::time_point now, const std::string &why);
  void connected();
  // CONNECTING -> DELETED (ctrl_loss_tmo); the reason says why.
  void remove();
  // The first connection failed: CONNECTING with a reconnect due after
  // reconnect_delay, as after a reset.
  void first_connect_failed(Clock::time_point now, const std::string &why);

private:
  void went_down(Clock::time_point now, const std::string &why);

  const RecoveryOptions o_;
  std::atomic<CtrlState> state_{CtrlState::Connecting};
  std::atomic<uint32_t> generation_{1};
  mutable std::mutex mu_; // reason_, down_since_
  std::string reason_ = "not connected yet";
  Clock::time_point down_since_;
  Clock::time_point next_attempt_{}; // admin thread only
  unsigned attempts_ = 0;            // admin thread only
};

} // namespace mpnvme::host
