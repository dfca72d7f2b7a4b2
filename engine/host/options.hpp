// SPDX-License-Identifier: GPL-2.0-only
// Engine options checked and converted from what fio stored. Every refusal
// names the option and the accepted forms.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "../../lib/host_identity.hpp"
#include "../../lib/paths.hpp"
#include "../../lib/pdu.hpp"
#include "../../lib/priority_pairs.hpp"
#include "../../lib/sock.hpp"
#include "../mpnvme_engine.h"
#include "controller.hpp"
#include "path_policy.hpp"

namespace mpnvme::host {

const char *iopolicy_name(IoPolicy p);
enum class TrimMode { Dsm, WriteZeroes };
// How getevents waits for completions: sleep in epoll (block), spin on the
// sockets (busy), or spin briefly, then sleep (hybrid).
enum class PollMode { Block, Busy, Hybrid };

struct EngineOptions {
  std::vector<PathAddr> paths;
  Transport transport = Transport::Mptcp;
  std::string subnqn;
  HostIdentity host;
  uint32_t nsid = 1;
  // One entry per path (aligned with `paths`; "" = not bound).
  std::vector<std::string> host_traddr, host_iface;
  unsigned queue_size = 0; // 0: derived from iodepth
  unsigned kato_ms = 5000;
  pdu::Digests digests;
  PriorityPairs sk_priority, tos;
  IoPolicy iopolicy = IoPolicy::Numa;
  TrimMode trim_mode = TrimMode::Dsm;
  PollMode poll = PollMode::Hybrid;
  bool disable_sqflow = true;
  bool fabrics_disconnect = false;
  std::chrono::milliseconds connect_timeout{10000};
  RecoveryOptions recovery;
  unsigned max_retries = 5; // nvme_core.max_retries
  std::string path_stats;   // JSON lines file, "" = none
  std::chrono::milliseconds mptcp_join_wait{0}; // 0: I/O starts as soon as a queue connects
};

constexpr unsigned kMaxQueueSize = 1024;

// Throws std::invalid_argument with a message that names the option.
EngineOptions parse_engine_options(const mpnvme_opts &o);

} // namespace mpnvme::host
