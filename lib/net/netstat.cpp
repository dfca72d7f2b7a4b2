// SPDX-License-Identifier: GPL-2.0-only
#include "lib/net/netstat.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace mpnvme {

// The file holds pairs of lines per group: "Group: Name1 Name2 ..." then
// "Group: value1 value2 ...".
std::optional<uint64_t> netstat_counter(std::istream &in, std::string_view group, std::string_view name) {
  const std::string prefix = std::string(group) + ":";
  std::string names, values;
  while (std::getline(in, names) && std::getline(in, values)) {
    if (names.rfind(prefix, 0) != 0 || values.rfind(prefix, 0) != 0) continue;
    std::istringstream n(names.substr(prefix.size())), v(values.substr(prefix.size()));
    std::string key;
    uint64_t value = 0;
    while (n >> key && v >> value)
      if (key == name) return value;
  }
  return std::nullopt;
}

std::optional<uint64_t> netstat_counter(std::string_view group, std::string_view name) {
  std::ifstream in("/proc/self/net/netstat");
  return netstat_counter(in, group, name);
}

} // namespace mpnvme
