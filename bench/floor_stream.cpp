// SPDX-License-Identifier: GPL-2.0-only
// mpnvme-floor sink / stream: the raw-transport control of a bench cell.
// The same lab, the same connections (one per path, or one for all), the
// same direction and the same time as the engine's run, with nothing but
// sockets: what the transport itself carries there. `sink` runs in the
// target namespace and serves every path address; `stream` runs in the
// host namespace and measures, after a ramp, the bytes its connections
// moved.
//
// A control ends only when its connections are gone: the host sends its
// FIN, the sink stops sending when it sees it, and both sides read what is
// still in flight up to the other's FIN. A control that shut its sockets
// and left had the sink's subflows still sending into the host's orphaned
// sockets, and slowed the engine run after it (docs/measurements.md, "How
// the bench measures a cell"): the next run must start on idle paths.
#include "bench/floor_stream.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "lib/net/sock.hpp"

namespace mpnvme::floor {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kRead = 'R';  // the sink sends (an NVMe read: target to host)
constexpr char kWrite = 'W'; // the sink receives (a write)

void set_blocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK); }

// How long a side waits for the other's FIN once the measurement is over:
// what a socket buffer holds crosses a 100 Mbit path in well under that.
constexpr int kDrainMs = 10000;

// Send `buf` until `stop` is set (never, without one) or the peer goes away
// (its FIN, an error).
void pump_out(int fd, const std::vector<uint8_t> &buf, std::atomic<uint64_t> *count, const std::atomic<bool> *stop) {
  while (!(stop && stop->load(std::memory_order_relaxed))) {
    pollfd p{fd, POLLOUT | POLLRDHUP, 0};
    if (::poll(&p, 1, 100) < 0 && errno != EINTR) return;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return;
    if (!(p.revents & POLLOUT)) continue;
    const ssize_t r = ::send(fd, buf.data(), buf.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r <= 0) return;
    if (count) count->fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
  }
}

// A receive that waits longer than kDrainMs fails (EAGAIN): a peer that
// never sends its FIN cannot hold a control forever.
void bound_receives(int fd) {
  const timeval limit{kDrainMs / 1000, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
}

// Our FIN, then what is still in flight up to the peer's FIN (bounded).
void finish(int fd, std::vector<uint8_t> &buf) {
  ::shutdown(fd, SHUT_WR);
  bound_receives(fd);
  for (;;) {
    const ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
  }
}

void pump_in(int fd, std::vector<uint8_t> &buf, std::atomic<uint64_t> *count) {
  for (;;) {
    const ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
    if (count) count->fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
  }
}

void serve(int fd, size_t chunk) {
  char dir = 0;
  if (::recv(fd, &dir, 1, MSG_WAITALL) == 1) {
    std::vector<uint8_t> buf(chunk, 0x5a);
    if (dir == kRead)
      pump_out(fd, buf, nullptr, nullptr); // until the host's FIN
    else
      pump_in(fd, buf, nullptr);
    finish(fd, buf);
  }
  ::close(fd);
}

// With an interval: the connections' sum in each one from t0 to end, to
// see a stall shorter than the run (a path's failure and return).
template <typename Snapshot>
nlohmann::json interval_rates(Snapshot &snapshot, std::vector<uint64_t> prev, Clock::time_point t0, Clock::time_point end,
                              unsigned interval_ms) {
  nlohmann::json rates = nlohmann::json::array();
  if (interval_ms == 0) return rates;
  for (auto at = t0; at < end;) {
    at = std::min(end, at + std::chrono::milliseconds(interval_ms));
    std::this_thread::sleep_until(at);
    const std::vector<uint64_t> now = snapshot();
    uint64_t bytes = 0;
    for (size_t i = 0; i < now.size(); i++)
      bytes += now[i] - prev[i];
    rates.push_back(static_cast<double>(bytes) / 1048576 / (interval_ms / 1000.0));
    prev = now;
  }
  return rates;
}

} // namespace

void sink(const std::vector<PathAddr> &at, Transport transport, size_t chunk) {
  std::vector<Fd> listeners;
  std::vector<pollfd> pfds;
  for (const PathAddr &a : at) {
    listeners.push_back(listen_stream(a, transport));
    pfds.push_back({listeners.back().get(), POLLIN, 0});
  }
  fmt::print(stderr, "mpnvme-floor: sink ready on {} address(es)\n", at.size());
  for (;;) {
    if (::poll(pfds.data(), pfds.size(), -1) < 0 && errno != EINTR)
      throw std::runtime_error(fmt::format("poll: {}", strerror(errno)));
    for (const pollfd &p : pfds) {
      if (!(p.revents & POLLIN)) continue;
      const int fd = ::accept4(p.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      set_blocking(fd);
      std::thread(serve, fd, chunk).detach();
    }
  }
}

nlohmann::json stream(const std::vector<PathAddr> &to, Transport transport, bool read, double ramp_s, double seconds,
                      size_t chunk, unsigned interval_ms) {
  SocketSettings s;
  s.transport = transport;
  std::vector<Fd> conns;
  for (const PathAddr &a : to) {
    conns.push_back(connect_stream(a, s));
    set_blocking(conns.back().get());
    bound_receives(conns.back().get());
    const char dir = read ? kRead : kWrite;
    if (::send(conns.back().get(), &dir, 1, MSG_NOSIGNAL) != 1)
      throw std::runtime_error(fmt::format("{}: send: {}", a.display(), strerror(errno)));
  }
  std::vector<std::atomic<uint64_t>> moved(conns.size());
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < conns.size(); i++)
    threads.emplace_back([&, i, fd = conns[i].get()] {
      std::vector<uint8_t> buf(chunk, 0x77);
      if (read)
        pump_in(fd, buf, &moved[i]); // until the sink's FIN, after ours
      else
        pump_out(fd, buf, &moved[i], &stop);
    });
  auto snapshot = [&] {
    std::vector<uint64_t> v;
    for (auto &m : moved)
      v.push_back(m.load(std::memory_order_relaxed));
    return v;
  };
  std::this_thread::sleep_for(std::chrono::duration<double>(ramp_s));
  const auto t0 = Clock::now();
  const auto b0 = snapshot();
  const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const nlohmann::json intervals = interval_rates(snapshot, b0, t0, end, interval_ms);
  std::this_thread::sleep_until(end);
  const auto b1 = snapshot();
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  nlohmann::json per = nlohmann::json::array(), subflows = nlohmann::json::array();
  double total = 0;
  bool all_mptcp = true;
  for (size_t i = 0; i < conns.size(); i++) {
    const double mib_s = static_cast<double>(b1[i] - b0[i]) / took / 1048576;
    per.push_back(mib_s);
    total += mib_s;
    const MptcpState st = query_mptcp(conns[i].get());
    subflows.push_back(st.mptcp ? st.subflows + 1 : 0);
    all_mptcp = all_mptcp && st.mptcp;
  }
  stop = true;
  if (read)
    for (Fd &c : conns)
      ::shutdown(c.get(), SHUT_WR);
  for (auto &t : threads)
    t.join();
  if (!read) {
    std::vector<uint8_t> buf(chunk);
    for (Fd &c : conns)
      finish(c.get(), buf);
  }
  return {{"test", "stream"},
          {"direction", read ? "read" : "write"},
          {"transport", transport_name(transport)},
          {"mptcp_in_effect", all_mptcp && transport == Transport::Mptcp},
          {"connections", conns.size()},
          {"subflows", subflows},
          {"chunk_bytes", chunk},
          {"ramp_s", ramp_s},
          {"seconds", took},
          {"mib_s", total},
          {"per_connection_mib_s", per},
          {"interval_ms", interval_ms},
          {"intervals_mib_s", intervals}};
}

} // namespace mpnvme::floor
