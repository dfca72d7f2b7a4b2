// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/queue.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <stdexcept>

#include "lib/base/log.hpp"

namespace mpnvme::host {
namespace {
// Compact the staging buffer when less than this is free at its end: more
// than any header, so a header never straddles the end.
constexpr size_t kRxCompactBelow = 8192;
} // namespace

// Every slot has at most one capsule in the ring; the rest is H2CData and
// the ICReq.
Queue::Queue(QueueParams params)
    : p_(std::move(params)), tx_(static_cast<size_t>(p_.slots) * 2 + 16), rx_(*this, pdu::Receiver::Host, kRxCompactBelow) {
  if (p_.slots == 0 || p_.slots > 4096) throw std::invalid_argument("queue slots must be 1..4096");
  slots_.resize(p_.slots);
  free_.reserve(p_.slots);
  for (size_t i = p_.slots; i-- > 0;)
    free_.push_back(static_cast<uint16_t>(i));
  done_.reserve(p_.slots);
  h2c_.resize(p_.slots);
  rx_.set_digests(p_.digests); // what the ICResp must confirm
}

void Queue::start() {
  pdu::IcReq req;
  req.digests = p_.digests;
  req.hpda = 0;   // no padding before C2HData payload
  req.maxr2t = 0; // one outstanding R2T per command, as Linux does
  SendRing::Pdu *t = tx_.alloc(-1);
  pdu::encode_icreq(t->hdr, req);
  t->hdr_len = static_cast<uint8_t>(pdu::kIcLen);
}

bool Queue::submit(const Command &c) {
  if (!ready_ || failed_ || free_.empty()) return false;
  if (tx_.full()) return false; // ring full of H2CData: the caller sends and retries
  const uint16_t idx = free_.back();
  free_.pop_back();
  SendRing::Pdu *t = tx_.alloc(idx);
  Slot &s = slots_[idx];
  s = Slot{Slot::State::Active, c, static_cast<uint8_t>(s.gen + 1)};
  inflight_++;

  nvme::Sqe sqe = c.sqe;
  sqe.set_cid(make_cid(idx));
  const bool hd = p_.digests.header, dd = p_.digests.data;
  const bool incapsule = c.dir == DataDir::ToController && c.len > 0 && c.len <= p_.incapsule_limit;
  if (incapsule)
    sqe.set_sgl(0, c.len, nvme::kSglDataBlockOffset);
  else
    sqe.set_sgl(0, c.dir == DataDir::None ? 0 : c.len, nvme::kSglTransportDataBlock);

  uint8_t pdo = 0;
  uint32_t plen = static_cast<uint32_t>(pdu::kCmdHlen + pdu::hdgst_len(hd));
  uint8_t flags = hd ? pdu::kFlagHdgst : 0;
  if (incapsule) {
    pdo = pdu::data_offset(pdu::kCmdHlen, hd, icresp_.cpda);
    plen = pdo + c.len + pdu::ddgst_len(dd);
    if (dd) flags |= pdu::kFlagDdgst;
  }
  pdu::encode_common(t->hdr, pdu::Type::CapsuleCmd, flags, pdu::kCmdHlen, pdo, plen);
  std::memcpy(t->hdr + pdu::kCommonLen, sqe.b.data(), pdu::kSqeLen);
  seal_header(*t, pdu::kCmdHlen, hd);
  s.in_ring = 1;
  if (incapsule) attach_payload(*t, pdo, c.data, c.len, dd);
  return true;
}

// Turn outstanding R2Ts into H2CData PDUs while the ring has room.
void Queue::generate_h2c() {
  const uint32_t maxdata = icresp_.maxh2cdata;
  while (h2c_count_ && !tx_.full()) {
    const uint16_t idx = h2c_[h2c_head_];
    Slot &s = slots_[idx];
    if (s.state != Slot::State::SendingData) { // completed meanwhile (an early response)
      h2c_head_ = (h2c_head_ + 1) % h2c_.size();
      h2c_count_--;
      continue;
    }
    const uint32_t chunk = std::min(s.r2t_end - s.r2t_next, maxdata);
    const bool last = s.r2t_next + chunk == s.r2t_end;
    SendRing::Pdu *t = tx_.alloc(idx);
    encode_data_pdu(*t, pdu::Type::H2CData, last ? pdu::kFlagLast : 0, {make_cid(idx), s.ttag, s.r2t_next, chunk},
                    s.cmd.data + s.r2t_next, p_.digests, icresp_.cpda);
    s.in_ring++;
    s.r2t_next += chunk;
    if (last) {
      s.state = Slot::State::Active; // the response comes next
      h2c_head_ = (h2c_head_ + 1) % h2c_.size();
      h2c_count_--;
    }
  }
}

size_t Queue::tx_iov(iovec *iov, size_t max) {
  if (failed_) return 0;
  generate_h2c();
  return tx_.build_iov(iov, max);
}

void Queue::on_sent(size_t n) {
  tx_.advance(n, [this](int32_t slot) {
    if (slot < 0) return;
    Slot &s = slots_[static_cast<size_t>(slot)];
    if (--s.in_ring == 0 && s.state == Slot::State::Retiring) release(static_cast<uint16_t>(slot));
  });
}

void Queue::complete(uint16_t idx, uint16_t status, uint32_t dw0, uint32_t dw1) {
  Slot &s = slots_[idx];
  done_.push_back({s.cmd.cookie, status, false, make_cid(idx), s.cmd.sqe.opcode(), dw0, dw1});
  s.state = Slot::State::Retiring;
  // A controller may complete a write with an error while H2CData for it is
  // still queued: keep the cid reserved until those PDUs have left.
  if (s.in_ring == 0) release(idx);
}

void Queue::release(uint16_t idx) {
  slots_[idx].state = Slot::State::Free;
  free_.push_back(idx);
  inflight_--;
}

void Queue::fail(const std::string &why) {
  if (!failed_) {
    failed_ = true;
    failure_ = why;
    rx_.stop();
    log().debug("{}: {}; {} command(s) in flight", p_.label, why, inflight_);
  }
  for (uint16_t i = 0; i < slots_.size(); i++) {
    Slot &s = slots_[i];
    if (s.state == Slot::State::Free) continue;
    if (s.state != Slot::State::Retiring) done_.push_back({s.cmd.cookie, 0, true, make_cid(i), s.cmd.sqe.opcode(), 0, 0});
    s.in_ring = 0;
    release(i);
  }
  // Nothing may point into the callers' buffers once their commands ended.
  tx_.clear();
  h2c_count_ = 0;
}

void Queue::on_protocol_error(const uint8_t *termreq, size_t len, pdu::Fes fes, const std::string &why) {
  termreq_.assign(termreq, termreq + len);
  fail(fmt::format("{}; sent H2CTermReq ({})", why, pdu::fes_name(static_cast<uint16_t>(fes))));
}

Queue::Slot *Queue::slot_for_cid(uint16_t cid, const char *pdu_name) {
  const uint16_t idx = cid & 0xfff;
  if (idx >= slots_.size()) return nullptr;
  Slot &s = slots_[idx];
  if (s.state == Slot::State::Free || s.state == Slot::State::Retiring || make_cid(idx) != cid) {
    log().debug("{}: {} for cid {:#x} which is not in flight", p_.label, pdu_name, cid);
    return nullptr;
  }
  return &s;
}

size_t Queue::rx_iov(iovec iov[2]) { return rx_.rx_iov(iov); }

void Queue::on_received(size_t n) { rx_.on_received(n); }

// ICResp, or a C2HTermReq when the controller refuses the connection.
size_t Queue::on_setup(const uint8_t *h, size_t staged) {
  if (staged < pdu::kCommonLen) return 0;
  const pdu::Common c = pdu::decode_common(h);
  if (c.type == static_cast<uint8_t>(pdu::Type::C2HTermReq)) {
    if (staged < pdu::kTermHlen) return 0;
    const auto t = pdu::decode_termreq(h);
    fail(fmt::format("controller refused the connection: {} (C2HTermReq fes {})", pdu::fes_name(t.fes), t.fes));
    return 0;
  }
  if (staged < pdu::kIcLen) return 0;
  if (auto v = pdu::decode_icresp(h, icresp_); !v) {
    fail(fmt::format("bad ICResp: {}", v.what));
    return 0;
  }
  if (icresp_.digests.header != p_.digests.header) {
    fail(fmt::format("controller {} header digest (hdr_digest={} requested)", icresp_.digests.header ? "forced" : "declined",
                     p_.digests.header ? 1 : 0));
    return 0;
  }
  if (icresp_.digests.data != p_.digests.data) {
    fail(fmt::format("controller {} data digest (data_digest={} requested)", icresp_.digests.data ? "forced" : "declined",
                     p_.digests.data ? 1 : 0));
    return 0;
  }
  ready_ = true;
  return pdu::kIcLen;
}

void Queue::on_termreq(const pdu::TermReq &t) {
  fail(fmt::format("controller terminated the connection: {} (C2HTermReq fes {:#x} fei {:#x})", pdu::fes_name(t.fes), t.fes,
                   t.fei));
}

void Queue::on_header(const uint8_t *h, const pdu::Common &c) {
  switch (static_cast<pdu::Type>(c.type)) {
  case pdu::Type::CapsuleResp: return on_response(h, c);
  case pdu::Type::R2T: return handle_r2t(h, c);
  case pdu::Type::C2HData: return handle_c2h_data(h, c);
  default: return rx_.protocol_error(pdu::Fes::InvalidHeaderField, "unexpected PDU type", h, c.hlen, 0);
  }
}

void Queue::on_response(const uint8_t *h, const pdu::Common &c) {
  const nvme::Cqe cqe = nvme::decode_cqe(h + pdu::kCommonLen);
  Slot *s = slot_for_cid(cqe.cid, "CapsuleResp");
  if (!s) return rx_.protocol_error(pdu::Fes::InvalidHeaderField, "response for a command not in flight", h, c.hlen, 20);
  if (s->state == Slot::State::SendingData) // Linux fails such a command and keeps the queue
    log().debug("{} cid {:#x}: response while its R2T is being answered", p_.label, cqe.cid);
  const auto idx = static_cast<uint16_t>(s - slots_.data());
  if (cqe.status == 0 && s->cmd.dir == DataDir::FromController && s->rx_done != s->cmd.len) {
    log().error("{} cid {:#x}: success with {} of {} data bytes received", p_.label, cqe.cid, s->rx_done, s->cmd.len);
    return complete(idx, nvme::kStatusDataXferError, cqe.dw0, cqe.dw1);
  }
  complete(idx, cqe.status, cqe.dw0, cqe.dw1);
}

void Queue::handle_r2t(const uint8_t *h, const pdu::Common &c) {
  const pdu::R2THdr r = pdu::decode_r2t(h);
  Slot *s = slot_for_cid(r.cccid, "R2T");
  if (!s || s->cmd.dir != DataDir::ToController)
    return rx_.protocol_error(pdu::Fes::InvalidHeaderField, "R2T for a command that is not a pending write", h, c.hlen, 8);
  if (r.r2tl == 0 || r.r2to > s->cmd.len || r.r2tl > s->cmd.len - r.r2to)
    return rx_.protocol_error(pdu::Fes::DataOutOfRange, "R2T range outside the command's data", h, c.hlen, 12);
  if (s->state == Slot::State::SendingData)
    return rx_.protocol_error(pdu::Fes::R2TLimitExceeded, "second R2T while one is outstanding (maxr2t 0)", h, c.hlen, 8);
  s->state = Slot::State::SendingData;
  s->ttag = r.ttag;
  s->r2t_next = r.r2to;
  s->r2t_end = r.r2to + r.r2tl;
  h2c_[(h2c_head_ + h2c_count_) % h2c_.size()] = static_cast<uint16_t>(s - slots_.data());
  h2c_count_++;
}

void Queue::handle_c2h_data(const uint8_t *h, const pdu::Common &c) {
  const pdu::DataHdr d = pdu::decode_data_hdr(h);
  Slot *s = slot_for_cid(d.cccid, "C2HData");
  if (!s || s->cmd.dir != DataDir::FromController)
    return rx_.protocol_error(pdu::Fes::InvalidHeaderField, "C2HData for a command that is not a pending read", h, c.hlen, 8);
  const uint32_t trailer = pdu::ddgst_len(p_.digests.data);
  if (c.pdo == 0 || c.plen < c.pdo + trailer)
    return rx_.protocol_error(pdu::Fes::InvalidHeaderField, "C2HData without data", h, c.hlen, 3);
  const uint32_t datal = c.plen - c.pdo - trailer;
  if (d.datal != datal) return rx_.protocol_error(pdu::Fes::InvalidHeaderField, "datal does not match plen", h, c.hlen, 16);
  if (d.datal == 0) return rx_.protocol_error(pdu::Fes::InvalidHeaderField, "C2HData without data", h, c.hlen, 16);
  if (d.datao != s->rx_done) return rx_.protocol_error(pdu::Fes::DataOutOfRange, "C2HData out of order", h, c.hlen, 12);
  if (d.datao > s->cmd.len || d.datal > s->cmd.len - d.datao)
    return rx_.protocol_error(pdu::Fes::DataOutOfRange, "C2HData beyond the command's buffer", h, c.hlen, 12);
  rx_.begin_data(static_cast<uint16_t>(s - slots_.data()), s->cmd.data + d.datao, d.datal);
}

void Queue::on_data_end(bool digest_ok) {
  const uint16_t idx = rx_.slot();
  Slot &s = slots_[idx];
  if (!digest_ok) {
    // The data can't be trusted: the command ends with a data transfer error
    // and the queue with it, as the Linux host does.
    log().error("{} cid {:#x}: data digest mismatch in C2HData (datao {} datal {})", p_.label, make_cid(idx), s.rx_done,
                rx_.datal());
    complete(idx, nvme::kStatusDataXferError);
    fail("data digest error");
    return;
  }
  s.rx_done += rx_.datal();
  if (rx_.current().flags & pdu::kFlagSuccess) {
    if (s.rx_done != s.cmd.len) {
      log().error("{} cid {:#x}: SUCCESS flag with {} of {} bytes", p_.label, make_cid(idx), s.rx_done, s.cmd.len);
      return complete(idx, nvme::kStatusDataXferError);
    }
    complete(idx, 0);
  }
}

} // namespace mpnvme::host
