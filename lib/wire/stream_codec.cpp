// SPDX-License-Identifier: GPL-2.0-only
#include "lib/wire/stream_codec.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

#include "lib/wire/crc32c.hpp"
#include "lib/wire/wire.hpp"

namespace mpnvme {

PduReceiver::PduReceiver(PduHandler &handler, pdu::Receiver who, size_t compact_below, size_t staging)
    : h_(handler), who_(who), compact_below_(compact_below), cur_(staging) {}

// A guarded destination is entered before a receive may write into it
// (and left once it did, or failed): a revocation waits for that receive,
// and one that came first sends the rest to the sink.
size_t PduReceiver::rx_iov(iovec iov[2]) {
  const bool direct = phase_ == RxPhase::Data && cur_.staged() == 0 && cur_.left;
  if (direct && guard_ && !cur_.sinking) {
    if (guard_->enter())
      guard_entered_ = true;
    else
      sink_rest();
  }
  return cur_.receive_iov(iov, phase_ == RxPhase::Data, compact_below_);
}

void PduReceiver::leave_guard() {
  if (!guard_entered_) return;
  guard_entered_ = false;
  guard_->leave();
}

void PduReceiver::on_receive_failed() { leave_guard(); }

void PduReceiver::sink_rest() {
  if (sink_.empty()) sink_.resize(16 * 1024);
  cur_.sink = sink_.data();
  cur_.sink_len = static_cast<uint32_t>(sink_.size());
  cur_.sinking = true;
}

void PduReceiver::on_received(size_t n) {
  if (phase_ == RxPhase::Discard) return leave_guard();
  if (n == 0) {
    leave_guard();
    phase_ = RxPhase::Discard;
    h_.on_peer_closed();
    return;
  }
  // The part that went straight to the destination finished the payload.
  const bool finished = cur_.take_direct(n, dg_.data);
  leave_guard();
  if (finished) {
    if (dg_.data)
      phase_ = RxPhase::DataDigest;
    else
      end_data(true);
  }
  cur_.len += n;
  process();
}

void PduReceiver::begin_data(uint16_t slot, uint8_t *dst, uint32_t n, PlacementGuard *guard) {
  phase_ = cur_.begin_data(slot, dst, n, cur_.cur, dg_.header) ? RxPhase::Pad : RxPhase::Data;
  guard_ = guard;
}

void PduReceiver::begin_discard(uint16_t slot, uint32_t n) {
  begin_data(slot, nullptr, n);
  sink_rest();
}

std::string PduReceiver::describe(const uint8_t *hdr, const char *what) {
  const pdu::Common c = pdu::decode_common(hdr);
  return fmt::format("protocol error in {} PDU (type {:#x} flags {:#x} hlen {} pdo {} plen {}): {}", pdu::type_name(c.type),
                     c.type, c.flags, c.hlen, c.pdo, c.plen, what);
}

void PduReceiver::protocol_error(pdu::Fes fes, const char *what, const uint8_t *hdr, size_t hlen, uint32_t fei) {
  uint8_t term[pdu::kTermMaxPlen];
  const pdu::Type type = who_ == pdu::Receiver::Host ? pdu::Type::H2CTermReq : pdu::Type::C2HTermReq;
  const size_t len = pdu::encode_termreq(term, type, {static_cast<uint16_t>(fes), fei}, hdr, std::min<size_t>(hlen, 128));
  phase_ = RxPhase::Discard;
  h_.on_protocol_error(term, len, fes, describe(hdr, what));
}

void PduReceiver::process() {
  while (step()) {
  }
}

// One step of the state machine; false when it must wait for bytes (or
// parses nothing more).
bool PduReceiver::step() {
  const size_t avail = cur_.staged();
  const uint8_t *at = cur_.buf.data() + cur_.pos;
  switch (phase_) {
  case RxPhase::Discard: cur_.pos = cur_.len; return false;
  case RxPhase::Setup: {
    if (!avail) return false;
    const size_t took = h_.on_setup(at, avail);
    if (!took) return phase_ != RxPhase::Setup; // refused (Discard), or wait
    cur_.pos += took;
    if (phase_ == RxPhase::Setup) phase_ = RxPhase::Header;
    return true;
  }
  case RxPhase::Header: return take_header();
  case RxPhase::Pad: {
    const auto skip = static_cast<uint32_t>(std::min<size_t>(cur_.pad, avail));
    cur_.pos += skip;
    cur_.pad -= skip;
    if (cur_.pad) return false;
    phase_ = RxPhase::Data;
    return true;
  }
  case RxPhase::Data:
    if (!avail) return false;
    take_staged_data();
    return true;
  case RxPhase::DataDigest: {
    if (avail < pdu::kDigestLen) return false;
    const uint32_t got = wire::get32(at, 0);
    cur_.pos += pdu::kDigestLen;
    end_data(got == crc32c_final(cur_.crc));
    return true;
  }
  }
  return false;
}

bool PduReceiver::take_header() {
  if (cur_.staged() < pdu::kCommonLen) return false;
  const uint8_t *h = cur_.buf.data() + cur_.pos;
  const pdu::Common c = pdu::decode_common(h);
  if (const pdu::Verdict v = pdu::validate(c, who_, dg_, h_.max_data(c)); !v) {
    protocol_error(v.fes, v.what, h, pdu::kCommonLen, v.field_offset);
    return false;
  }
  // validate() lets only the peer's TermReq type through; it never carries
  // digests.
  const bool term =
      c.type == static_cast<uint8_t>(pdu::Type::H2CTermReq) || c.type == static_cast<uint8_t>(pdu::Type::C2HTermReq);
  const size_t hdr_total = c.hlen + pdu::hdgst_len(dg_.header && !term);
  if (cur_.staged() < hdr_total) return false;
  cur_.cur = c;
  std::memcpy(cur_.hdr, h, std::min(hdr_total, sizeof cur_.hdr));
  cur_.pos += hdr_total;
  if (term) {
    phase_ = RxPhase::Discard;
    h_.on_termreq(pdu::decode_termreq(cur_.hdr));
    return false;
  }
  if (dg_.header && !pdu::header_digest_ok(cur_.hdr, c.hlen)) {
    protocol_error(pdu::Fes::HeaderDigestError, "header digest mismatch", cur_.hdr, c.hlen, 0);
    return false;
  }
  h_.on_header(cur_.hdr, c);
  return true;
}

// Payload bytes that were read ahead together with a header: copied to
// the destination (inside its guard), or only digested when they are sunk.
void PduReceiver::take_staged_data() {
  const auto n = static_cast<uint32_t>(std::min<size_t>(cur_.left, cur_.staged()));
  const uint8_t *from = cur_.buf.data() + cur_.pos;
  if (guard_ && !cur_.sinking && !guard_->enter()) sink_rest();
  if (cur_.sinking) {
    if (dg_.data) cur_.crc = crc32c_update(cur_.crc, from, n);
  } else {
    std::memcpy(cur_.dst, from, n);
    if (guard_) guard_->leave();
    if (dg_.data) cur_.crc = crc32c_update(cur_.crc, cur_.dst, n);
    cur_.dst += n;
  }
  cur_.pos += n;
  cur_.left -= n;
  if (cur_.left) return;
  if (dg_.data)
    phase_ = RxPhase::DataDigest;
  else
    end_data(true);
}

void PduReceiver::end_data(bool digest_ok) {
  phase_ = RxPhase::Header;
  guard_ = nullptr;
  h_.on_data_end(digest_ok);
}

void seal_header(SendRing::Pdu &t, size_t hlen, bool hdgst) {
  if (hdgst) pdu::put_header_digest(t.hdr, hlen);
  t.hdr_len = static_cast<uint8_t>(hlen + pdu::hdgst_len(hdgst));
}

void attach_payload(SendRing::Pdu &t, uint8_t pdo, const uint8_t *data, uint32_t len, bool ddgst) {
  t.pad = static_cast<uint8_t>(pdo - t.hdr_len);
  t.data = data;
  t.data_len = len;
  if (ddgst) {
    wire::put32(t.ddgst, 0, crc32c(data, len));
    t.has_ddgst = true;
  }
}

void encode_data_pdu(SendRing::Pdu &t, pdu::Type type, uint8_t flags, const pdu::DataHdr &d, const uint8_t *data, pdu::Digests dg,
                     uint8_t pda) {
  const uint8_t pdo = pdu::data_offset(pdu::kDataHlen, dg.header, pda);
  flags |= static_cast<uint8_t>((dg.header ? pdu::kFlagHdgst : 0) | (dg.data ? pdu::kFlagDdgst : 0));
  pdu::encode_data_hdr(t.hdr, type, flags, pdo, pdo + d.datal + pdu::ddgst_len(dg.data), d);
  seal_header(t, pdu::kDataHlen, dg.header);
  attach_payload(t, pdo, data, d.datal, dg.data);
}

} // namespace mpnvme
