// SPDX-License-Identifier: GPL-2.0-only
// Connection: PDUs in and out, and a command's data moved where the
// controller core said it may go.
#include "mpnvme-target/transport/connection.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

#include "lib/base/log.hpp"

namespace mpnvme::target {
Connection::Connection(Registry &reg, ConnIo &io, int fd, PortState &port, std::string peer)
    : reg_(reg), io_(io), fd_(fd), port_(port), peer_(std::move(peer)), port_counters_(reg.counters(port.cfg.id)),
      // Before Connect: ICResp, Connect's response or a TermReq. It grows
      // with the commands in flight (tx_alloc).
      tx_(kSendRingBeforeConnect),
      // Staging is compacted only when full: a target connection reads far
      // more than it holds, and moving bytes costs more than a short receive.
      rx_(*this, pdu::Receiver::Controller, 1, kRxStagingBeforeConnect), sq_(reg, port, *this, peer_) {
  port_counters_.connections++;
}

Connection::~Connection() {
  if (sq_.connected() && sq_.sqid() != 0) io_.io_queue_connected(-1);
  for (Cmd &c : cmds_)
    std::free(c.buf);
  port_counters_.connections--;
}

void Connection::close(const std::string &why) {
  if (closing_) return;
  closing_ = true;
  close_reason_ = why;
  rx_.stop();
}

size_t Connection::rx_iov(iovec iov[2]) {
  if (sq_.connected()) rx_.widen_staging(kRxStaging);
  return rx_.rx_iov(iov);
}

void Connection::on_received(size_t n) {
  if (closing_) return rx_.on_receive_failed();
  stats_.rx_bytes += n;
  port_counters_.rx_bytes += n;
  rx_.on_received(n);
}

// R2T, C2HData and response per command at most, plus ICResp/TermReq: the
// ring grows to that as commands come, never past it.
SendRing::Pdu *Connection::tx_alloc(int32_t slot) {
  if (tx_.full()) tx_.grow(std::min(cmds_.size() * 3 + kSendRingBeforeConnect, tx_.capacity() * 2));
  SendRing::Pdu *t = tx_.alloc(slot);
  if (t && slot >= 0) cmds_[static_cast<size_t>(slot)].in_ring++;
  return t;
}

size_t Connection::build_send(iovec *iov, size_t max) { return tx_.build_iov(iov, max); }

void Connection::on_sent(size_t n) {
  stats_.tx_bytes += n;
  port_counters_.tx_bytes += n;
  tx_.advance(n, [this](int32_t slot) {
    if (slot < 0) return;
    Cmd &c = cmds_[static_cast<size_t>(slot)];
    if (--c.in_ring == 0 && c.state == Cmd::State::Sending) release(static_cast<uint16_t>(slot));
  });
}

bool Connection::ensure_buf(Cmd &c, uint32_t len) {
  if (c.buf_cap >= len && c.buf) return true;
  std::free(c.buf);
  c.buf = nullptr;
  c.buf_cap = 0;
  const uint32_t cap = std::max<uint32_t>(4096, (len + 4095) / 4096 * 4096);
  void *p = nullptr;
  if (posix_memalign(&p, 4096, cap) != 0) return false; // O_DIRECT alignment
  c.buf = static_cast<uint8_t *>(p);
  c.buf_cap = cap;
  return true;
}

uint8_t *Connection::buffer(Request &r, uint32_t len) {
  Cmd &c = cmds_[r.tag];
  return ensure_buf(c, len) ? c.buf : nullptr;
}

void Connection::submit_file(Request &r, FileOp op, int fd, uint8_t *buf, uint64_t len, uint64_t off) {
  file_ops_++;
  io_.submit_file(*this, r.tag, op, fd, buf, len, off);
}

void Connection::on_protocol_error(const uint8_t *termreq, size_t len, pdu::Fes fes, const std::string &why) {
  stats_.errors++;
  port_counters_.errors++;
  log().warn("{}: {}; sending C2HTermReq ({})", sq_.label(), why, pdu::fes_name(static_cast<uint16_t>(fes)));
  // Queued PDUs may be half way out already: the TermReq goes after them.
  if (SendRing::Pdu *t = tx_alloc(-1)) {
    std::memcpy(t->hdr, termreq, len);
    t->hdr_len = static_cast<uint8_t>(len);
    io_.want_send(*this);
  }
  close(why);
}

void Connection::on_termreq(const pdu::TermReq &t) {
  log().warn("{}: host terminated the connection: {} (fes {:#x} fei {:#x})", sq_.label(), pdu::fes_name(t.fes), t.fes, t.fei);
  sq_.peer_left();
  close("H2CTermReq from the host");
}

void Connection::on_peer_closed() {
  sq_.peer_left();
  close("closed by the host");
}

// The first PDU must be an ICReq.
size_t Connection::on_setup(const uint8_t *h, size_t staged) {
  if (staged < pdu::kCommonLen) return 0;
  const pdu::Common c = pdu::decode_common(h);
  if (c.type != static_cast<uint8_t>(pdu::Type::ICReq) || c.plen != pdu::kIcLen) {
    rx_.protocol_error(pdu::Fes::PduSequenceError, "first PDU is not an ICReq", h, pdu::kCommonLen, 0);
    return 0;
  }
  if (staged < pdu::kIcLen || !handle_icreq(h)) return 0;
  return pdu::kIcLen;
}

// A capsule's data is bounded before it is read: Connect's 1 KiB before
// Connect, the queue's in-capsule limit after.
uint32_t Connection::max_data(const pdu::Common &c) const {
  if (c.type == static_cast<uint8_t>(pdu::Type::H2CData)) return reg_.config().maxh2cdata;
  return sq_.max_incapsule();
}

bool Connection::handle_icreq(const uint8_t *h) {
  pdu::IcReq req;
  if (auto v = pdu::decode_icreq(h, req); !v) {
    rx_.protocol_error(v.fes, v.what, h, pdu::kIcLen, v.field_offset);
    return false;
  }
  rx_.set_digests(req.digests);
  hpda_ = req.hpda;
  pdu::IcResp resp;
  resp.cpda = 0;
  resp.digests = req.digests; // we support both digests
  resp.maxh2cdata = reg_.config().maxh2cdata;
  SendRing::Pdu *t = tx_alloc(-1);
  pdu::encode_icresp(t->hdr, resp);
  t->hdr_len = pdu::kIcLen;
  io_.want_send(*this);
  log().debug("{}: ICReq hpda {} digests {}/{} maxr2t {}", sq_.label(), req.hpda, req.digests.header, req.digests.data,
              req.maxr2t);
  return true;
}

void Connection::on_header(const uint8_t *h, const pdu::Common &c) {
  const auto type = static_cast<pdu::Type>(c.type);
  if (type == pdu::Type::CapsuleCmd)
    handle_capsule(h, c);
  else if (type == pdu::Type::H2CData)
    handle_h2c_data(h, c);
  else
    rx_.protocol_error(pdu::Fes::InvalidHeaderField, "unexpected PDU type", h, c.hlen, 0);
}

void Connection::on_data_end(bool digest_ok) {
  if (discarding_) { // a refused command's data, read and dropped
    discarding_ = false;
    return;
  }
  if (digest_ok) return data_complete();
  // The command fails with Transient Transport Error and its data is never
  // used; the connection itself stays up (NVMe/TCP 1.0, 3.6.3).
  stats_.errors++;
  port_counters_.errors++;
  Cmd &cmd = cmds_[rx_.slot()];
  log().warn("{}: data digest mismatch for cid {:#x}: command failed", sq_.label(), cmd.req.cid);
  // The transfer goes on (the host sends the rest at the next offset); the
  // command fails once it ends, whichever commands' data come between.
  cmd.digest_failed = true;
  data_complete();
}

// A capsule: the core admits the command before any of its data is read,
// and says where the data goes; refused, its in-capsule data is dropped.
void Connection::handle_capsule(const uint8_t *h, const pdu::Common &c) {
  // Command slots come as commands do: before Connect one, its own (nvmet
  // too sizes a queue's commands at Connect), after it up to the queue size.
  if (free_.empty() && cmds_.size() < (sq_.connected() ? reg_.config().queue_entries : 1)) {
    free_.push_back(static_cast<uint16_t>(cmds_.size()));
    cmds_.emplace_back();
  }
  if (free_.empty()) {
    rx_.protocol_error(pdu::Fes::PduSequenceError, "more commands in flight than the queue holds", h, c.hlen, 0);
    return;
  }
  const uint32_t incapsule = c.pdo ? c.plen - c.pdo - pdu::ddgst_len(rx_.digests().data) : 0;
  nvme::Sqe sqe;
  std::memcpy(sqe.b.data(), h + pdu::kCommonLen, pdu::kSqeLen);
  // In-capsule data whose SGL does not describe exactly it, at offset 0,
  // makes the framing ambiguous: no command of this connection can be
  // trusted after it.
  if (incapsule && (sqe.sgl_type() != nvme::kSglDataBlockOffset || sqe.sgl_len() != incapsule || sqe.sgl_addr() != 0))
    return rx_.protocol_error(pdu::Fes::InvalidHeaderField, "in-capsule data does not match the command's SGL", h, c.hlen,
                              8 + 24);
  const uint16_t slot = free_.back();
  free_.pop_back();
  Cmd &cmd = cmds_[slot];
  cmd.req.start(sqe.b.data());
  cmd.req.tag = slot;
  cmd.state = Cmd::State::Exec;
  cmd.received = 0;
  cmd.in_ring = 0;
  cmd.digest_failed = false;
  stats_.commands++;
  port_counters_.commands++;
  switch (sq_.init(cmd.req, incapsule)) {
  case Intake::Refused:
    if (incapsule) {
      discarding_ = true;
      rx_.begin_discard(slot, incapsule);
    }
    return;
  case Intake::Execute: return sq_.execute(cmd.req);
  case Intake::Receive:
    if (!incapsule) return send_r2t(slot);
    cur_last_ = true;
    rx_.begin_data(slot, cmd.req.in, incapsule);
    return;
  }
}

void Connection::handle_h2c_data(const uint8_t *h, const pdu::Common &c) {
  const pdu::DataHdr d = pdu::decode_data_hdr(h);
  if (d.ttag >= cmds_.size() || cmds_[d.ttag].state != Cmd::State::WaitData || cmds_[d.ttag].req.cid != d.cccid) {
    rx_.protocol_error(pdu::Fes::InvalidHeaderField, "H2CData for no outstanding R2T (ttag/cccid)", h, c.hlen, 10);
    return;
  }
  Cmd &cmd = cmds_[d.ttag];
  const uint32_t datal = c.plen - c.pdo - pdu::ddgst_len(rx_.digests().data);
  if (d.datal != datal) return rx_.protocol_error(pdu::Fes::InvalidHeaderField, "datal does not match plen", h, c.hlen, 16);
  if (d.datao != cmd.received) return rx_.protocol_error(pdu::Fes::DataOutOfRange, "H2CData out of order", h, c.hlen, 12);
  if (d.datal > cmd.req.in_len - cmd.received)
    return rx_.protocol_error(pdu::Fes::DataOutOfRange, "H2CData beyond the R2T", h, c.hlen, 16);
  const bool last = d.datao + d.datal == cmd.req.in_len;
  if (last != bool(c.flags & pdu::kFlagLast))
    return rx_.protocol_error(pdu::Fes::InvalidHeaderField, "LAST_PDU flag does not match the end of the transfer", h, c.hlen, 1);
  cur_last_ = last;
  rx_.begin_data(d.ttag, cmd.req.in + d.datao, d.datal, guard(cmd));
}

void Connection::data_complete() {
  const uint16_t slot = rx_.slot();
  Cmd &cmd = cmds_[slot];
  cmd.received += rx_.datal();
  if (!cur_last_) return;
  if (cmd.digest_failed) { // an H2CData of this transfer was corrupt
    cmd.digest_failed = false;
    return sq_.fail(cmd.req, nvme::kStatusTransientTransport);
  }
  cmd.state = Cmd::State::Exec;
  sq_.execute(cmd.req);
}

void Connection::send_r2t(uint16_t slot) {
  Cmd &cmd = cmds_[slot];
  cmd.state = Cmd::State::WaitData;
  SendRing::Pdu *t = tx_alloc(slot);
  const bool hd = rx_.digests().header;
  pdu::encode_r2t(t->hdr, hd ? pdu::kFlagHdgst : 0, static_cast<uint32_t>(pdu::kR2THlen + pdu::hdgst_len(hd)),
                  {cmd.req.cid, slot, 0, cmd.req.in_len});
  seal_header(*t, pdu::kR2THlen, hd);
  io_.want_send(*this);
}

// Queue the C2HData (if any) and the response of a finished command.
void Connection::complete(Request &r) {
  const uint16_t slot = r.tag;
  Cmd &cmd = cmds_[slot];
  if (r.status) stats_.errors++;
  const pdu::Digests dg = rx_.digests();
  const bool with_data = r.status == 0 && r.out_len > 0;
  const bool success_flag = with_data && sq_.sqflow_disabled();
  if (with_data)
    encode_data_pdu(*tx_alloc(slot), pdu::Type::C2HData, pdu::kFlagLast | (success_flag ? pdu::kFlagSuccess : 0),
                    {r.cid, 0, 0, r.out_len}, r.out, dg, hpda_);
  if (!success_flag) {
    SendRing::Pdu *t = tx_alloc(slot);
    pdu::encode_common(t->hdr, pdu::Type::CapsuleResp, dg.header ? pdu::kFlagHdgst : 0, pdu::kRespHlen, 0,
                       static_cast<uint32_t>(pdu::kRespHlen + pdu::hdgst_len(dg.header)));
    nvme::Cqe cqe;
    cqe.dw0 = r.dw0;
    cqe.dw1 = r.dw1;
    cqe.sqhd = sq_.sqhd();
    cqe.sqid = sq_.sqid();
    cqe.cid = r.cid;
    cqe.status = r.status;
    nvme::encode_cqe(t->hdr + pdu::kCommonLen, cqe);
    seal_header(*t, pdu::kRespHlen, dg.header);
  }
  cmd.state = Cmd::State::Sending;
  io_.want_send(*this);
}

// A slot is free again once its PDUs have gone. An admin queue gives back
// a large buffer: it may hold one per entry otherwise (a discovery log of
// MDTS each), where an I/O queue keeps its for the next command.
void Connection::release(uint16_t slot) {
  Cmd &c = cmds_[slot];
  c.state = Cmd::State::Free;
  if (c.buf_cap > kAdminBufferKept && sq_.sqid() == 0) {
    std::free(c.buf);
    c.buf = nullptr;
    c.buf_cap = 0;
  }
  free_.push_back(slot);
}

void Connection::on_file_done(uint16_t slot, int res) {
  file_ops_--;
  Cmd &c = cmds_[slot];
  if (closing_) {
    c.state = Cmd::State::Sending;
    if (!c.in_ring) release(slot);
    return;
  }
  sq_.on_file_done(c.req, res);
}

bool Connection::tick(std::chrono::steady_clock::time_point now) {
  if (closing_) return false;
  return sq_.tick(now);
}

} // namespace mpnvme::target
