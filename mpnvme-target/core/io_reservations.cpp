// SPDX-License-Identifier: GPL-2.0-only
// SubmissionQueue: the reservation commands (Register, Acquire, Release,
// Report) of the host this controller belongs to. A change of the
// reservation state is a change of rights: before it completes, the
// namespace's fence revokes the placements in progress, so that no write
// the new state excludes (another host's after an Acquire, a preempted
// host's after a Preempt and Abort) lands once the host that changed it has
// its answer. The access check in front of the other I/O commands is the
// admission gate's (core/admission.cpp).
#include <algorithm>
#include <cstring>
#include <fmt/format.h>

#include "lib/wire/wire.hpp"
#include "mpnvme-target/core/submission_queue.hpp"

namespace mpnvme::target {
using namespace nvme;

void SubmissionQueue::reservation_command(Request &r, Namespace &ns) {
  const uint8_t op = r.sqe.opcode();
  // Register and Acquire carry two keys, Release one.
  const uint32_t need = op == kCmdResvRelease ? 8 : 16;
  if (r.in_len < need) return refuse(r, kStatusSglLengthInvalid, fmt::format("{} bytes of data, {} needed", r.in_len, need));
  const uint64_t crkey = wire::get64(r.in, 0), other = need == 16 ? wire::get64(r.in, 8) : 0;
  const uint32_t cdw10 = r.sqe.cdw(10);
  const ResvHost host{ctrl_->hostid, ctrl_->hostnqn};
  Reservations &rs = *ns.reservations;
  const Reservations::Outcome o = op == kCmdResvRegister  ? rs.reg(host, cdw10, crkey, other)
                                  : op == kCmdResvAcquire ? rs.acquire(host, cdw10, crkey, other)
                                                          : rs.release(host, cdw10, crkey);
  if (o.status) return refuse(r, o.status, o.why);
  ns.fence->revoke();
  complete(r, 0);
}

void SubmissionQueue::reservation_report(Request &r, const Reservations &rs) {
  // Host identifiers here are the 128-bit ones of Connect, which only the
  // extended data structure holds.
  if (!(r.sqe.cdw(11) & 1))
    return refuse(r, kStatusHostIdFormat, "Reservation Report without EDS: the host identifiers are 128-bit");
  const uint64_t asked = (static_cast<uint64_t>(r.sqe.cdw(10)) + 1) * 4;
  const std::vector<uint8_t> report = rs.report();
  const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>({asked, r.sqe.sgl_len(), report.size()}));
  uint8_t *buf = buffer(r, std::max<uint32_t>(len, 1));
  if (!buf) return complete(r, kStatusInternal);
  std::memcpy(buf, report.data(), len);
  return_data(r, buf, len);
}

} // namespace mpnvme::target
