// SPDX-License-Identifier: GPL-2.0-only
// Connection: the reservation commands (Register, Acquire, Release,
// Report) of the host this controller belongs to, and the reservation
// check in front of every other I/O command.
#include <algorithm>
#include <cstring>
#include <fmt/format.h>

#include "lib/wire/wire.hpp"
#include "mpnvme-target/transport/connection.hpp"

namespace mpnvme::target {
using namespace nvme;

void Connection::reservation_command(Cmd &c, uint16_t slot, Reservations &r) {
  const uint8_t op = c.sqe.opcode();
  // Register and Acquire carry two keys, Release one.
  const uint32_t need = op == kCmdResvRelease ? 8 : 16;
  if (c.data_len < need)
    return refuse(slot, kStatusSglLengthInvalid, fmt::format("{} bytes of data, {} needed", c.data_len, need));
  const uint64_t crkey = wire::get64(c.buf, 0), other = need == 16 ? wire::get64(c.buf, 8) : 0;
  const uint32_t cdw10 = c.sqe.cdw(10);
  const HostId &host = ctrl_->hostid;
  const Reservations::Outcome o = op == kCmdResvRegister  ? r.reg(host, cdw10, crkey, other)
                                  : op == kCmdResvAcquire ? r.acquire(host, cdw10, crkey, other)
                                                          : r.release(host, cdw10, crkey);
  if (o.status) return refuse(slot, o.status, o.why);
  complete(slot, 0);
}

void Connection::reservation_report(Cmd &c, uint16_t slot, const Reservations &r) {
  // Host identifiers here are the 128-bit ones of Connect, which only the
  // extended data structure holds.
  if (!(c.sqe.cdw(11) & 1))
    return refuse(slot, kStatusHostIdFormat, "Reservation Report without EDS: the host identifiers are 128-bit");
  const uint64_t asked = (static_cast<uint64_t>(c.sqe.cdw(10)) + 1) * 4;
  const std::vector<uint8_t> report = r.report();
  const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>({asked, c.sqe.sgl_len(), report.size()}));
  if (!ensure_buf(c, std::max<uint32_t>(len, 1))) return complete(slot, kStatusInternal);
  std::memcpy(c.buf, report.data(), len);
  return_data(c, slot, len);
}

// Reads need the reservation to allow reading, everything else that
// changes or commits the namespace (Write, Write Zeroes, Dataset
// Management, Flush) to allow writing.
bool Connection::reservation_permits(const Cmd &c, uint16_t slot, const Reservations &r) {
  const bool write = c.sqe.opcode() != kCmdRead;
  if (r.permits(ctrl_->hostid, write)) return true;
  refuse(slot, kStatusReservationConflict,
         fmt::format("the namespace's reservation does not let this host {}", write ? "write" : "read"));
  return false;
}

} // namespace mpnvme::target
