// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/recovery.hpp"

#include <fmt/format.h>

namespace mpnvme::host {

const char *ctrl_state_name(CtrlState s) {
  switch (s) {
  case CtrlState::Connecting: return "connecting";
  case CtrlState::Live: return "live";
  case CtrlState::Resetting: return "resetting";
  case CtrlState::Deleted: return "deleted";
  }
  return "?";
}

ControllerRecovery::ControllerRecovery(const RecoveryOptions &o, Clock::time_point now) : o_(o), down_since_(now) {}

Clock::time_point ControllerRecovery::down_since() const {
  std::lock_guard lk(mu_);
  return down_since_;
}

std::string ControllerRecovery::reason() const {
  std::lock_guard lk(mu_);
  return reason_;
}

bool ControllerRecovery::failfast_expired(Clock::time_point now) const {
  const auto &f = o_.fast_io_fail_tmo;
  return f && state() != CtrlState::Live && now - down_since() >= *f;
}

// The association is down since `now` because of `why`; the first
// reconnect is due after reconnect_delay.
void ControllerRecovery::went_down(Clock::time_point now, const std::string &why) {
  {
    std::lock_guard lk(mu_);
    reason_ = why;
    down_since_ = now;
  }
  next_attempt_ = now + o_.reconnect_delay;
  attempts_ = 0;
}

void ControllerRecovery::reset(Clock::time_point now, const std::string &why) {
  went_down(now, why);
  // The generation goes up with the state: a job that sees RESETTING also
  // sees that its connection is of the old generation.
  generation_.fetch_add(1, std::memory_order_acq_rel);
  state_.store(CtrlState::Resetting, std::memory_order_release);
}

bool ControllerRecovery::finish_reset(Clock::time_point now, bool handed_back) {
  if (state() != CtrlState::Resetting || !(handed_back || now >= next_attempt_)) return false;
  state_.store(CtrlState::Connecting, std::memory_order_release);
  return true;
}

ControllerRecovery::Next ControllerRecovery::next(Clock::time_point now) const {
  if (o_.ctrl_loss_tmo && now - down_since() >= *o_.ctrl_loss_tmo) return Next::Delete;
  return now < next_attempt_ ? Next::Wait : Next::Attempt;
}

Clock::time_point ControllerRecovery::wake_at() const {
  if (state() != CtrlState::Connecting || !o_.ctrl_loss_tmo) return next_attempt_;
  return std::min(next_attempt_, down_since() + *o_.ctrl_loss_tmo);
}

void ControllerRecovery::attempt_failed(Clock::time_point now, const std::string &why) {
  {
    std::lock_guard lk(mu_);
    reason_ = why;
  }
  next_attempt_ = now + o_.reconnect_delay;
}

void ControllerRecovery::connected() {
  {
    std::lock_guard lk(mu_);
    reason_.clear();
  }
  state_.store(CtrlState::Live, std::memory_order_release);
}

void ControllerRecovery::remove() {
  {
    std::lock_guard lk(mu_);
    reason_ = fmt::format("ctrl_loss_tmo ({} s) expired after {} reconnect attempt(s); last: {}",
                          o_.ctrl_loss_tmo ? o_.ctrl_loss_tmo->count() / 1000.0 : 0.0, attempts_, reason_);
  }
  state_.store(CtrlState::Deleted, std::memory_order_release);
}

void ControllerRecovery::first_connect_failed(Clock::time_point now, const std::string &why) { went_down(now, why); }

} // namespace mpnvme::host
