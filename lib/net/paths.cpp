// SPDX-License-Identifier: GPL-2.0-only
#include "lib/net/paths.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

namespace mpnvme {

std::string PathAddr::display() const {
  return ipv6 ? fmt::format("[{}]:{}", addr, service) : fmt::format("{}:{}", addr, service);
}

bool valid_port(const std::string &s) {
  if (s.empty() || s.size() > 5) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  const int v = std::stoi(s);
  return v >= 1 && v <= 65535;
}

static bool is_ipv6(const std::string &a) {
  in6_addr tmp;
  return inet_pton(AF_INET6, a.c_str(), &tmp) == 1;
}

static PathAddr parse_entry(const std::string &e, const std::string &default_port, const std::string &option) {
  auto fail = [&](const char *why) {
    return std::invalid_argument(
        fmt::format("{}: bad path '{}': {} (accepted: ADDR, ADDR:PORT, [IPV6]:PORT, comma-separated)", option, e, why));
  };
  PathAddr p;
  if (e.empty()) throw fail("empty entry");
  if (e.front() == '[') {
    const auto close = e.find(']');
    if (close == std::string::npos) throw fail("missing ']'");
    p.addr = e.substr(1, close - 1);
    if (!is_ipv6(p.addr)) throw fail("not an IPv6 address inside []");
    p.ipv6 = true;
    const std::string rest = e.substr(close + 1);
    if (rest.empty())
      p.service = default_port;
    else if (rest.front() == ':')
      p.service = rest.substr(1);
    else
      throw fail("text after ']' must be ':PORT'");
  } else if (is_ipv6(e)) { // bare IPv6 address without port
    p.addr = e;
    p.ipv6 = true;
    p.service = default_port;
  } else {
    const auto colon = e.find(':');
    if (colon == std::string::npos) {
      p.addr = e;
      p.service = default_port;
    } else {
      p.addr = e.substr(0, colon);
      p.service = e.substr(colon + 1);
    }
    if (p.addr.empty()) throw fail("empty address");
  }
  if (!valid_port(p.service)) throw fail("port must be a number from 1 to 65535");
  return p;
}

std::vector<PathAddr> parse_paths(const std::string &traddr, const std::string &default_port, const std::string &option) {
  if (traddr.empty())
    throw std::invalid_argument(fmt::format("{}: required (the target address, e.g. {}=192.0.2.1)", option, option));
  std::vector<PathAddr> out;
  size_t start = 0;
  while (start <= traddr.size()) {
    size_t comma = traddr.find(',', start);
    if (comma == std::string::npos) comma = traddr.size();
    out.push_back(parse_entry(traddr.substr(start, comma - start), default_port, option));
    start = comma + 1;
  }
  return out;
}

} // namespace mpnvme
