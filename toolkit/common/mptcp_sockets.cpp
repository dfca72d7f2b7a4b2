// SPDX-License-Identifier: GPL-2.0-only
#include "toolkit/common/mptcp_sockets.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

namespace mpnvme::toolkit {

namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

std::string numeric(int family, const __be32 *addr) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, addr, text, sizeof text);
  return text;
}

// One family's established MPTCP sockets, appended to `out`.
void dump_family(int nl, int family, std::vector<MptcpPeer> &out) {
  // sdiag_protocol is one byte: MPTCP (262) goes in INET_DIAG_REQ_PROTOCOL.
  struct {
    nlmsghdr nh;
    inet_diag_req_v2 req;
    rtattr proto_attr;
    uint32_t proto;
  } msg{};
  msg.nh.nlmsg_len = sizeof msg;
  msg.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  msg.req.sdiag_family = static_cast<uint8_t>(family);
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = 1u << TCP_ESTABLISHED;
  msg.proto_attr.rta_type = INET_DIAG_REQ_PROTOCOL;
  msg.proto_attr.rta_len = RTA_LENGTH(sizeof msg.proto);
  msg.proto = IPPROTO_MPTCP;
  if (send(nl, &msg, sizeof msg, 0) != static_cast<ssize_t>(sizeof msg)) return;
  alignas(nlmsghdr) char buf[16384];
  for (;;) {
    const ssize_t n = recv(nl, buf, sizeof buf, 0);
    if (n <= 0) return;
    int left = static_cast<int>(n);
    for (auto *h = reinterpret_cast<nlmsghdr *>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) return;
      const auto *m = static_cast<const inet_diag_msg *>(NLMSG_DATA(h));
      out.push_back({numeric(family, m->id.idiag_dst), numeric(family, m->id.idiag_src), ntohs(m->id.idiag_dport)});
    }
  }
}

} // namespace

std::vector<MptcpPeer> mptcp_connections() {
  std::vector<MptcpPeer> out;
  Fd nl{socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)};
  if (nl.fd < 0) return out;
  dump_family(nl.fd, AF_INET, out);
  dump_family(nl.fd, AF_INET6, out);
  return out;
}

std::string address_field(const std::string &address, const std::string &key) {
  size_t at = 0;
  while (at < address.size()) {
    const size_t end = std::min(address.find(',', at), address.size());
    const std::string kv = address.substr(at, end - at);
    if (kv.rfind(key + "=", 0) == 0) return kv.substr(key.size() + 1);
    at = end + 1;
  }
  return {};
}

std::string controller_transport(const std::string &transport, const std::string &address, const std::vector<MptcpPeer> &mptcp) {
  if (transport != "tcp") return transport;
  const std::string traddr = address_field(address, "traddr"), src = address_field(address, "src_addr");
  const std::string port = address_field(address, "trsvcid");
  const bool over_mptcp = std::any_of(mptcp.begin(), mptcp.end(), [&](const MptcpPeer &p) {
    return p.remote_addr == traddr && std::to_string(p.remote_port) == port && (src.empty() || p.local_addr == src);
  });
  return over_mptcp ? "mptcp" : transport;
}

} // namespace mpnvme::toolkit
