// SPDX-License-Identifier: GPL-2.0-only
// mpnvme-floor sink / stream: the raw-transport control of a bench cell.
// The same lab, the same connections (one per path, or one for all), the
// same direction and the same time as the engine's run, with nothing but
// sockets: what the transport itself carries there. `sink` runs in the
// target namespace and serves every path address; `stream` runs in the
// host namespace and measures, after a ramp, the bytes its connections
// moved.
#include "floor_stream.hpp"

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

#include "sock.hpp"

namespace mpnvme::floor {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kRead = 'R';  // the sink sends (an NVMe read: target to host)
constexpr char kWrite = 'W'; // the sink receives (a write)

void set_blocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK); }

// Send `buf` until the peer goes away; receive until it closes.
void pump_out(int fd, const std::vector<uint8_t> &buf, std::atomic<uint64_t> *count) {
  for (;;) {
    const ssize_t r = ::send(fd, buf.data(), buf.size(), MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
    if (count) count->fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
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
      pump_out(fd, buf, nullptr);
    else
      pump_in(fd, buf, nullptr);
  }
  ::close(fd);
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
                      size_t chunk) {
  SocketSettings s;
  s.transport = transport;
  std::vector<Fd> conns;
  for (const PathAddr &a : to) {
    conns.push_back(connect_stream(a, s));
    set_blocking(conns.back().get());
    const char dir = read ? kRead : kWrite;
    if (::send(conns.back().get(), &dir, 1, MSG_NOSIGNAL) != 1)
      throw std::runtime_error(fmt::format("{}: send: {}", a.display(), strerror(errno)));
  }
  std::vector<std::atomic<uint64_t>> moved(conns.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < conns.size(); i++)
    threads.emplace_back([&, i, fd = conns[i].get()] {
      std::vector<uint8_t> buf(chunk, 0x77);
      if (read)
        pump_in(fd, buf, &moved[i]);
      else
        pump_out(fd, buf, &moved[i]);
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
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
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
  for (Fd &c : conns)
    ::shutdown(c.get(), SHUT_RDWR);
  for (auto &t : threads)
    t.join();
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
          {"per_connection_mib_s", per}};
}

} // namespace mpnvme::floor
