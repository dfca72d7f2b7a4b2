// SPDX-License-Identifier: GPL-2.0-only
#include "lib/net/sock.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/mptcp.h>
#include <memory>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#ifndef SOL_MPTCP
#define SOL_MPTCP 284
#endif

namespace mpnvme {

const char *transport_name(Transport t) { return t == Transport::Mptcp ? "mptcp" : "tcp"; }

Fd &Fd::operator=(Fd &&o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}
Fd::~Fd() { reset(); }
void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

static SocketError sys_error(SocketStep step, const PathAddr &to, const std::string &what, int err) {
  return SocketError(step, fmt::format("{}: {}: {}", to.display(), what, strerror(err)));
}

static void set_int(int fd, int level, int name, int value, const PathAddr &to, const char *what) {
  if (setsockopt(fd, level, name, &value, sizeof value) < 0) throw sys_error(SocketStep::Option, to, what, errno);
}

using AddrInfo = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;

// Resolve `at` (numeric or a name; IPv6 when bracketed) for a stream socket.
static AddrInfo resolve(const PathAddr &at, bool passive) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  hints.ai_family = at.ipv6 ? AF_INET6 : AF_UNSPEC;
  addrinfo *res = nullptr;
  if (int rc = getaddrinfo(at.addr.c_str(), at.service.c_str(), &hints, &res); rc != 0)
    throw SocketError(SocketStep::Resolve, fmt::format("{}: cannot resolve address: {}", at.display(), gai_strerror(rc)));
  return AddrInfo(res, freeaddrinfo);
}

// A non-blocking MPTCP or TCP stream socket. A kernel without MPTCP throws
// MptcpUnavailable, to which the caller adds how its user asks for TCP.
static Fd open_stream(const PathAddr &at, int family, Transport transport) {
  Fd fd(
      ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, transport == Transport::Mptcp ? IPPROTO_MPTCP : IPPROTO_TCP));
  if (fd) return fd;
  if (transport == Transport::Mptcp && (errno == EPROTONOSUPPORT || errno == EINVAL || errno == ENOPROTOOPT))
    throw MptcpUnavailable(
        fmt::format("{}: MPTCP socket: {} (a kernel without MPTCP, or net.mptcp.enabled=0)", at.display(), strerror(errno)));
  throw sys_error(SocketStep::Open, at, "socket", errno);
}

Fd connect_stream(const PathAddr &to, const SocketSettings &s) {
  const AddrInfo res = resolve(to, false);
  Fd fd = open_stream(to, res->ai_family, s.transport);
  apply_priority(fd.get(), res->ai_family == AF_INET6, s.priority, s.tos, to.display());
  set_nodelay(fd.get(), to.display());

  if (!s.host_iface.empty() &&
      setsockopt(fd.get(), SOL_SOCKET, SO_BINDTODEVICE, s.host_iface.c_str(), static_cast<socklen_t>(s.host_iface.size())) < 0)
    throw sys_error(SocketStep::Device, to, fmt::format("bind to device {} (SO_BINDTODEVICE)", s.host_iface), errno);
  if (!s.host_traddr.empty()) {
    addrinfo bh{};
    bh.ai_family = res->ai_family;
    bh.ai_socktype = SOCK_STREAM;
    bh.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
    addrinfo *b = nullptr;
    if (getaddrinfo(s.host_traddr.c_str(), nullptr, &bh, &b) != 0)
      throw SocketError(SocketStep::Source, fmt::format("{}: source address {} is not a numeric address of the target's family",
                                                        to.display(), s.host_traddr));
    int rc = ::bind(fd.get(), b->ai_addr, b->ai_addrlen);
    int err = errno;
    freeaddrinfo(b);
    if (rc < 0) throw sys_error(SocketStep::Source, to, fmt::format("bind to source address {}", s.host_traddr), err);
  }

  if (::connect(fd.get(), res->ai_addr, res->ai_addrlen) < 0 && errno != EINPROGRESS)
    throw sys_error(SocketStep::Connect, to, "connect", errno);
  pollfd p{fd.get(), POLLOUT, 0};
  int n;
  do
    n = ::poll(&p, 1, static_cast<int>(s.connect_timeout.count()));
  while (n < 0 && errno == EINTR);
  if (n == 0) throw sys_error(SocketStep::Connect, to, "connect", ETIMEDOUT);
  int soerr = 0;
  socklen_t len = sizeof soerr;
  getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
  if (soerr) throw sys_error(SocketStep::Connect, to, "connect", soerr);
  return fd;
}

void set_nodelay(int fd, const std::string &what) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
    throw SocketError(SocketStep::Option, fmt::format("{}: TCP_NODELAY: {}", what, strerror(errno)));
}

void apply_priority(int fd, bool ipv6, std::optional<unsigned> priority, std::optional<unsigned> tos, const std::string &what) {
  auto set = [&](SocketStep step, int level, int name, unsigned v, const char *opt) {
    int value = static_cast<int>(v);
    if (setsockopt(fd, level, name, &value, sizeof value) < 0)
      throw SocketError(step, fmt::format("{}: {} {}: {}", what, opt, v, strerror(errno)));
  };
  // TOS first, then priority: on TCP, IP_TOS rewrites sk_priority.
  if (tos) {
    if (ipv6)
      set(SocketStep::Tos, IPPROTO_IPV6, IPV6_TCLASS, *tos, "IPV6_TCLASS");
    else
      set(SocketStep::Tos, IPPROTO_IP, IP_TOS, *tos, "IP_TOS");
  }
  if (priority) set(SocketStep::Priority, SOL_SOCKET, SO_PRIORITY, *priority, "SO_PRIORITY");
}

Fd listen_stream(const PathAddr &at, Transport transport, int backlog) {
  const AddrInfo res = resolve(at, true);
  Fd fd = open_stream(at, res->ai_family, transport);
  set_int(fd.get(), SOL_SOCKET, SO_REUSEADDR, 1, at, "SO_REUSEADDR");
  if (res->ai_family == AF_INET6) set_int(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, 1, at, "IPV6_V6ONLY");
  if (::bind(fd.get(), res->ai_addr, res->ai_addrlen) < 0) throw sys_error(SocketStep::Listen, at, "bind", errno);
  if (::listen(fd.get(), backlog) < 0) throw sys_error(SocketStep::Listen, at, "listen", errno);
  return fd;
}

unsigned wait_for_subflows(int fd, std::chrono::milliseconds settle, std::chrono::milliseconds limit) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto changed = start;
  MptcpState st = query_mptcp(fd);
  if (!st.mptcp) return 0;
  for (auto now = start; now - changed < settle && now - start < limit; now = Clock::now()) {
    ::poll(nullptr, 0, 2);
    const MptcpState s = query_mptcp(fd);
    if (s.subflows != st.subflows) changed = Clock::now();
    st = s;
  }
  return st.subflows + 1;
}

MptcpState query_mptcp(int fd) {
  MptcpState st;
  mptcp_info info{};
  socklen_t len = sizeof info;
  // Fails with EOPNOTSUPP on plain TCP sockets and on MPTCP sockets that fell back to TCP.
  if (getsockopt(fd, SOL_MPTCP, MPTCP_INFO, &info, &len) == 0 && len > 0) {
    st.mptcp = true;
    st.subflows = info.mptcpi_subflows;
    st.subflows_max = info.mptcpi_subflows_max;
    st.add_addr_accepted = info.mptcpi_add_addr_accepted;
    st.add_addr_accepted_max = info.mptcpi_add_addr_accepted_max;
    // Older kernels return a shorter struct: only what `len` covers is theirs.
    st.has_local_addr = len >= offsetof(mptcp_info, mptcpi_local_addr_max) + sizeof info.mptcpi_local_addr_max;
    if (st.has_local_addr) st.local_addr_max = info.mptcpi_local_addr_max;
  }
  return st;
}

} // namespace mpnvme
