// SPDX-License-Identifier: GPL-2.0-only
// How long the event loop keeps spinning after work before it sleeps.
// On a virtual machine a sleeping vCPU is woken by an IPI through the
// hypervisor: bench/run floor measured a blocking round trip at about 5x a
// busy-polling one. When commands arrive close together (QD1 from a fast
// host), the next one is usually there within twice the recent gap, so the
// loop spins that long (at most kMaxSpin) instead of sleeping; when they
// arrive far apart, it sleeps at once and costs no CPU while idle.
#pragma once
#include <algorithm>
#include <chrono>

namespace mpnvme::target {

class IdleSpin {
public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::microseconds kMaxSpin{200};

  // Bytes arrived at `now`.
  void work(Clock::time_point now) {
    if (last_ != Clock::time_point{}) {
      const auto gap = std::min<Clock::duration>(now - last_, std::chrono::milliseconds(10));
      gap_ = gap_ == Clock::duration{} ? gap : (gap_ * 7 + gap) / 8;
    }
    last_ = now;
  }
  // Keep spinning at `now`?
  bool spinning(Clock::time_point now) const {
    if (last_ == Clock::time_point{} || gap_ * 2 > kMaxSpin) return false;
    return now - last_ < std::max<Clock::duration>(gap_ * 2, std::chrono::microseconds(50));
  }

private:
  Clock::time_point last_{};
  Clock::duration gap_{};
};

} // namespace mpnvme::target
