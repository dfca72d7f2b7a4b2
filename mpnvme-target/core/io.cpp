// SPDX-License-Identifier: GPL-2.0-only
// Connection: the NVM I/O commands (Read, Write, Flush, Write Zeroes,
// Dataset Management) against the namespace backends, after the ANA state
// of the namespace's group and its reservation allow them.
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <vector>

#include "lib/base/log.hpp"
#include "lib/wire/wire.hpp"
#include "mpnvme-target/transport/connection.hpp"

namespace mpnvme::target {
using namespace nvme;

Namespace *Connection::io_namespace(Cmd &c, uint16_t slot) {
  auto &nss = ctrl_->subsys.namespaces;
  auto it = nss.find(c.sqe.nsid());
  if (it == nss.end()) {
    refuse(slot, kStatusInvalidNs, fmt::format("namespace {:#x} does not exist", c.sqe.nsid()));
    return nullptr;
  }
  switch (port_.ana(it->second.cfg.anagrpid)) {
  case AnaState::Optimized:
  case AnaState::NonOptimized: return &it->second;
  case AnaState::Inaccessible: complete(slot, kStatusAnaInaccessible); break;
  case AnaState::PersistentLoss: complete(slot, kStatusAnaPersistentLoss); break;
  case AnaState::Change: complete(slot, kStatusAnaTransition); break;
  }
  return nullptr;
}

// A Write to a RAM namespace that exec_io will take has its data received
// straight into the namespace after the R2T: no staging buffer, no copy.
// Should the write still fail (a data digest error, an ANA change before
// it runs), its blocks hold part of the new data: NVMe leaves the blocks of
// a failed write undefined, and the host writes them again.
uint8_t *Connection::backend_write_destination(const Cmd &c) {
  if (!ctrl_ || qid_ == 0 || c.sqe.opcode() != kCmdWrite) return nullptr;
  auto &nss = ctrl_->subsys.namespaces;
  auto it = nss.find(c.sqe.nsid());
  if (it == nss.end() || !ana_usable(port_.ana(it->second.cfg.anagrpid))) return nullptr;
  // Data refused by a reservation must not reach the namespace. A
  // reservation taken while the data is on its way does not stop it: the
  // write was admitted before, as one already running would be.
  if (!it->second.reservations->permits(ctrl_->hostid, true)) return nullptr;
  Backend &be = *it->second.backend;
  const uint64_t slba = c.sqe.slba(), nlb = c.sqe.nlb();
  if (!be.contains(slba, nlb) || c.sqe.sgl_len() != nlb * be.lba()) return nullptr;
  return be.write_destination(slba * be.lba(), nlb * be.lba());
}

// What a backend may do with the command in `slot`: finish it now, name
// its read data, use the command's buffer, or hand an operation to the
// event loop (on_file_done completes it).
class Connection::SlotDone final : public BackendCompletion {
public:
  SlotDone(Connection &conn, Cmd &c, uint16_t slot) : conn_(conn), c_(c), slot_(slot) {}
  void complete(uint16_t status) override { conn_.complete(slot_, status); }
  void refuse(uint16_t status, const std::string &why) override { conn_.refuse(slot_, status, why); }
  void send_data(const uint8_t *data, uint32_t len) override {
    c_.out = data; // sent straight from there
    c_.out_len = len;
  }
  uint8_t *buffer(uint32_t len) override { return conn_.ensure_buf(c_, len) ? c_.buf : nullptr; }
  void submit(FileOp op, int fd, uint8_t *buf, uint64_t len, uint64_t off) override {
    conn_.file_ops_++;
    conn_.io_.submit_file(conn_, slot_, op, fd, buf, len, off);
  }

private:
  Connection &conn_;
  Cmd &c_;
  const uint16_t slot_;
};

void Connection::exec_io(Cmd &c, uint16_t slot) {
  Namespace *ns = io_namespace(c, slot);
  if (!ns) return;
  switch (c.sqe.opcode()) {
  case kCmdResvRegister:
  case kCmdResvAcquire:
  case kCmdResvRelease: return reservation_command(c, slot, *ns->reservations);
  case kCmdResvReport: return reservation_report(c, slot, *ns->reservations);
  default:
    if (!reservation_permits(c, slot, *ns->reservations)) return;
  }
  Backend &be = *ns->backend;
  SlotDone done(*this, c, slot);
  switch (c.sqe.opcode()) {
  case kCmdRead:
  case kCmdWrite: {
    const uint64_t slba = c.sqe.slba(), nlb = c.sqe.nlb();
    if (!be.contains(slba, nlb)) return refuse_lba_range(slot, be, slba, nlb);
    return read_write(c, be, done);
  }
  case kCmdFlush: return be.flush(done);
  case kCmdWriteZeroes: {
    const uint64_t slba = c.sqe.slba(), nlb = c.sqe.nlb();
    if (!be.contains(slba, nlb)) return refuse_lba_range(slot, be, slba, nlb);
    return be.write_zeroes(slba * be.lba(), nlb * be.lba(), done);
  }
  case kCmdDsm: return deallocate(c, slot, be, done);
  default: return refuse(slot, kStatusInvalidOpcode, fmt::format("I/O opcode {:#04x} is not supported", c.sqe.opcode()));
  }
}

void Connection::refuse_lba_range(uint16_t slot, const Backend &be, uint64_t lba, uint64_t n) {
  refuse(slot, kStatusLbaOutOfRange, fmt::format("LBAs {}..{} beyond the namespace's {}", lba, lba + n - 1, be.blocks()));
}

// Read and Write of blocks the namespace has: the SGL must match them.
void Connection::read_write(Cmd &c, Backend &be, SlotDone &done) {
  const uint8_t op = c.sqe.opcode();
  const uint64_t off = c.sqe.slba() * be.lba(), len = c.sqe.nlb() * be.lba();
  if (c.sqe.sgl_len() != len || (op == kCmdWrite && c.data_len != len))
    return done.refuse(kStatusSglLengthInvalid, fmt::format("{} LBAs ({} bytes) with a {}-byte SGL", c.sqe.nlb(), len,
                                                            op == kCmdWrite ? c.data_len : c.sqe.sgl_len()));
  if (op == kCmdRead) return be.read(off, static_cast<uint32_t>(len), done);
  be.write(off, static_cast<uint32_t>(len), c.in, done);
}

// Dataset Management: only the deallocate attribute does anything.
void Connection::deallocate(Cmd &c, uint16_t slot, Backend &be, SlotDone &done) {
  const uint32_t nr = (c.sqe.cdw(10) & 0xff) + 1;
  if (c.data_len < nr * kDsmRangeLen)
    return refuse(slot, kStatusSglLengthInvalid, fmt::format("{} ranges in {} bytes", nr, c.data_len));
  if (!(c.sqe.cdw(11) & (1u << 2))) return complete(slot, 0); // no deallocate: hints only
  std::vector<ByteRange> ranges(nr);
  for (uint32_t i = 0; i < nr; i++) {
    const uint8_t *r = c.buf + i * kDsmRangeLen;
    const uint64_t lba = wire::get64(r, 8), n = wire::get32(r, 4);
    if (n && !be.contains(lba, n)) return refuse_lba_range(slot, be, lba, n);
    ranges[i] = {lba * be.lba(), n * be.lba()};
  }
  be.deallocate(ranges, done);
}

void Connection::on_file_done(uint16_t slot, int res) {
  file_ops_--;
  Cmd &c = cmds_[slot];
  if (closing_) {
    c.state = Cmd::State::Sending;
    if (!c.in_ring) release(slot);
    return;
  }
  if (res < 0) {
    log().error("{} qid {}: cid {:#x} {}: backend I/O failed: {}", label_, qid_, c.cid, opcode_name(c.sqe.opcode(), false),
                strerror(-res));
    return complete(slot, res == -ENOSPC ? kStatusCapacityExceeded : kStatusWriteFault);
  }
  if (c.sqe.opcode() == kCmdRead) {
    c.out = c.buf;
    c.out_len = static_cast<uint32_t>(res);
  }
  complete(slot, 0);
}

} // namespace mpnvme::target
