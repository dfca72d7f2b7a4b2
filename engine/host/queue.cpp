// SPDX-License-Identifier: GPL-2.0-only
#include "queue.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <stdexcept>

#include "../../lib/crc32c.hpp"
#include "../../lib/log.hpp"
#include "../../lib/wire.hpp"

namespace mpnvme::host {
namespace {
constexpr size_t kRxBuffer = 64 * 1024;
// Compact the staging buffer when less than this is free at its end: more
// than any header, so a header never straddles the end.
constexpr size_t kRxCompactBelow = 8192;
} // namespace

// Every slot has at most one capsule in the ring; the rest is H2CData and
// the ICReq.
Queue::Queue(QueueParams params) : p_(std::move(params)), tx_(static_cast<size_t>(p_.slots) * 2 + 16), rx_(kRxBuffer) {
  if (p_.slots == 0 || p_.slots > 4096) throw std::invalid_argument("queue slots must be 1..4096");
  slots_.resize(p_.slots);
  free_.reserve(p_.slots);
  for (size_t i = p_.slots; i-- > 0;)
    free_.push_back(static_cast<uint16_t>(i));
  done_.reserve(p_.slots);
  h2c_.resize(p_.slots);
}

void Queue::start() {
  pdu::IcReq req;
  req.digests = p_.digests;
  req.hpda = 0;   // no padding before C2HData payload
  req.maxr2t = 0; // one outstanding R2T per command, as Linux does
  SendRing::Pdu *t = tx_.alloc(-1);
  pdu::encode_icreq(t->hdr, req);
  t->hdr_len = static_cast<uint8_t>(pdu::kIcLen);
  rx_state_ = Rx::IcResp;
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

  const size_t hdr_end = pdu::kCmdHlen + (hd ? pdu::kDigestLen : 0);
  uint8_t pdo = 0;
  uint32_t plen = static_cast<uint32_t>(hdr_end);
  uint8_t flags = hd ? pdu::kFlagHdgst : 0;
  if (incapsule) {
    pdo = pdu::data_offset(pdu::kCmdHlen, hd, icresp_.cpda);
    plen = pdo + c.len + (dd ? pdu::kDigestLen : 0);
    if (dd) flags |= pdu::kFlagDdgst;
  }
  pdu::encode_common(t->hdr, pdu::Type::CapsuleCmd, flags, pdu::kCmdHlen, pdo, plen);
  std::memcpy(t->hdr + pdu::kCommonLen, sqe.b.data(), pdu::kSqeLen);
  if (hd) pdu::put_header_digest(t->hdr, pdu::kCmdHlen);
  t->hdr_len = static_cast<uint8_t>(hdr_end);
  s.in_ring = 1;
  if (incapsule) {
    t->pad = static_cast<uint8_t>(pdo - hdr_end);
    t->data = c.data;
    t->data_len = c.len;
    if (dd) {
      wire::put32(t->ddgst, 0, crc32c(c.data, c.len));
      t->has_ddgst = true;
    }
  }
  return true;
}

// Turn outstanding R2Ts into H2CData PDUs while the ring has room.
void Queue::generate_h2c() {
  const bool hd = p_.digests.header, dd = p_.digests.data;
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
    const uint8_t pdo = pdu::data_offset(pdu::kDataHlen, hd, icresp_.cpda);
    const uint8_t flags =
        static_cast<uint8_t>((hd ? pdu::kFlagHdgst : 0) | (dd ? pdu::kFlagDdgst : 0) | (last ? pdu::kFlagLast : 0));
    pdu::encode_data_hdr(t->hdr, pdu::Type::H2CData, flags, pdo, pdo + chunk + (dd ? 4u : 0u),
                         {make_cid(idx), s.ttag, s.r2t_next, chunk});
    if (hd) pdu::put_header_digest(t->hdr, pdu::kDataHlen);
    t->hdr_len = static_cast<uint8_t>(pdu::kDataHlen + (hd ? pdu::kDigestLen : 0));
    t->pad = static_cast<uint8_t>(pdo - t->hdr_len);
    t->data = s.cmd.data + s.r2t_next;
    t->data_len = chunk;
    if (dd) {
      wire::put32(t->ddgst, 0, crc32c(t->data, chunk));
      t->has_ddgst = true;
    }
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

void Queue::protocol_error(pdu::Fes fes, const char *what, const uint8_t *hdr, size_t hlen, uint32_t fei) {
  uint8_t term[pdu::kTermMaxPlen];
  const size_t len = pdu::encode_termreq(term, pdu::Type::H2CTermReq, {static_cast<uint16_t>(fes), fei}, hdr, hlen);
  termreq_.assign(term, term + len);
  const pdu::Common c = pdu::decode_common(hdr);
  fail(fmt::format("protocol error in {} PDU (type {:#x} flags {:#x} hlen {} pdo {} plen {}): {}; sent H2CTermReq ({})",
                   pdu::type_name(c.type), c.type, c.flags, c.hlen, c.pdo, c.plen, what,
                   pdu::fes_name(static_cast<uint16_t>(fes))));
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

size_t Queue::rx_iov(iovec iov[2]) { return rx_.receive_iov(iov, rx_state_ == Rx::Data, kRxCompactBelow); }

void Queue::on_received(size_t n) {
  if (failed_) return;
  if (n == 0) {
    fail("connection closed by the controller");
    return;
  }
  if (rx_.take_direct(n, p_.digests.data)) {
    if (p_.digests.data)
      rx_state_ = Rx::DataDigest;
    else
      finish_data_pdu();
  }
  rx_.len += n;
  process();
}

void Queue::process() {
  while (!failed_) {
    switch (rx_state_) {
    case Rx::IcResp:
      if (!take_icresp()) return;
      break;
    case Rx::Header:
      if (!take_header()) return;
      break;
    case Rx::Pad: {
      if (!staged()) return;
      const auto skip = static_cast<uint32_t>(std::min<size_t>(rx_.pad, staged()));
      rx_.pos += skip;
      rx_.pad -= skip;
      if (!rx_.pad) rx_state_ = Rx::Data;
      break;
    }
    case Rx::Data:
      if (!staged()) return;
      take_data();
      break;
    case Rx::DataDigest:
      if (staged() < ddgst_.size()) return;
      std::memcpy(ddgst_.data(), rx_.buf.data() + rx_.pos, ddgst_.size());
      rx_.pos += ddgst_.size();
      finish_data_pdu();
      break;
    }
  }
}

bool Queue::take_icresp() {
  if (staged() < pdu::kCommonLen) return false;
  const uint8_t *h = rx_.buf.data() + rx_.pos;
  const pdu::Common c = pdu::decode_common(h);
  if (c.type == static_cast<uint8_t>(pdu::Type::C2HTermReq)) {
    if (staged() < pdu::kTermHlen) return false;
    const auto t = pdu::decode_termreq(h);
    fail(fmt::format("controller refused the connection: {} (C2HTermReq fes {})", pdu::fes_name(t.fes), t.fes));
    return false;
  }
  if (staged() < pdu::kIcLen) return false;
  if (auto v = pdu::decode_icresp(h, icresp_); !v) {
    fail(fmt::format("bad ICResp: {}", v.what));
    return false;
  }
  rx_.pos += pdu::kIcLen;
  if (icresp_.digests.header != p_.digests.header) {
    fail(fmt::format("controller {} header digest (hdr_digest={} requested)", icresp_.digests.header ? "forced" : "declined",
                     p_.digests.header ? 1 : 0));
    return false;
  }
  if (icresp_.digests.data != p_.digests.data) {
    fail(fmt::format("controller {} data digest (data_digest={} requested)", icresp_.digests.data ? "forced" : "declined",
                     p_.digests.data ? 1 : 0));
    return false;
  }
  ready_ = true;
  rx_state_ = Rx::Header;
  return true;
}

bool Queue::take_header() {
  if (staged() < pdu::kCommonLen) return false;
  const uint8_t *h = rx_.buf.data() + rx_.pos;
  const pdu::Common c = pdu::decode_common(h);
  const pdu::Verdict v = pdu::validate(c, pdu::Receiver::Host, p_.digests, UINT32_MAX);
  if (!v) {
    protocol_error(v.fes, v.what, h, pdu::kCommonLen, v.field_offset);
    return false;
  }
  const bool term = c.type == static_cast<uint8_t>(pdu::Type::C2HTermReq);
  const size_t hdr_total = c.hlen + (p_.digests.header && !term ? pdu::kDigestLen : 0);
  if (staged() < hdr_total) return false;
  rx_.cur = c;
  std::memcpy(rx_.hdr, h, std::min(hdr_total, sizeof rx_.hdr));
  rx_.pos += hdr_total;
  handle_header(rx_.hdr, c);
  return !failed_;
}

// Payload bytes that were read ahead together with a header.
void Queue::take_data() {
  const auto n = static_cast<uint32_t>(std::min<size_t>(rx_.left, staged()));
  std::memcpy(rx_.dst, rx_.buf.data() + rx_.pos, n);
  rx_.pos += n;
  if (p_.digests.data) rx_.crc = crc32c_update(rx_.crc, rx_.dst, n);
  rx_.dst += n;
  rx_.left -= n;
  if (rx_.left) return;
  if (p_.digests.data)
    rx_state_ = Rx::DataDigest;
  else
    finish_data_pdu();
}

void Queue::handle_header(const uint8_t *h, const pdu::Common &c) {
  const auto type = static_cast<pdu::Type>(c.type);
  if (type == pdu::Type::C2HTermReq) {
    const auto t = pdu::decode_termreq(h);
    fail(fmt::format("controller terminated the connection: {} (C2HTermReq fes {:#x} fei {:#x})", pdu::fes_name(t.fes), t.fes,
                     t.fei));
    return;
  }
  if (p_.digests.header && !pdu::header_digest_ok(h, c.hlen))
    return protocol_error(pdu::Fes::HeaderDigestError, "header digest mismatch", h, c.hlen, 0);
  switch (type) {
  case pdu::Type::CapsuleResp: {
    const nvme::Cqe cqe = nvme::decode_cqe(h + pdu::kCommonLen);
    Slot *s = slot_for_cid(cqe.cid, "CapsuleResp");
    if (!s) return protocol_error(pdu::Fes::InvalidHeaderField, "response for a command not in flight", h, c.hlen, 20);
    if (s->state == Slot::State::SendingData) // Linux fails such a command and keeps the queue
      log().debug("{} cid {:#x}: response while its R2T is being answered", p_.label, cqe.cid);
    const auto idx = static_cast<uint16_t>(s - slots_.data());
    if (cqe.status == 0 && s->cmd.dir == DataDir::FromController && s->rx_done != s->cmd.len) {
      log().error("{} cid {:#x}: success with {} of {} data bytes received", p_.label, cqe.cid, s->rx_done, s->cmd.len);
      return complete(idx, nvme::kStatusDataXferError, cqe.dw0, cqe.dw1);
    }
    return complete(idx, cqe.status, cqe.dw0, cqe.dw1);
  }
  case pdu::Type::R2T: return handle_r2t(h, c);
  case pdu::Type::C2HData: return handle_c2h_data(h, c);
  default: return protocol_error(pdu::Fes::InvalidHeaderField, "unexpected PDU type", h, c.hlen, 0);
  }
}

void Queue::handle_r2t(const uint8_t *h, const pdu::Common &c) {
  const pdu::R2THdr r = pdu::decode_r2t(h);
  Slot *s = slot_for_cid(r.cccid, "R2T");
  if (!s || s->cmd.dir != DataDir::ToController)
    return protocol_error(pdu::Fes::InvalidHeaderField, "R2T for a command that is not a pending write", h, c.hlen, 8);
  if (r.r2tl == 0 || r.r2to > s->cmd.len || r.r2tl > s->cmd.len - r.r2to)
    return protocol_error(pdu::Fes::DataOutOfRange, "R2T range outside the command's data", h, c.hlen, 12);
  if (s->state == Slot::State::SendingData)
    return protocol_error(pdu::Fes::R2TLimitExceeded, "second R2T while one is outstanding (maxr2t 0)", h, c.hlen, 8);
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
    return protocol_error(pdu::Fes::InvalidHeaderField, "C2HData for a command that is not a pending read", h, c.hlen, 8);
  const uint32_t trailer = p_.digests.data ? 4u : 0u;
  if (c.pdo == 0 || c.plen < c.pdo + trailer)
    return protocol_error(pdu::Fes::InvalidHeaderField, "C2HData without data", h, c.hlen, 3);
  const uint32_t datal = c.plen - c.pdo - trailer;
  if (d.datal != datal) return protocol_error(pdu::Fes::InvalidHeaderField, "datal does not match plen", h, c.hlen, 16);
  if (d.datal == 0) return protocol_error(pdu::Fes::InvalidHeaderField, "C2HData without data", h, c.hlen, 16);
  if (d.datao != s->rx_done) return protocol_error(pdu::Fes::DataOutOfRange, "C2HData out of order", h, c.hlen, 12);
  if (d.datao > s->cmd.len || d.datal > s->cmd.len - d.datao)
    return protocol_error(pdu::Fes::DataOutOfRange, "C2HData beyond the command's buffer", h, c.hlen, 12);
  const bool pad = rx_.begin_data(static_cast<uint16_t>(s - slots_.data()), s->cmd.data + d.datao, d.datal, c, p_.digests.header);
  rx_state_ = pad ? Rx::Pad : Rx::Data;
}

void Queue::finish_data_pdu() {
  Slot &s = slots_[rx_.slot];
  rx_state_ = Rx::Header;
  if (p_.digests.data && wire::get32(ddgst_.data(), 0) != crc32c_final(rx_.crc)) {
    // The data can't be trusted: the command ends with a data transfer error
    // and the queue with it, as the Linux host does.
    log().error("{} cid {:#x}: data digest mismatch in C2HData (datao {} datal {})", p_.label, make_cid(rx_.slot), s.rx_done,
                rx_.datal);
    complete(rx_.slot, nvme::kStatusDataXferError);
    fail("data digest error");
    return;
  }
  s.rx_done += rx_.datal;
  if (rx_.cur.flags & pdu::kFlagSuccess) {
    if (s.rx_done != s.cmd.len) {
      log().error("{} cid {:#x}: SUCCESS flag with {} of {} bytes", p_.label, make_cid(rx_.slot), s.rx_done, s.cmd.len);
      return complete(rx_.slot, nvme::kStatusDataXferError);
    }
    complete(rx_.slot, 0);
  }
}

} // namespace mpnvme::host
