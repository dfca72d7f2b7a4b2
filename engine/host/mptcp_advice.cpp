// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/mptcp_advice.hpp"

#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

namespace mpnvme::host {

std::string one_subflow_advice(const MptcpState &st) {
  // The in-kernel path manager joins a subflow for every address the peer
  // announced and this host accepted, and from every local endpoint with
  // the subflow flag, up to the subflows limit: the first zero in that
  // chain is what stopped it.
  if (st.subflows_max == 0)
    return "the MPTCP path manager allows no additional subflow on this host (limit subflows 0): "
           "`ip mptcp limits set subflows 8 add_addr_accepted 8` here, and the same on the target";
  if (st.add_addr_accepted == 0 && (!st.has_local_addr || st.local_addr_max == 0)) {
    std::string why = "the target announced no address this host accepted, and this host has no MPTCP subflow endpoint: "
                      "on the target `ip mptcp endpoint add ADDR dev IFACE signal` for each other address it listens on";
    if (st.add_addr_accepted_max == 0)
      why += ", and here `ip mptcp limits set add_addr_accepted 8` (it is 0, so announced addresses are ignored)";
    return why + "; or here `ip mptcp endpoint add ADDR dev IFACE subflow` for each other local address";
  }
  return "the path manager has addresses to join but no join came up: check the routes between those addresses, "
         "a firewall dropping MP_JOIN (TCP option 30), and the target's limit (`ip mptcp limits set subflows 8` there); "
         "`nstat -a | grep MPJoin` on both sides counts the attempts";
}

unsigned usable_local_addresses(int family) {
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0) return 0;
  unsigned n = 0;
  for (const ifaddrs *i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != family) continue;
    if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6 *>(i->ifa_addr)->sin6_addr)) continue;
    n++;
  }
  freeifaddrs(list);
  return n;
}

// Why a connection asked for MPTCP and got TCP. The kernel falls back by
// itself after lost MP_CAPABLE SYNs, and then disables MPTCP for every new
// connection of the namespace for net.mptcp.blackhole_timeout (an hour by
// default): a path blackholed while a host connects turns later runs into
// TCP runs. Its MPTcpExt Blackhole counter tells that case apart.
std::string fallback_advice(std::optional<uint64_t> blackholes) {
  if (blackholes && *blackholes > 0)
    return fmt::format("this namespace's kernel disabled MPTCP for new connections after lost MP_CAPABLE SYNs "
                       "({} time(s), MPTcpExt Blackhole); it re-enables it after net.mptcp.blackhole_timeout, "
                       "or at once when that sysctl is written (any value)",
                       *blackholes);
  return "the peer or a middlebox does not speak MPTCP";
}

} // namespace mpnvme::host
