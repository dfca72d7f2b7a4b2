// SPDX-License-Identifier: GPL-2.0-only
// Where an accepted connection goes: refused while its address backs off
// after a failed authentication, else to the event loop with the fewest
// I/O queues (handed over through its inbox when that is another loop).
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

void Reactor::on_accept(Op &op, int res) {
  Listener &l = listeners_[op.listener];
  l.armed = false;
  if (res >= 0 && (l.port->disabled || stop_)) {
    ::close(res);
  } else if (res >= 0 && waits_after_failed_authentication(peer_name(l.addr), l.port->cfg.id)) {
    ::close(res);
  } else if (res >= 0) {
    const std::string peer = peer_name(l.addr);
    Reactor &to = least_loaded();
    if (&to == this)
      start(res, *l.port, peer);
    else
      to.adopt(res, *l.port, peer);
  } else if (res != -ECANCELED && !stop_) {
    log().warn("port {}: accept: {}", l.port->cfg.id, strerror(-res));
  }
  if (!stop_) arm_accept(op.listener);
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
