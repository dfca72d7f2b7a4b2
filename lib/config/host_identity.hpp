// SPDX-License-Identifier: GPL-2.0-only
// Host NQN and host ID defaults, as nvme-cli resolves them: /etc/nvme/hostnqn
// and /etc/nvme/hostid, else a UUID-based NQN generated once per process.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace mpnvme {

struct HostIdentity {
  std::string hostnqn;
  std::array<uint8_t, 16> hostid{};
  bool operator==(const HostIdentity &) const = default;
};

// Where the defaults come from (nvme-cli's files).
struct HostIdentityFiles {
  std::string hostnqn = "/etc/nvme/hostnqn";
  std::string hostid = "/etc/nvme/hostid";
};

// Empty arguments select the defaults, in nvme-cli's order: the files, then
// the UUID inside a uuid-style host NQN, then one generated per process.
// Throws std::invalid_argument naming the `hostid` option for a bad UUID.
HostIdentity resolve_host_identity(const std::string &hostnqn, const std::string &hostid, const HostIdentityFiles &files = {});
bool parse_uuid(const std::string &s, std::array<uint8_t, 16> &out);
std::string format_uuid(const std::array<uint8_t, 16> &u);

} // namespace mpnvme
