// SPDX-License-Identifier: GPL-2.0-only
// Failed authentications slow their source down: after a failure an
// address may not connect for 1 s, doubling with each failure in a row up
// to 64 s (a quiet minute after the wait starts the count again), so a
// loop guessing keys cannot keep the target busy. Connections refused
// while waiting are closed at accept, before they cost a controller.
#pragma once
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <string>

namespace mpnvme::target {

class AuthBackoff {
public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kFirst{1}, kMax{64}, kForget{60};

  // "ADDR:PORT" or "[ADDR]:PORT" (peer names): the address alone.
  static std::string address(const std::string &peer) {
    const size_t colon = peer.rfind(':');
    std::string a = colon == std::string::npos ? peer : peer.substr(0, colon);
    if (a.size() > 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
    return a;
  }

  void failed(const std::string &addr, Clock::time_point now) {
    std::lock_guard lk(mu_);
    if (by_addr_.size() >= kPruneAt) prune(now);
    Entry &e = by_addr_[addr];
    if (e.failures && now > e.until + kForget) e.failures = 0;
    const auto wait = std::min<Clock::duration>(kMax, kFirst * (1u << std::min(e.failures, 6u)));
    e.failures++;
    e.until = now + wait;
    e.logged = false;
  }

  // Whether `addr` must wait; `log_it` is set for the first refusal of a wait.
  bool waiting(const std::string &addr, Clock::time_point now, bool *log_it) {
    std::lock_guard lk(mu_);
    const auto it = by_addr_.find(addr);
    if (it == by_addr_.end() || now >= it->second.until) return false;
    *log_it = !it->second.logged;
    it->second.logged = true;
    return true;
  }

  size_t size() {
    std::lock_guard lk(mu_);
    return by_addr_.size();
  }

private:
  // Addresses whose count has been forgotten go once the map is this big:
  // failures from many addresses cannot grow it without bound.
  static constexpr size_t kPruneAt = 1024;
  void prune(Clock::time_point now) {
    std::erase_if(by_addr_, [now](const auto &kv) { return now > kv.second.until + kForget; });
  }
  struct Entry {
    unsigned failures = 0;
    Clock::time_point until{};
    bool logged = false;
  };
  std::mutex mu_;
  std::map<std::string, Entry> by_addr_;
};

} // namespace mpnvme::target
