// SPDX-License-Identifier: GPL-2.0-only
// The host's clock, and the poll/epoll timeout until a point in time.
#pragma once
#include <algorithm>
#include <chrono>

namespace mpnvme::host {

using Clock = std::chrono::steady_clock;

// Milliseconds from `now` until `until`, rounded up (so a wait never wakes
// just before its deadline), within 0..`cap`.
inline int ms_until(Clock::time_point until, Clock::time_point now, int cap) {
  if (until <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
  return static_cast<int>(std::min<long long>(ms, cap));
}

} // namespace mpnvme::host
