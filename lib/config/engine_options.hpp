// SPDX-License-Identifier: GPL-2.0-only
// What the engine's options mean: each entry of the option table
// (engine_option_table.h) with the conversion that turns its text into a
// field of EngineOptions. The same parser serves fio (the glue hands over
// the strings fio stored), mpnvme-target --job and mpnvme-nvmet (the
// options of a job file section), so a value is refused with the same
// message wherever it is read, naming the option.
#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/auth/dhchap_host.hpp"
#include "lib/config/engine_option_table.h"
#include "lib/config/host_identity.hpp"
#include "lib/config/priority_pairs.hpp"
#include "lib/net/paths.hpp"
#include "lib/net/sock.hpp"
#include "lib/tls/tls_options.hpp"
#include "lib/wire/pdu.hpp"

namespace mpnvme {

// The enumerations' order is their choices' order in the table.
enum class IoPolicy : uint8_t { Numa, RoundRobin, QueueDepth, ServiceTime };
enum class TrimMode : uint8_t { Dsm, WriteZeroes };
// How getevents waits for completions: spin briefly, then sleep (hybrid),
// sleep in epoll (block), or spin on the sockets (busy).
enum class PollMode : uint8_t { Hybrid, Block, Busy };

const char *iopolicy_name(IoPolicy p);
// The policies the Linux host also has (service-time is the engine's own).
bool kernel_has_iopolicy(IoPolicy p);
std::vector<std::string> kernel_iopolicy_names();

// The kernel's error recovery knobs (nvme-cli's names).
struct RecoveryOptions {
  std::chrono::milliseconds reconnect_delay{0};
  std::optional<std::chrono::milliseconds> ctrl_loss_tmo;    // nullopt: reconnect forever
  std::optional<std::chrono::milliseconds> fast_io_fail_tmo; // nullopt: off
  std::chrono::milliseconds io_timeout{0};
  bool operator==(const RecoveryOptions &) const = default;
};

constexpr unsigned kMaxQueueSize = 1024;
constexpr unsigned kMaxIoQueuesPerPath = 64;

// Every engine option, converted and checked. The defaults are the table's:
// a default-constructed EngineOptions is not a valid configuration.
struct EngineOptions {
  std::vector<PathAddr> paths;
  Transport transport = Transport::Mptcp;
  std::string subnqn;
  HostIdentity host;
  uint32_t nsid = 0;
  // One entry per path (aligned with `paths`; "" = not bound).
  std::vector<std::string> host_traddr, host_iface;
  unsigned queue_size = 0;   // 0: derived from iodepth
  unsigned nr_io_queues = 1; // I/O queues of the job per path
  unsigned kato_ms = 0;
  pdu::Digests digests;
  PriorityPairs sk_priority, tos;
  IoPolicy iopolicy = IoPolicy::Numa;
  std::string log_level;
  TrimMode trim_mode = TrimMode::Dsm;
  PollMode poll = PollMode::Hybrid;
  bool disable_sqflow = false;
  bool fabrics_disconnect = false;
  bool defer_send = false; // the fio glue's (see fio-mpnvme(7))
  std::chrono::milliseconds connect_timeout{0};
  RecoveryOptions recovery;
  unsigned max_retries = 0;                     // nvme_core.max_retries
  std::string path_stats;                       // JSON lines file, "" = none
  std::chrono::milliseconds mptcp_join_wait{0}; // 0: I/O starts as soon as a queue connects
  dhchap::HostAuthConfig auth;                  // DH-HMAC-CHAP secrets and what may be offered
  tls::HostTlsConfig tls;                       // the secure channel
};

// Option name -> value as given; options not given take the table's default.
using OptionValues = std::map<std::string, std::string>;

// Throws std::invalid_argument with a message that names the option; a
// name that is not an engine option is refused too.
EngineOptions parse_engine_options(const OptionValues &given);

// The table's entry of `name`, or nullptr.
const mpnvme_option_def *find_engine_option(const std::string &name);

} // namespace mpnvme
