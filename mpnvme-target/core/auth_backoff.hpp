// SPDX-License-Identifier: GPL-2.0-only
// Failed authentications slow their source down: after a failure an
// address may not connect for the first wait (1 s unless --auth-backoff
// says otherwise), doubling with each failure in a row up to 64 times that
// (a quiet 60 first waits after the wait starts the count again), so a loop
// guessing keys cannot keep the target busy. Connections refused while
// waiting are closed at accept, before they cost a controller. The control
// socket lists the waiting addresses and forgives one.
#pragma once
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace mpnvme::target {

class AuthBackoff {
public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kDefaultFirst{1000};

  // first: the wait after one failure; zero turns the backoff off.
  explicit AuthBackoff(std::chrono::milliseconds first = kDefaultFirst) : first_(first) {}

  // "ADDR:PORT" or "[ADDR]:PORT" (peer names): the address alone.
  static std::string address(const std::string &peer) {
    const size_t colon = peer.rfind(':');
    std::string a = colon == std::string::npos ? peer : peer.substr(0, colon);
    if (a.size() > 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
    return a;
  }

  void failed(const std::string &addr, Clock::time_point now) {
    if (first_.count() == 0) return;
    std::lock_guard lk(mu_);
    if (by_addr_.size() >= kPruneAt) prune(now);
    Entry &e = by_addr_[addr];
    if (e.failures && now > e.until + forget()) e.failures = 0;
    const auto wait = first_ * (1u << std::min(e.failures, 6u)); // at most 64 first waits
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

  struct Waiting {
    std::string addr;
    unsigned failures;
    Clock::duration left;
  };
  // The addresses that must still wait at `now`.
  std::vector<Waiting> waiting_now(Clock::time_point now) {
    std::lock_guard lk(mu_);
    std::vector<Waiting> out;
    for (const auto &[addr, e] : by_addr_)
      if (now < e.until) out.push_back({addr, e.failures, e.until - now});
    return out;
  }

  // An operator's pardon (a host whose key was fixed): `addr` connects
  // again at once and its count starts over. False: it was not known.
  bool forgive(const std::string &addr) {
    std::lock_guard lk(mu_);
    return by_addr_.erase(addr) > 0;
  }

private:
  // Addresses whose count has been forgotten go once the map is this big:
  // failures from many addresses cannot grow it without bound.
  static constexpr size_t kPruneAt = 1024;
  void prune(Clock::time_point now) {
    std::erase_if(by_addr_, [now, this](const auto &kv) { return now > kv.second.until + forget(); });
  }
  struct Entry {
    unsigned failures = 0;
    Clock::time_point until{};
    bool logged = false;
  };
  Clock::duration forget() const { return first_ * 60; }
  const std::chrono::milliseconds first_;
  std::mutex mu_;
  std::map<std::string, Entry> by_addr_;
};

} // namespace mpnvme::target
