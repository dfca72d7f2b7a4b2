// SPDX-License-Identifier: GPL-2.0-only
// Connection: the transport half (PDU parsing, data movement, sending).
// Command semantics live in commands.cpp.
#include "connection.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

#include "crc32c.hpp"
#include "log.hpp"
#include "wire.hpp"

namespace mpnvme::target {
namespace {
constexpr size_t kRxBuffer = 64 * 1024;
constexpr uint32_t kAdminInline = 8192;
} // namespace

Connection::Connection(Registry &reg, ConnIo &io, int fd, PortState &port, std::string peer)
    : reg_(reg), io_(io), fd_(fd), port_(port), peer_(std::move(peer)), port_counters_(reg.counters(port.cfg.id)),
      inline_limit_(port.cfg.inline_data_size),
      // R2T, C2HData and response per command at most, plus ICResp/TermReq.
      tx_(static_cast<size_t>(reg.config().queue_entries) * 3 + 8), rx_(kRxBuffer) {
  label_ = fmt::format("port {} {}", port_.cfg.id, peer_);
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
    }
  }
  port_counters_.connections--;
}

void Connection::close(const std::string &why) {
  if (closing_) return;
  closing_ = true;
  close_reason_ = why;
}

// Staging is compacted only when full: a target connection reads far more
// than it holds, and moving bytes costs more than a short receive.
size_t Connection::rx_iov(iovec iov[2]) { return rx_.receive_iov(iov, rx_state_ == Rx::Data, 1); }

void Connection::on_received(size_t n) {
  if (closing_) return;
  if (n == 0) {
    close("closed by the host");
    return;
  }
  stats_.rx_bytes += n;
  port_counters_.rx_bytes += n;
  if (rx_.take_direct(n, dg_.data)) {
    if (dg_.data)
      rx_state_ = Rx::DataDigest;
    else
      data_complete();
  }
  rx_.len += n;
  process();
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

void Connection::protocol_error(pdu::Fes fes, const char *what, const uint8_t *hdr, size_t hlen, uint32_t fei) {
  stats_.errors++;
  port_counters_.errors++;
  const pdu::Common c = pdu::decode_common(hdr);
  log().warn("{}: protocol error in {} PDU (type {:#x} flags {:#x} hlen {} pdo {} plen {}): {}; sending C2HTermReq ({})", label_,
             pdu::type_name(c.type), c.type, c.flags, c.hlen, c.pdo, c.plen, what, pdu::fes_name(static_cast<uint16_t>(fes)));
  // Queued PDUs may be half way out already: the TermReq goes after them.
  if (SendRing::Pdu *t = tx_alloc(-1)) {
    t->hdr_len = static_cast<uint8_t>(
        pdu::encode_termreq(t->hdr, pdu::Type::C2HTermReq, {static_cast<uint16_t>(fes), fei}, hdr, std::min<size_t>(hlen, 128)));
    io_.want_send(*this);
  }
  rx_state_ = Rx::Discard;
  close(fmt::format("protocol error: {}", what));
}

bool Connection::handle_icreq(const uint8_t *h) {
  pdu::IcReq req;
  if (auto v = pdu::decode_icreq(h, req); !v) {
    protocol_error(v.fes, v.what, h, pdu::kIcLen, v.field_offset);
    return false;
  }
  dg_ = req.digests;
  hpda_ = req.hpda;
  pdu::IcResp resp;
  resp.cpda = 0;
  resp.digests = req.digests; // we support both digests
  resp.maxh2cdata = reg_.config().maxh2cdata;
  SendRing::Pdu *t = tx_alloc(-1);
  pdu::encode_icresp(t->hdr, resp);
  t->hdr_len = pdu::kIcLen;
  io_.want_send(*this);
  log().debug("{}: ICReq hpda {} digests {}/{} maxr2t {}", label_, req.hpda, dg_.header, dg_.data, req.maxr2t);
  return true;
}

void Connection::process() {
  while (!closing_) {
    const size_t avail = rx_.staged();
    switch (rx_state_) {
    case Rx::Discard: rx_.pos = rx_.len; return;
    case Rx::Ic: {
      if (avail < pdu::kCommonLen) return;
      const pdu::Common c = pdu::decode_common(rx_.buf.data() + rx_.pos);
      if (c.type != static_cast<uint8_t>(pdu::Type::ICReq) || c.plen != pdu::kIcLen) {
        protocol_error(pdu::Fes::PduSequenceError, "first PDU is not an ICReq", rx_.buf.data() + rx_.pos, pdu::kCommonLen, 0);
        return;
      }
      if (avail < pdu::kIcLen) return;
      if (!handle_icreq(rx_.buf.data() + rx_.pos)) return;
      rx_.pos += pdu::kIcLen;
      rx_state_ = Rx::Header;
      break;
    }
    case Rx::Header: {
      if (avail < pdu::kCommonLen) return;
      const uint8_t *h = rx_.buf.data() + rx_.pos;
      const pdu::Common c = pdu::decode_common(h);
      const uint32_t max_data = c.type == static_cast<uint8_t>(pdu::Type::H2CData) ? reg_.config().maxh2cdata
                                : qid_ == 0 || qid_ == 0xffff                      ? kAdminInline
                                                                                   : inline_limit_;
      if (pdu::Verdict v = pdu::validate(c, pdu::Receiver::Controller, dg_, max_data); !v) {
        protocol_error(v.fes, v.what, h, pdu::kCommonLen, v.field_offset);
        return;
      }
      const bool term = c.type == static_cast<uint8_t>(pdu::Type::H2CTermReq);
      const size_t hdr_total = c.hlen + (dg_.header && !term ? pdu::kDigestLen : 0);
      if (avail < hdr_total) return;
      rx_.cur = c;
      std::memcpy(rx_.hdr, h, std::min(hdr_total, sizeof rx_.hdr));
      rx_.pos += hdr_total;
      handle_header(rx_.hdr, c);
      break;
    }
    case Rx::Pad: {
      const size_t take = std::min<size_t>(rx_.pad, avail);
      rx_.pos += take;
      rx_.pad -= static_cast<uint32_t>(take);
      if (rx_.pad) return;
      rx_state_ = Rx::Data;
      break;
    }
    case Rx::Data: {
      const size_t take = std::min<size_t>(rx_.left, avail);
      if (!take) return;
      std::memcpy(rx_.dst, rx_.buf.data() + rx_.pos, take);
      if (dg_.data) rx_.crc = crc32c_update(rx_.crc, rx_.dst, take);
      rx_.pos += take;
      rx_.dst += take;
      rx_.left -= static_cast<uint32_t>(take);
      if (rx_.left) return;
      if (dg_.data)
        rx_state_ = Rx::DataDigest;
      else
        data_complete();
      break;
    }
    case Rx::DataDigest: {
      if (avail < 4) return;
      const uint32_t got = wire::get32(rx_.buf.data(), rx_.pos);
      rx_.pos += 4;
      if (got != crc32c_final(rx_.crc)) {
        // The command fails with Transient Transport Error and its data is
        // never used; the connection itself stays up (NVMe/TCP 1.0, 3.6.3).
        stats_.errors++;
        port_counters_.errors++;
        log().warn("{} qid {}: data digest mismatch for cid {:#x}: command failed", label_, qid_, cmds_[rx_.slot].cid);
        rx_state_ = Rx::Header;
        if (cur_last_)
          complete(rx_.slot, nvme::kStatusTransientTransport);
        else
          digest_failed_ = true;
        break;
      }
      data_complete();
      break;
    }
    }
  }
}

void Connection::handle_header(const uint8_t *h, const pdu::Common &c) {
  const auto type = static_cast<pdu::Type>(c.type);
  if (type == pdu::Type::H2CTermReq) {
    const auto t = pdu::decode_termreq(h);
    log().warn("{}: host terminated the connection: {} (fes {:#x} fei {:#x})", label_, pdu::fes_name(t.fes), t.fes, t.fei);
    rx_state_ = Rx::Discard;
    close("H2CTermReq from the host");
    return;
  }
  if (dg_.header && !pdu::header_digest_ok(h, c.hlen)) {
    protocol_error(pdu::Fes::HeaderDigestError, "header digest mismatch", h, c.hlen, 0);
    return;
  }
  if (type == pdu::Type::CapsuleCmd)
    handle_capsule(h, c);
  else if (type == pdu::Type::H2CData)
    handle_h2c_data(h, c);
  else
    protocol_error(pdu::Fes::InvalidHeaderField, "unexpected PDU type", h, c.hlen, 0);
}

void Connection::handle_capsule(const uint8_t *h, const pdu::Common &c) {
  if (free_.empty()) {
    protocol_error(pdu::Fes::PduSequenceError, "more commands in flight than the queue holds", h, c.hlen, 0);
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
  if (ctrl_) ctrl_->touch();

  const uint32_t incapsule = c.pdo ? c.plen - c.pdo - (dg_.data ? 4u : 0u) : 0;
  if (incapsule) {
    // Data inside the capsule: the SGL must describe exactly it, at offset 0.
    if (cmd.sqe.sgl_type() != nvme::kSglDataBlockOffset || cmd.sqe.sgl_len() != incapsule || cmd.sqe.sgl_addr() != 0) {
      protocol_error(pdu::Fes::InvalidHeaderField, "in-capsule data does not match the command's SGL", h, c.hlen, 8 + 24);
      return;
    }
    if (!ensure_buf(cmd, incapsule)) {
      protocol_error(pdu::Fes::UnsupportedParameter, "out of memory for command data", h, c.hlen, 0);
      return;
    }
    cmd.data_len = incapsule;
    cmd.in = cmd.buf;
    cur_last_ = true;
    rx_state_ = rx_.begin_data(slot, cmd.in, incapsule, c, dg_.header) ? Rx::Pad : Rx::Data;
    return;
  }
  rx_state_ = Rx::Header;
  dispatch(slot);
}

void Connection::handle_h2c_data(const uint8_t *h, const pdu::Common &c) {
  const pdu::DataHdr d = pdu::decode_data_hdr(h);
  if (d.ttag >= cmds_.size() || cmds_[d.ttag].state != Cmd::State::WaitData || cmds_[d.ttag].cid != d.cccid) {
    protocol_error(pdu::Fes::InvalidHeaderField, "H2CData for no outstanding R2T (ttag/cccid)", h, c.hlen, 10);
    return;
  }
  Cmd &cmd = cmds_[d.ttag];
  const uint32_t datal = c.plen - c.pdo - (dg_.data ? 4u : 0u);
  if (d.datal != datal) return protocol_error(pdu::Fes::InvalidHeaderField, "datal does not match plen", h, c.hlen, 16);
  if (d.datao != cmd.received) return protocol_error(pdu::Fes::DataOutOfRange, "H2CData out of order", h, c.hlen, 12);
  if (d.datal > cmd.data_len - cmd.received)
    return protocol_error(pdu::Fes::DataOutOfRange, "H2CData beyond the R2T", h, c.hlen, 16);
  const bool last = d.datao + d.datal == cmd.data_len;
  if (last != bool(c.flags & pdu::kFlagLast))
    return protocol_error(pdu::Fes::InvalidHeaderField, "LAST_PDU flag does not match the end of the transfer", h, c.hlen, 1);
  cur_last_ = last;
  rx_state_ = rx_.begin_data(d.ttag, cmd.in + d.datao, d.datal, c, dg_.header) ? Rx::Pad : Rx::Data;
}

void Connection::data_complete() {
  rx_state_ = Rx::Header;
  Cmd &cmd = cmds_[rx_.slot];
  cmd.received += rx_.datal;
  if (!cur_last_) return;
  if (digest_failed_) { // an earlier H2CData of this transfer was corrupt
    digest_failed_ = false;
    return complete(rx_.slot, nvme::kStatusTransientTransport);
  }
  if (cmd.state == Cmd::State::WaitData) {
    cmd.state = Cmd::State::Exec;
    execute(rx_.slot);
  } else {
    dispatch(rx_.slot);
  }
}

void Connection::send_r2t(uint16_t slot) {
  Cmd &cmd = cmds_[slot];
  cmd.state = Cmd::State::WaitData;
  SendRing::Pdu *t = tx_alloc(slot);
  const uint32_t plen = pdu::kR2THlen + (dg_.header ? 4u : 0u);
  pdu::encode_r2t(t->hdr, dg_.header ? pdu::kFlagHdgst : 0, plen, {cmd.cid, slot, 0, cmd.data_len});
  if (dg_.header) pdu::put_header_digest(t->hdr, pdu::kR2THlen);
  t->hdr_len = static_cast<uint8_t>(plen);
  io_.want_send(*this);
}

// Queue the C2HData (if any) and the response of a finished command.
void Connection::finish(uint16_t slot) {
  Cmd &cmd = cmds_[slot];
  const bool hd = dg_.header, dd = dg_.data;
  const bool with_data = cmd.status == 0 && cmd.out_len > 0;
  const bool success_flag = with_data && sqflow_disabled_;
  if (with_data) {
    SendRing::Pdu *t = tx_alloc(slot);
    const uint8_t pdo = pdu::data_offset(pdu::kDataHlen, hd, hpda_);
    const uint8_t flags = static_cast<uint8_t>((hd ? pdu::kFlagHdgst : 0) | (dd ? pdu::kFlagDdgst : 0) | pdu::kFlagLast |
                                               (success_flag ? pdu::kFlagSuccess : 0));
    pdu::encode_data_hdr(t->hdr, pdu::Type::C2HData, flags, pdo, pdo + cmd.out_len + (dd ? 4u : 0u),
                         {cmd.cid, 0, 0, cmd.out_len});
    if (hd) pdu::put_header_digest(t->hdr, pdu::kDataHlen);
    t->hdr_len = static_cast<uint8_t>(pdu::kDataHlen + (hd ? 4 : 0));
    t->pad = static_cast<uint8_t>(pdo - t->hdr_len);
    t->data = cmd.out;
    t->data_len = cmd.out_len;
    if (dd) {
      wire::put32(t->ddgst, 0, crc32c(cmd.out, cmd.out_len));
      t->has_ddgst = true;
    }
  }
  if (!success_flag) {
    SendRing::Pdu *t = tx_alloc(slot);
    const uint32_t plen = pdu::kRespHlen + (hd ? 4u : 0u);
    pdu::encode_common(t->hdr, pdu::Type::CapsuleResp, hd ? pdu::kFlagHdgst : 0, pdu::kRespHlen, 0, plen);
    nvme::Cqe cqe;
    cqe.dw0 = cmd.dw0;
    cqe.dw1 = cmd.dw1;
    cqe.sqhd = sqflow_disabled_ ? 0xffff : sqhd_;
    cqe.sqid = qid_ == 0xffff ? 0 : qid_;
    cqe.cid = cmd.cid;
    cqe.status = cmd.status;
    nvme::encode_cqe(t->hdr + pdu::kCommonLen, cqe);
    if (hd) pdu::put_header_digest(t->hdr, pdu::kRespHlen);
    t->hdr_len = static_cast<uint8_t>(plen);
  }
  cmd.state = Cmd::State::Sending;
  io_.want_send(*this);
}

void Connection::release(uint16_t slot) {
  cmds_[slot].state = Cmd::State::Free;
  free_.push_back(slot);
}

bool Connection::poll(std::chrono::steady_clock::time_point now) {
  if (closing_) return false;
  if (port_.disabled) {
    close("port disabled");
    return false;
  }
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
