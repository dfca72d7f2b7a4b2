// SPDX-License-Identifier: GPL-2.0-only
// Where an accepted connection goes: refused while its address backs off
// after a failed authentication or over the connection budget, else to the
// event loop with the fewest I/O queues (handed over through its inbox
// when that is another loop). An accept that fails for want of
// descriptors or memory pauses its listener a while.
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <unistd.h>

#include "lib/base/log.hpp"
#include "mpnvme-target/transport/reactor.hpp"

namespace mpnvme::target {

std::string peer_name(const sockaddr_storage &ss) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    auto *a = reinterpret_cast<const sockaddr_in *>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    return fmt::format("{}:{}", buf, ntohs(a->sin_port));
  }
  auto *a = reinterpret_cast<const sockaddr_in6 *>(&ss);
  inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
  return fmt::format("[{}]:{}", buf, ntohs(a->sin6_port));
}

bool Reactor::waits_after_failed_authentication(const std::string &peer, uint16_t port) {
  bool log_it = false;
  const std::string addr = AuthBackoff::address(peer);
  if (!reg_.backoff().waiting(addr, AuthBackoff::Clock::now(), &log_it)) return false;
  if (log_it)
    log().warn("port {}: refusing connections from {} for a while: its last authentication failed (DH-HMAC-CHAP or TLS PSK)",
               port, addr);
  return true;
}

bool Reactor::within_budget(const std::string &addr, uint16_t port) {
  std::string line;
  if (budget_.take(addr, std::chrono::steady_clock::now(), line)) return true;
  if (!line.empty()) log().warn("port {}: refusing connections: {}", port, line);
  return false;
}

void Reactor::on_accept(Op &op, int res) {
  Listener &l = listeners_[op.listener];
  l.armed = false;
  if (res >= 0 && (l.port->disabled || stop_)) {
    ::close(res);
  } else if (res >= 0 && waits_after_failed_authentication(peer_name(l.addr), l.port->cfg.id)) {
    ::close(res);
  } else if (res >= 0 && !within_budget(AuthBackoff::address(peer_name(l.addr)), l.port->cfg.id)) {
    ::close(res);
  } else if (res >= 0) {
    const std::string peer = peer_name(l.addr);
    Reactor &to = least_loaded();
    if (&to == this)
      start(res, *l.port, peer);
    else
      to.adopt(res, *l.port, peer);
  } else if (res != -ECANCELED && !stop_) {
    return accept_failed(l, -res);
  }
  if (!stop_) arm_accept(op.listener);
}

// Out of descriptors or memory, a new accept fails at once again: the
// listener rests for kAcceptPause (the tick takes it up again) and the
// failures are logged once per interval, not once each.
void Reactor::accept_failed(Listener &l, int err) {
  constexpr std::chrono::milliseconds kAcceptPause{100};
  const auto now = std::chrono::steady_clock::now();
  l.failed_since_log++;
  if (now >= l.next_log) {
    log().warn("port {}: accept: {}{}; accepting again in {} ms", l.port->cfg.id, strerror(err),
               l.failed_since_log > 1 ? fmt::format(" ({} times since the last report)", l.failed_since_log) : "",
               kAcceptPause.count());
    l.failed_since_log = 0;
    l.next_log = now + ConnectionBudget::kLogInterval;
  }
  const bool resources = err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
  l.resume_at = resources ? now + kAcceptPause : now;
  if (!resources) arm_accept(l.op.listener);
}

void Reactor::resume_listeners(std::chrono::steady_clock::time_point now) {
  for (size_t i = 0; i < listeners_.size(); i++)
    if (!listeners_[i].armed && !stop_ && now >= listeners_[i].resume_at) arm_accept(i);
}

// The loop with the fewest I/O queues, then the fewest connections. A
// host opens its admin queue, then its I/O queues; the next host does the
// same, and a plain round robin over two loops had put every I/O queue on
// the second one.
Reactor &Reactor::least_loaded() {
  Reactor *best = nullptr;
  for (auto &r : *all_)
    if (!best ||
        std::pair(r->io_queues_.load(), r->assigned_.load()) < std::pair(best->io_queues_.load(), best->assigned_.load()))
      best = r.get();
  best->assigned_++;
  return *best;
}

void Reactor::adopt(int fd, PortState &port, std::string peer) {
  {
    std::lock_guard lk(inbox_mu_);
    inbox_.emplace_back(fd, &port, std::move(peer));
  }
  wake();
}

} // namespace mpnvme::target
