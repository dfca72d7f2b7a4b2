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
};

// Empty arguments select the defaults. Throws std::invalid_argument naming
// the `hostid` option for a malformed UUID.
HostIdentity resolve_host_identity(const std::string &hostnqn, const std::string &hostid);
bool parse_uuid(const std::string &s, std::array<uint8_t, 16> &out);
std::string format_uuid(const std::array<uint8_t, 16> &u);

} // namespace mpnvme
