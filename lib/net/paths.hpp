// SPDX-License-Identifier: GPL-2.0-only
// The `traddr` path list shared by the engine, mpnvme-target and the toolkit:
// comma-separated entries, each ADDR, ADDR:PORT, or [IPV6]:PORT. An entry
// without a port uses the shared `trsvcid`.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace mpnvme {

// The IANA port of NVMe/TCP I/O controllers (trsvcid's default everywhere).
inline constexpr const char *kNvmeTcpPort = "4420";

struct PathAddr {
  std::string addr;    // numeric IPv4/IPv6 address or host name, no brackets
  std::string service; // port
  bool ipv6 = false;
  std::string display() const; // ADDR:PORT or [ADDR]:PORT
  bool operator==(const PathAddr &) const = default;
};

// Throws std::invalid_argument naming `option` and the offending entry.
std::vector<PathAddr> parse_paths(const std::string &traddr, const std::string &default_port,
                                  const std::string &option = "traddr");
// Validates a port number string (1..65535).
bool valid_port(const std::string &s);

} // namespace mpnvme
