// SPDX-License-Identifier: GPL-2.0-only
#include "lib/config/host_identity.hpp"

#include "lib/base/first_line.hpp"

#include <fmt/format.h>
#include <fstream>
#include <mutex>
#include <stdexcept>

namespace mpnvme {

bool parse_uuid(const std::string &s, std::array<uint8_t, 16> &out) {
  std::string hex;
  for (char c : s)
    if (c != '-') hex += c;
  if (hex.size() != 32 || s.size() != 36) return false;
  for (size_t i = 0; i < 16; i++) {
    unsigned v;
    if (sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return false;
    out[i] = static_cast<uint8_t>(v);
  }
  return true;
}

std::string format_uuid(const std::array<uint8_t, 16> &u) {
  std::string s;
  for (size_t i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", u[i]);
  }
  return s;
}

// One generated identity per process: every queue and every fio job thread
// of this process presents the same host.
static const std::string &generated_uuid() {
  static std::once_flag once;
  static std::string uuid;
  std::call_once(once, [] { uuid = read_first_line("/proc/sys/kernel/random/uuid"); });
  return uuid;
}

HostIdentity resolve_host_identity(const std::string &hostnqn, const std::string &hostid, const HostIdentityFiles &files) {
  HostIdentity id;
  id.hostnqn = hostnqn.empty() ? read_first_line(files.hostnqn) : hostnqn;
  if (id.hostnqn.empty()) id.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:" + generated_uuid();
  if (id.hostnqn.size() > 223) throw std::invalid_argument("hostnqn: longer than 223 bytes");

  std::string idtext = hostid.empty() ? read_first_line(files.hostid) : hostid;
  if (idtext.empty()) { // nvme-cli derives the host ID from a uuid hostnqn
    const auto pos = id.hostnqn.find(":uuid:");
    idtext = pos != std::string::npos ? id.hostnqn.substr(pos + 6) : generated_uuid();
  }
  if (!parse_uuid(idtext, id.hostid))
    throw std::invalid_argument(
        fmt::format("hostid: '{}' is not a UUID (expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", idtext));
  return id;
}

} // namespace mpnvme
