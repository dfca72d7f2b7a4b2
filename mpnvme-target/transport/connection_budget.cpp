// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/transport/connection_budget.hpp"

#include <fmt/format.h>

namespace mpnvme::target {

bool ConnectionBudget::take(const std::string &addr, Clock::time_point now, std::string &log_line) {
  std::lock_guard lk(mu_);
  log_line.clear();
  unsigned &mine = by_addr_[addr];
  const bool over_total = held_ >= total_, over_address = mine >= per_address_;
  if (!over_total && !over_address) {
    mine++;
    held_++;
    return true;
  }
  if (mine == 0) by_addr_.erase(addr);
  refused_since_log_++;
  if (now >= next_log_) {
    log_line = over_total
                   ? fmt::format("{} connections held, the most --max-connections allows", held_)
                   : fmt::format("{} connections from {}, the most --max-connections-per-address allows", per_address_, addr);
    if (refused_since_log_ > 1) log_line += fmt::format(" ({} refused since the last report)", refused_since_log_);
    refused_since_log_ = 0;
    next_log_ = now + kLogInterval;
  }
  return false;
}

void ConnectionBudget::give_back(const std::string &addr) {
  std::lock_guard lk(mu_);
  auto it = by_addr_.find(addr);
  if (it == by_addr_.end()) return;
  held_--;
  if (--it->second == 0) by_addr_.erase(it);
}

} // namespace mpnvme::target
