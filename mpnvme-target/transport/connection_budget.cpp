// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/transport/connection_budget.hpp"

#include <fmt/format.h>

namespace mpnvme::target {

bool ConnectionBudget::take(const std::string &addr, Clock::time_point now, std::string &log_line) {
  log_line.clear();
  bool over_total = false;
  unsigned held = 0;
  {
    std::lock_guard lk(mu_);
    unsigned &mine = by_addr_[addr];
    over_total = held_ >= total_;
    if (!over_total && mine < per_address_) {
      mine++;
      held_++;
      return true;
    }
    if (mine == 0) by_addr_.erase(addr);
    held = held_;
  }
  // One interval per limit, not per address: a stranger's addresses must
  // not grow the window's table.
  uint64_t quiet = 0;
  if (!refusals_.due(over_total ? "total" : "per-address", now, quiet)) return false;
  log_line = over_total
                 ? fmt::format("{} connections held, the most --max-connections allows", held)
                 : fmt::format("{} connections from {}, the most --max-connections-per-address allows", per_address_, addr);
  if (quiet) log_line += fmt::format("; {} more refused since the last such line", quiet);
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
