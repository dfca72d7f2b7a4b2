// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/transport/reflected_tos.hpp"

#include <cstring>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/net/sock.hpp"

namespace mpnvme::target {

std::optional<unsigned> reflected_tos(int fd) {
  sockaddr_storage local{}, peer{};
  socklen_t ll = sizeof local, pl = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr *>(&local), &ll) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &pl) != 0)
    return std::nullopt;
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof msg;
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST;
  inet_diag_req_v2 &r = msg.req;
  r.sdiag_family = static_cast<uint8_t>(local.ss_family);
  r.sdiag_protocol = IPPROTO_TCP;
  r.idiag_ext = 1u << (INET_DIAG_TOS - 1);
  r.idiag_states = ~0u;
  r.id.idiag_cookie[0] = r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  if (local.ss_family == AF_INET) {
    auto *l = reinterpret_cast<sockaddr_in *>(&local), *p = reinterpret_cast<sockaddr_in *>(&peer);
    r.id.idiag_sport = l->sin_port;
    r.id.idiag_dport = p->sin_port;
    std::memcpy(r.id.idiag_src, &l->sin_addr, 4);
    std::memcpy(r.id.idiag_dst, &p->sin_addr, 4);
  } else {
    auto *l = reinterpret_cast<sockaddr_in6 *>(&local), *p = reinterpret_cast<sockaddr_in6 *>(&peer);
    r.id.idiag_sport = l->sin6_port;
    r.id.idiag_dport = p->sin6_port;
    std::memcpy(r.id.idiag_src, &l->sin6_addr, 16);
    std::memcpy(r.id.idiag_dst, &p->sin6_addr, 16);
  }
  Fd nl(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!nl || ::send(nl.get(), &msg, sizeof msg, 0) != static_cast<ssize_t>(sizeof msg)) return std::nullopt;
  alignas(nlmsghdr) char buf[8192];
  ssize_t n = ::recv(nl.get(), buf, sizeof buf, 0);
  if (n <= 0) return std::nullopt;
  for (auto *h = reinterpret_cast<nlmsghdr *>(buf); NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
    if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY) return std::nullopt; // NLMSG_ERROR: no such socket
    auto *m = static_cast<inet_diag_msg *>(NLMSG_DATA(h));
    int len = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
    for (auto *a = reinterpret_cast<rtattr *>(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len))
      if (a->rta_type == INET_DIAG_TOS) return *static_cast<uint8_t *>(RTA_DATA(a));
  }
  return std::nullopt;
}

} // namespace mpnvme::target
