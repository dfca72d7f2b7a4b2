// SPDX-License-Identifier: GPL-2.0-only
// Connection: the transport half (PDU parsing, data movement, sending).
// Command semantics live in commands.cpp.
#include "mpnvme-target/transport/connection.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

#include "lib/base/log.hpp"

namespace mpnvme::target {
Connection::Connection(Registry &reg, ConnIo &io, int fd, PortState &port, std::string peer)
    : reg_(reg), io_(io), fd_(fd), port_(port), peer_(std::move(peer)), port_counters_(reg.counters(port.cfg.id)),
      inline_limit_(port.cfg.inline_data_size),
      // R2T, C2HData and response per command at most, plus ICResp/TermReq.
      tx_(static_cast<size_t>(reg.config().queue_entries) * 3 + 8),
      // Staging is compacted only when full: a target connection reads far
      // more than it holds, and moving bytes costs more than a short receive.
      rx_(*this, pdu::Receiver::Controller, 1) {
  label_ = fmt::format("port {} {}", port_.cfg.id, peer_);
  setup_deadline_ = std::chrono::steady_clock::now() + kSetupDeadline;
  const uint32_t entries = reg_.config().queue_entries;
  cmds_.resize(entries);
  free_.reserve(entries);
  for (size_t i = entries; i-- > 0;)
    free_.push_back(static_cast<uint16_t>(i));
  port_counters_.connections++;
}

Connection::~Connection() {
  for (Cmd &c : cmds_)
    std::free(c.buf);
  if (ctrl_) {
    if (qid_ == 0) { // the admin queue owns the controller association
      ctrl_->dead = true;
      reg_.remove_controller(*ctrl_);
      log().info("{}: controller {} of {} (host {}) removed", label_, ctrl_->cntlid, ctrl_->subsys.cfg.nqn, ctrl_->hostnqn);
    } else {
      std::lock_guard lk(ctrl_->mu);
      ctrl_->io_qids.erase(qid_);
      io_.io_queue_connected(-1);
    }
  }
  port_counters_.connections--;
}

void Connection::close(const std::string &why) {
  if (closing_) return;
  closing_ = true;
  close_reason_ = why;
  rx_.stop();
}

size_t Connection::rx_iov(iovec iov[2]) { return rx_.rx_iov(iov); }

void Connection::on_received(size_t n) {
  if (closing_) return;
  stats_.rx_bytes += n;
  port_counters_.rx_bytes += n;
  rx_.on_received(n);
}

SendRing::Pdu *Connection::tx_alloc(int32_t slot) {
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
  if (c.buf_cap >= len) return true;
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

void Connection::on_protocol_error(const uint8_t *termreq, size_t len, pdu::Fes fes, const std::string &why) {
  stats_.errors++;
  port_counters_.errors++;
  log().warn("{}: {}; sending C2HTermReq ({})", label_, why, pdu::fes_name(static_cast<uint16_t>(fes)));
  // Queued PDUs may be half way out already: the TermReq goes after them.
  if (SendRing::Pdu *t = tx_alloc(-1)) {
    std::memcpy(t->hdr, termreq, len);
    t->hdr_len = static_cast<uint8_t>(len);
    io_.want_send(*this);
  }
  close(why);
}

void Connection::on_termreq(const pdu::TermReq &t) {
  log().warn("{}: host terminated the connection: {} (fes {:#x} fei {:#x})", label_, pdu::fes_name(t.fes), t.fes, t.fei);
  close("H2CTermReq from the host");
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

uint32_t Connection::max_data(const pdu::Common &c) const {
  if (c.type == static_cast<uint8_t>(pdu::Type::H2CData)) return reg_.config().maxh2cdata;
  return qid_ == 0 || qid_ == 0xffff ? nvme::kAdminInlineBytes : inline_limit_;
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
  log().debug("{}: ICReq hpda {} digests {}/{} maxr2t {}", label_, req.hpda, req.digests.header, req.digests.data, req.maxr2t);
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
  if (digest_ok) return data_complete();
  // The command fails with Transient Transport Error and its data is never
  // used; the connection itself stays up (NVMe/TCP 1.0, 3.6.3).
  stats_.errors++;
  port_counters_.errors++;
  log().warn("{} qid {}: data digest mismatch for cid {:#x}: command failed", label_, qid_, cmds_[rx_.slot()].cid);
  if (cur_last_)
    complete(rx_.slot(), nvme::kStatusTransientTransport);
  else
    digest_failed_ = true;
}

void Connection::handle_capsule(const uint8_t *h, const pdu::Common &c) {
  if (free_.empty()) {
    rx_.protocol_error(pdu::Fes::PduSequenceError, "more commands in flight than the queue holds", h, c.hlen, 0);
    return;
  }
  const uint16_t slot = free_.back();
  free_.pop_back();
  Cmd &cmd = cmds_[slot];
  std::memcpy(cmd.sqe.b.data(), h + pdu::kCommonLen, pdu::kSqeLen);
  cmd.cid = cmd.sqe.cid();
  cmd.state = Cmd::State::Exec;
  cmd.received = cmd.data_len = cmd.out_len = 0;
  cmd.out = nullptr;
  cmd.in = nullptr;
  cmd.status = 0;
  cmd.dw0 = cmd.dw1 = 0;
  cmd.in_ring = 0;
  cmd.aer = false;
  stats_.commands++;
  port_counters_.commands++;
  if (sqsize_) sqhd_ = static_cast<uint16_t>((sqhd_ + 1) % sqsize_);

  const uint32_t incapsule = c.pdo ? c.plen - c.pdo - pdu::ddgst_len(rx_.digests().data) : 0;
  if (incapsule) {
    // Data inside the capsule: the SGL must describe exactly it, at offset 0.
    if (cmd.sqe.sgl_type() != nvme::kSglDataBlockOffset || cmd.sqe.sgl_len() != incapsule || cmd.sqe.sgl_addr() != 0) {
      rx_.protocol_error(pdu::Fes::InvalidHeaderField, "in-capsule data does not match the command's SGL", h, c.hlen, 8 + 24);
      return;
    }
    if (!ensure_buf(cmd, incapsule)) {
      rx_.protocol_error(pdu::Fes::UnsupportedParameter, "out of memory for command data", h, c.hlen, 0);
      return;
    }
    cmd.data_len = incapsule;
    cmd.in = cmd.buf;
    cur_last_ = true;
    rx_.begin_data(slot, cmd.in, incapsule);
    return;
  }
  dispatch(slot);
}

void Connection::handle_h2c_data(const uint8_t *h, const pdu::Common &c) {
  const pdu::DataHdr d = pdu::decode_data_hdr(h);
  if (d.ttag >= cmds_.size() || cmds_[d.ttag].state != Cmd::State::WaitData || cmds_[d.ttag].cid != d.cccid) {
    rx_.protocol_error(pdu::Fes::InvalidHeaderField, "H2CData for no outstanding R2T (ttag/cccid)", h, c.hlen, 10);
    return;
  }
  Cmd &cmd = cmds_[d.ttag];
  const uint32_t datal = c.plen - c.pdo - pdu::ddgst_len(rx_.digests().data);
  if (d.datal != datal) return rx_.protocol_error(pdu::Fes::InvalidHeaderField, "datal does not match plen", h, c.hlen, 16);
  if (d.datao != cmd.received) return rx_.protocol_error(pdu::Fes::DataOutOfRange, "H2CData out of order", h, c.hlen, 12);
  if (d.datal > cmd.data_len - cmd.received)
    return rx_.protocol_error(pdu::Fes::DataOutOfRange, "H2CData beyond the R2T", h, c.hlen, 16);
  const bool last = d.datao + d.datal == cmd.data_len;
  if (last != bool(c.flags & pdu::kFlagLast))
    return rx_.protocol_error(pdu::Fes::InvalidHeaderField, "LAST_PDU flag does not match the end of the transfer", h, c.hlen, 1);
  cur_last_ = last;
  rx_.begin_data(d.ttag, cmd.in + d.datao, d.datal);
}

void Connection::data_complete() {
  const uint16_t slot = rx_.slot();
  Cmd &cmd = cmds_[slot];
  cmd.received += rx_.datal();
  if (!cur_last_) return;
  if (digest_failed_) { // an earlier H2CData of this transfer was corrupt
    digest_failed_ = false;
    return complete(slot, nvme::kStatusTransientTransport);
  }
  if (cmd.state == Cmd::State::WaitData) {
    cmd.state = Cmd::State::Exec;
    execute(slot);
  } else {
    dispatch(slot);
  }
}

void Connection::send_r2t(uint16_t slot) {
  Cmd &cmd = cmds_[slot];
  cmd.state = Cmd::State::WaitData;
  SendRing::Pdu *t = tx_alloc(slot);
  const bool hd = rx_.digests().header;
  pdu::encode_r2t(t->hdr, hd ? pdu::kFlagHdgst : 0, static_cast<uint32_t>(pdu::kR2THlen + pdu::hdgst_len(hd)),
                  {cmd.cid, slot, 0, cmd.data_len});
  seal_header(*t, pdu::kR2THlen, hd);
  io_.want_send(*this);
}

// Queue the C2HData (if any) and the response of a finished command.
void Connection::finish(uint16_t slot) {
  Cmd &cmd = cmds_[slot];
  const pdu::Digests dg = rx_.digests();
  const bool with_data = cmd.status == 0 && cmd.out_len > 0;
  const bool success_flag = with_data && sqflow_disabled_;
  if (with_data)
    encode_data_pdu(*tx_alloc(slot), pdu::Type::C2HData, pdu::kFlagLast | (success_flag ? pdu::kFlagSuccess : 0),
                    {cmd.cid, 0, 0, cmd.out_len}, cmd.out, dg, hpda_);
  if (!success_flag) {
    SendRing::Pdu *t = tx_alloc(slot);
    pdu::encode_common(t->hdr, pdu::Type::CapsuleResp, dg.header ? pdu::kFlagHdgst : 0, pdu::kRespHlen, 0,
                       static_cast<uint32_t>(pdu::kRespHlen + pdu::hdgst_len(dg.header)));
    nvme::Cqe cqe;
    cqe.dw0 = cmd.dw0;
    cqe.dw1 = cmd.dw1;
    cqe.sqhd = sqflow_disabled_ ? 0xffff : sqhd_;
    cqe.sqid = qid_ == 0xffff ? 0 : qid_;
    cqe.cid = cmd.cid;
    cqe.status = cmd.status;
    nvme::encode_cqe(t->hdr + pdu::kCommonLen, cqe);
    seal_header(*t, pdu::kRespHlen, dg.header);
  }
  cmd.state = Cmd::State::Sending;
  io_.want_send(*this);
}

void Connection::release(uint16_t slot) {
  cmds_[slot].state = Cmd::State::Free;
  free_.push_back(slot);
}

bool Connection::tick(std::chrono::steady_clock::time_point now) {
  if (closing_) return false;
  if (port_.disabled) {
    close("port disabled");
    return false;
  }
  if (!ctrl_ && now > setup_deadline_) {
    log().warn("{}: no Connect within {} s of the connection: closed", label_, kSetupDeadline.count());
    close("set-up not finished in time");
    return false;
  }
  auth_expire(now);
  if (closing_) return false;
  if (ctrl_) {
    if (qid_ == 0 && !ctrl_->dead && ctrl_->kato_expired(now)) {
      log().warn("{}: keep alive timeout ({} ms) for host {}: controller {} torn down", label_, ctrl_->kato_ms, ctrl_->hostnqn,
                 ctrl_->cntlid);
      ctrl_->dead = true;
    }
    if (ctrl_->dead) {
      close("controller torn down");
      return false;
    }
    deliver_aens();
  }
  return true;
}

} // namespace mpnvme::target
