// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/numa.hpp"

#include <arpa/inet.h>
#include <cstring>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>
#include <sstream>
#include <sys/socket.h>
#include <vector>

#include "lib/base/first_line.hpp"

namespace mpnvme::host {

int current_numa_node() {
  unsigned cpu = 0, node = 0;
  if (getcpu(&cpu, &node) != 0) return -1;
  return static_cast<int>(node);
}

std::string interface_of_socket(int fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr *>(&local), &len) != 0) return "";
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs *i = list; i && name.empty(); i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != local.ss_family) continue;
    if (local.ss_family == AF_INET) {
      auto *a = reinterpret_cast<const sockaddr_in *>(i->ifa_addr), *b = reinterpret_cast<const sockaddr_in *>(&local);
      if (a->sin_addr.s_addr == b->sin_addr.s_addr) name = i->ifa_name;
    } else if (local.ss_family == AF_INET6) {
      auto *a = reinterpret_cast<const sockaddr_in6 *>(i->ifa_addr), *b = reinterpret_cast<const sockaddr_in6 *>(&local);
      if (std::memcmp(&a->sin6_addr, &b->sin6_addr, sizeof a->sin6_addr) == 0) name = i->ifa_name;
    }
  }
  freeifaddrs(list);
  return name;
}

int interface_numa_node(const std::string &ifname) {
  if (ifname.empty() || ifname.find('/') != std::string::npos) return -1;
  const std::string v = read_first_line(fmt::format("/sys/class/net/{}/device/numa_node", ifname));
  if (v.empty()) return -1;
  try {
    return std::stoi(v);
  } catch (...) {
    return -1;
  }
}

int numa_distance(int from, int to) {
  if (from < 0 || to < 0) return kLocalDistance;
  std::istringstream in(read_first_line(fmt::format("/sys/devices/system/node/node{}/distance", from)));
  std::vector<int> d;
  for (int x; in >> x;)
    d.push_back(x);
  return to < static_cast<int>(d.size()) ? d[static_cast<size_t>(to)] : kLocalDistance;
}

} // namespace mpnvme::host
