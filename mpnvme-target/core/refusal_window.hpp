// SPDX-License-Identifier: GPL-2.0-only
// Refusals a peer can repeat as fast as it connects (each on a connection
// of its own, so a queue's "logged once" does not hold them back) are
// logged once per interval and key, with how many the last interval kept
// quiet: a Connect storm against a full subsystem must not fill the disk.
// Its lock is a leaf (docs/design.md, "Locks").
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace mpnvme::target {

class RefusalWindow {
public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kInterval{10};

  // Whether this refusal for `key` opens an interval and is to be logged;
  // `quiet` is then how many refusals for it went unlogged since the last.
  bool due(const std::string &key, Clock::time_point now, uint64_t &quiet) {
    std::lock_guard lk(mu_);
    auto [it, fresh] = windows_.try_emplace(key);
    Window &w = it->second;
    if (!fresh && now - w.start < kInterval) {
      w.quiet++;
      return false;
    }
    quiet = fresh ? 0 : w.quiet;
    w = {now, 0};
    return true;
  }

private:
  struct Window {
    Clock::time_point start;
    uint64_t quiet = 0;
  };
  std::mutex mu_;
  // Keyed by subsystem: no more keys than subsystems were ever full.
  std::unordered_map<std::string, Window> windows_;
};

} // namespace mpnvme::target
