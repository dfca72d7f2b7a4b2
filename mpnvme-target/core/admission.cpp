// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/core/admission.hpp"

#include "mpnvme-target/core/controller.hpp"

namespace mpnvme::target {
using namespace nvme;

NsAccess namespace_access(const Sqe &sqe) {
  switch (sqe.opcode()) {
  case kCmdRead: return NsAccess::Read;
  // Everything that changes or commits the namespace, as nvmet's write
  // command group (Flush included).
  case kCmdWrite:
  case kCmdWriteZeroes:
  case kCmdDsm:
  case kCmdFlush: return NsAccess::Write;
  // Reservation commands are judged by the reservation state machine.
  default: return NsAccess::None;
  }
}

Verdict admit_command(const QueueStanding &q, const Sqe &sqe) {
  const bool fabrics = sqe.opcode() == kFabricsOpcode;
  const uint8_t t = fabrics ? sqe.fctype() : 0;
  if (!q.ctrl) {
    if (fabrics && t == kFctConnect) return {};
    return {kStatusSeqError, "command before Connect"};
  }
  if (q.ctrl->dead) return {kStatusAbortedSqDeletion, "its controller has ended"};
  if (q.authenticating && !(fabrics && (t == kFctAuthSend || t == kFctAuthReceive || t == kFctDisconnect)))
    return {kStatusAuthRequired, "the host has not authenticated on this queue (DH-HMAC-CHAP)"};
  if (!fabrics && q.qid == 0 && !(q.ctrl->csts.load(std::memory_order_relaxed) & kCstsRdy))
    return {kStatusSeqError, "admin command while the controller is not ready (CC.EN)"};
  return {};
}

Verdict admit_namespace(const QueueStanding &q, const PortState &port, const Sqe &sqe, const Namespace &ns) {
  switch (port.ana(ns.cfg.anagrpid)) {
  case AnaState::Optimized:
  case AnaState::NonOptimized: break;
  case AnaState::Inaccessible: return {kStatusAnaInaccessible, "its ANA group is inaccessible on this port"};
  case AnaState::PersistentLoss: return {kStatusAnaPersistentLoss, "its ANA group is in persistent loss on this port"};
  case AnaState::Change: return {kStatusAnaTransition, "its ANA group is changing state on this port"};
  }
  const NsAccess access = namespace_access(sqe);
  if (access == NsAccess::None) return {};
  const bool write = access == NsAccess::Write;
  if (!ns.reservations->permits({q.ctrl->hostid, q.ctrl->hostnqn}, write))
    return {kStatusReservationConflict, write ? "the namespace's reservation does not let this host write"
                                              : "the namespace's reservation does not let this host read"};
  return {};
}

} // namespace mpnvme::target
