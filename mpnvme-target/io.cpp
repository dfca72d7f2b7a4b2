// SPDX-License-Identifier: GPL-2.0-only
// Connection: the NVM I/O commands (Read, Write, Flush, Write Zeroes,
// Dataset Management) against the namespace backends, after the ANA state
// of the namespace's group allows them.
#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "lib/base/log.hpp"
#include "lib/wire/wire.hpp"
#include "mpnvme-target/connection.hpp"

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
uint8_t *Connection::ram_write_destination(const Cmd &c) {
  if (!ctrl_ || qid_ == 0 || c.sqe.opcode() != kCmdWrite) return nullptr;
  auto &nss = ctrl_->subsys.namespaces;
  auto it = nss.find(c.sqe.nsid());
  if (it == nss.end() || !ana_usable(port_.ana(it->second.cfg.anagrpid))) return nullptr;
  Backend &be = *it->second.backend;
  if (be.kind() != Backing::Ram) return nullptr;
  const uint64_t slba = c.sqe.slba(), nlb = c.sqe.nlb();
  if (!be.contains(slba, nlb) || c.sqe.sgl_len() != nlb * be.lba()) return nullptr;
  return be.memory() + slba * be.lba();
}

void Connection::exec_io(Cmd &c, uint16_t slot) {
  Namespace *ns = io_namespace(c, slot);
  if (!ns) return;
  Backend &be = *ns->backend;
  switch (c.sqe.opcode()) {
  case kCmdRead:
  case kCmdWrite: return read_write(c, slot, be);
  case kCmdFlush:
    if (be.kind() != Backing::File) return complete(slot, 0);
    file_ops_++;
    io_.submit_file(*this, slot, FileOp::Fsync, be.fd(), nullptr, 0, 0);
    return;
  case kCmdWriteZeroes: {
    const uint64_t slba = c.sqe.slba(), nlb = c.sqe.nlb();
    if (!be.contains(slba, nlb)) return refuse_lba_range(slot, be, slba, nlb);
    if (be.kind() == Backing::File) {
      file_ops_++;
      io_.submit_file(*this, slot, FileOp::WriteZeroes, be.fd(), nullptr, nlb * be.lba(), slba * be.lba());
      return;
    }
    be.zero(slba * be.lba(), nlb * be.lba());
    return complete(slot, 0);
  }
  case kCmdDsm: return deallocate(c, slot, be);
  default: return refuse(slot, kStatusInvalidOpcode, fmt::format("I/O opcode {:#04x} is not supported", c.sqe.opcode()));
  }
}

void Connection::refuse_lba_range(uint16_t slot, const Backend &be, uint64_t lba, uint64_t n) {
  refuse(slot, kStatusLbaOutOfRange, fmt::format("LBAs {}..{} beyond the namespace's {}", lba, lba + n - 1, be.blocks()));
}

// Read and Write: RAM namespaces answer from (and took R2T data straight
// into) their memory; file namespaces go through the event loop.
void Connection::read_write(Cmd &c, uint16_t slot, Backend &be) {
  const uint8_t op = c.sqe.opcode();
  const uint64_t slba = c.sqe.slba(), nlb = c.sqe.nlb();
  if (!be.contains(slba, nlb)) return refuse_lba_range(slot, be, slba, nlb);
  const uint64_t off = slba * be.lba(), len = nlb * be.lba();
  if (c.sqe.sgl_len() != len || (op == kCmdWrite && c.data_len != len))
    return refuse(slot, kStatusSglLengthInvalid,
                  fmt::format("{} LBAs ({} bytes) with a {}-byte SGL", nlb, len, op == kCmdWrite ? c.data_len : c.sqe.sgl_len()));
  switch (be.kind()) {
  case Backing::Ram:
    if (op == kCmdWrite) {
      if (c.in != be.memory() + off) std::memcpy(be.memory() + off, c.in, len); // in-capsule data
    } else {
      c.out = be.memory() + off; // sent straight from the namespace
      c.out_len = static_cast<uint32_t>(len);
    }
    return complete(slot, 0);
  case Backing::Null:
    if (op == kCmdRead) {
      if (!ensure_buf(c, static_cast<uint32_t>(len))) return complete(slot, kStatusInternal);
      std::memset(c.buf, 0, len);
      c.out = c.buf;
      c.out_len = static_cast<uint32_t>(len);
    }
    return complete(slot, 0);
  case Backing::File:
    if (op == kCmdRead && !ensure_buf(c, static_cast<uint32_t>(len))) return complete(slot, kStatusInternal);
    file_ops_++;
    io_.submit_file(*this, slot, op == kCmdRead ? FileOp::Read : FileOp::Write, be.fd(), c.buf, len, off);
    return;
  }
}

// Dataset Management: only the deallocate attribute does anything.
void Connection::deallocate(Cmd &c, uint16_t slot, Backend &be) {
  const uint32_t nr = (c.sqe.cdw(10) & 0xff) + 1;
  if (c.data_len < nr * kDsmRangeLen)
    return refuse(slot, kStatusSglLengthInvalid, fmt::format("{} ranges in {} bytes", nr, c.data_len));
  if (!(c.sqe.cdw(11) & (1u << 2))) return complete(slot, 0); // no deallocate: hints only
  for (uint32_t i = 0; i < nr; i++) {
    const uint8_t *r = c.buf + i * kDsmRangeLen;
    const uint64_t lba = wire::get64(r, 8), n = wire::get32(r, 4);
    if (n && !be.contains(lba, n)) return refuse_lba_range(slot, be, lba, n);
  }
  if (be.kind() == Backing::File) {
    // One range per file operation keeps the bookkeeping simple; hosts
    // (Linux, fio) send one range per command.
    if (nr != 1) return refuse(slot, kStatusInvalidField, fmt::format("{} ranges in one deallocate on a file namespace", nr));
    file_ops_++;
    io_.submit_file(*this, slot, FileOp::Deallocate, be.fd(), nullptr, wire::get32(c.buf, 4) * uint64_t(be.lba()),
                    wire::get64(c.buf, 8) * be.lba());
    return;
  }
  for (uint32_t i = 0; i < nr; i++) {
    const uint8_t *r = c.buf + i * kDsmRangeLen;
    be.zero(wire::get64(r, 8) * be.lba(), uint64_t(wire::get32(r, 4)) * be.lba());
  }
  complete(slot, 0);
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
