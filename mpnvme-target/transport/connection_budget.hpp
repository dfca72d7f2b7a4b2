// SPDX-License-Identifier: GPL-2.0-only
// How many connections the target holds, per peer address and in all. A
// stranger may open connections and never send a Connect; each then lives
// until the set-up deadline, so without limits one address could hold as
// many as the descriptors allow. A connection over either limit is closed
// at accept, before it costs a connection's memory, and the refusals are
// logged once per interval and limit with their count (--max-connections,
// --max-connections-per-address): a flood from one address does not hide
// that the target as a whole is full, nor the other way round.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "mpnvme-target/core/refusal_window.hpp"

namespace mpnvme::target {

class ConnectionBudget {
public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kLogInterval = RefusalWindow::kInterval;
  ConnectionBudget(unsigned total, unsigned per_address) : total_(total), per_address_(per_address) {}

  // Take a connection for `addr`. Refused: false, and `log_line` holds what
  // to log when this refusal opens an interval (empty otherwise).
  bool take(const std::string &addr, Clock::time_point now, std::string &log_line);
  void give_back(const std::string &addr);
  // At start, when the descriptor limit leaves room for fewer.
  void lower_total(unsigned total) {
    std::lock_guard lk(mu_);
    total_ = total;
  }
  unsigned held() const {
    std::lock_guard lk(mu_);
    return held_;
  }

private:
  unsigned total_;
  const unsigned per_address_;
  mutable std::mutex mu_;
  unsigned held_ = 0;
  std::unordered_map<std::string, unsigned> by_addr_;
  RefusalWindow refusals_; // taken after mu_ is let go: both are leaves
};

} // namespace mpnvme::target
