// SPDX-License-Identifier: GPL-2.0-only
// mpnvme-target configuration: subsystems with namespaces, ports with their
// ANA group states, access control. Built from the command line, from a JSON
// file in nvmetcli's layout, or from the engine options of an fio job file.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/config/jobfile.hpp"
#include "lib/config/target_auth_config.hpp"
#include "lib/config/target_limits.hpp"
#include "lib/config/target_tls_config.hpp"
#include "lib/net/paths.hpp"
#include "lib/net/sock.hpp"
#include "lib/wire/ana.hpp"

namespace mpnvme::target {

enum class Backing { Ram, Null, File };
// ANA groups a port can report (Identify ANAGRPMAX / NANAGRPID).
constexpr uint32_t kMaxAnaGroups = 128;

struct NamespaceConfig {
  uint32_t nsid = 1;
  Backing backing = Backing::Ram;
  std::string path;   // File: regular file or block device
  uint64_t size = 0;  // bytes (Ram, Null; File: from the file)
  uint32_t lba = 512; // 512 or 4096
  uint32_t anagrpid = 1;
  bool enable = true;
  std::array<uint8_t, 16> uuid{}, nguid{};
  std::string spec() const; // ram:SIZE / null:SIZE / file:PATH, for logs
};

struct SubsystemConfig {
  std::string nqn;
  // Any host, unless hosts are named: by an allow list, or by a key
  // (finalize admits only the listed hosts and the hosts with a
  // DH-HMAC-CHAP or TLS key once any host has one, unless the hosts were
  // said exactly).
  bool allow_any_host = true;
  bool allow_any_host_explicit = false; // --allow-any-host, or attr.allow_any_host in JSON: taken as it is
  std::vector<std::string> allowed_hosts;
  // Keyed hosts the control socket denied: their key no longer admits
  // them here (until `host allow` names them again).
  std::set<std::string> denied_hosts;
  std::string serial, model = "mpnvme-target";
  std::vector<NamespaceConfig> namespaces;
  // Controllers at once (`subsystem add ... max-controllers=N`); none: the
  // target's --max-controllers.
  std::optional<uint32_t> max_controllers;
  // The controller IDs this subsystem hands out (nvmet's attr_cntlid_min
  // and attr_cntlid_max): two targets that serve one subsystem NQN to the
  // same host must not both give it controller 1, or Linux refuses the
  // second path as a duplicate. The range bounds the controllers too.
  uint16_t cntlid_min = 1, cntlid_max = 0xffef;
};

struct PortConfig {
  uint16_t id = 1;
  PathAddr addr;
  Transport transport = Transport::Mptcp;
  std::optional<unsigned> sk_priority, tos;
  uint32_t inline_data_size = 16384;
  std::map<uint32_t, AnaState> ana;    // ANA group -> state (absent: optimized)
  std::vector<std::string> subsystems; // NQNs served here; empty = all
  TlsPort tls = TlsPort::None;
  AnaState ana_state(uint32_t grp) const;
};

struct TargetConfig {
  std::vector<SubsystemConfig> subsystems;
  std::vector<PortConfig> ports;
  bool discovery = true;
  bool discovery_trtype_mptcp = false; // MPTCP ports as trtype 4 in the discovery log (--discovery-trtype-mptcp)
  unsigned threads = 1;
  uint32_t queue_entries = 128; // CAP.MQES + 1
  uint32_t max_io_queues = 128;
  // 2^8 * 4 KiB = 1 MiB. nvmet sets no limit over TCP, and hosts send
  // what it takes: blktests' nvme/029 passes 513 KiB through nvme-cli.
  uint8_t mdts = 8;
  uint32_t maxh2cdata = 128 * 1024;
  bool reflect_tos = false; // answer with the TOS of the host's SYN (--reflect-tos)
  bool poll = false;        // event loops spin on their completion queues (--poll)
  HostAuth host_auth;       // hosts that must authenticate (DH-HMAC-CHAP)
  TlsKeys tls_keys;         // hosts that may open a secure channel, with their PSKs
  bool tls_compat = false;  // version 0 identities: older libnvme's derivation (--tls-compat)
  // The wait after a failed authentication, doubling per failure (--auth-backoff; 0: off).
  uint32_t auth_backoff_ms = 1000;
  TargetLimits limits; // what it holds at most (--max-subsystems, ...)
};

// Namespace spec: ram:SIZE | null:SIZE | file:PATH | /dev/... | PATH, with
// optional ",lba=512|4096", ",nsid=N" (1..kMaxNsid) and ",uuid=UUID" (otherwise one
// derived from the subsystem and nsid). Throws std::invalid_argument
// naming `option`.
NamespaceConfig parse_namespace_spec(const std::string &spec, uint32_t default_nsid, const std::string &option);

// nvmetcli JSON ({"hosts","subsystems","ports"}); device.path takes the
// namespace specs above. Throws std::runtime_error naming the JSON field.
TargetConfig load_json_config(const std::string &path);
// A namespace none of whose jobs sets size= (the engine then sizes the job
// from the namespace).
constexpr uint64_t kJobNamespaceBytes = 1ull << 30;
// What the engine options of a job file expect: one subsystem per subnqn,
// one RAM namespace per nsid of the job's size (kJobNamespaceBytes without
// size=), one port per traddr path.
TargetConfig config_from_jobfile(const std::string &path);
// The same from sections already read (`path` names the file in messages).
TargetConfig config_from_jobs(const std::vector<JobSection> &jobs, const std::string &path);

// Fill in derived values (serials, uuids, port ids) and check consistency
// and c.limits.
void finalize(TargetConfig &c);
// The part of finalize for one subsystem: its NQN, serial, namespace ids
// and identifiers, its limits (also for one added at run time).
void finalize_subsystem(SubsystemConfig &s, const TargetLimits &limits);

} // namespace mpnvme::target
