// SPDX-License-Identifier: GPL-2.0-only
// The admission gate: may this queue do this command to this namespace now.
// One answer, asked wherever the answer matters: when a command arrives,
// before any byte of its data is received or a buffer granted for it (as
// nvmet_req_init comes before the transport maps data); at each placement
// of a write's data once the namespace's rights changed (core/placement);
// and when the command runs.
//
// What it weighs: the queue is connected (only Connect before that); its
// controller still lives (the control socket ends the controllers of a
// host it denies or a subsystem it removes); the queue has authenticated
// where its host has a key (only Authentication Send/Receive and
// Disconnect before, as nvmet_check_auth_status); an admin queue's
// controller is enabled; and for a namespace, the ANA state of its group
// on this port and its reservation.
#pragma once
#include <cstdint>
#include <string>

#include "lib/wire/nvme.hpp"

namespace mpnvme::target {

class TargetController;
class PortState;
struct Namespace;

// Where a queue stands.
struct QueueStanding {
  const TargetController *ctrl = nullptr; // null before Connect
  uint16_t qid = 0;
  bool authenticating = false; // its host has a key and it has not proved it yet
};

// A refusal: the status for the wire and the reason for the log; status 0
// admits.
struct Verdict {
  uint16_t status = 0;
  std::string why;
  explicit operator bool() const { return status == 0; }
};

// What an I/O command does to its namespace.
enum class NsAccess : uint8_t { None, Read, Write };
NsAccess namespace_access(const nvme::Sqe &sqe);

// The queue's own rights for this command (no namespace yet).
Verdict admit_command(const QueueStanding &q, const nvme::Sqe &sqe);
// ... and for an I/O command on `ns`, reached through `port`.
Verdict admit_namespace(const QueueStanding &q, const PortState &port, const nvme::Sqe &sqe, const Namespace &ns);

} // namespace mpnvme::target
