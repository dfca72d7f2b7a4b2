// SPDX-License-Identifier: GPL-2.0-only
#include "lib/wire/pdu.hpp"

#include <algorithm>
#include <cstring>

#include "lib/wire/crc32c.hpp"
#include "lib/wire/wire.hpp"

namespace mpnvme::pdu {
using namespace wire;

const char *type_name(uint8_t type) {
  switch (static_cast<Type>(type)) {
  case Type::ICReq: return "ICReq";
  case Type::ICResp: return "ICResp";
  case Type::H2CTermReq: return "H2CTermReq";
  case Type::C2HTermReq: return "C2HTermReq";
  case Type::CapsuleCmd: return "CapsuleCmd";
  case Type::CapsuleResp: return "CapsuleResp";
  case Type::H2CData: return "H2CData";
  case Type::C2HData: return "C2HData";
  case Type::R2T: return "R2T";
  }
  return "unknown";
}

const char *fes_name(uint16_t fes) {
  switch (static_cast<Fes>(fes)) {
  case Fes::None: return "none";
  case Fes::InvalidHeaderField: return "invalid PDU header field";
  case Fes::PduSequenceError: return "PDU sequence error";
  case Fes::HeaderDigestError: return "header digest error";
  case Fes::DataOutOfRange: return "data transfer out of range";
  case Fes::R2TLimitExceeded: return "R2T limit exceeded";
  case Fes::UnsupportedParameter: return "unsupported parameter";
  }
  return "unknown fatal error status";
}

Common decode_common(const uint8_t *p) { return {p[0], p[1], p[2], p[3], get32(p, 4)}; }

void encode_common(uint8_t *p, Type type, uint8_t flags, uint8_t hlen, uint8_t pdo, uint32_t plen) {
  p[0] = static_cast<uint8_t>(type);
  p[1] = flags;
  p[2] = hlen;
  p[3] = pdo;
  put32(p, 4, plen);
}

uint8_t data_offset(size_t hlen, bool hdgst, uint8_t pda) {
  size_t off = hlen + hdgst_len(hdgst);
  size_t align = (static_cast<size_t>(pda) + 1) * 4;
  return static_cast<uint8_t>((off + align - 1) / align * align);
}

namespace {
constexpr uint32_t kFeiFlags = 1, kFeiHlen = 2, kFeiPdo = 3, kFeiPlen = 4, kFeiType = 0;

Verdict bad(Fes fes, const char *what, uint32_t fei) { return {fes, what, fei}; }

// Header-only PDUs (no data): plen is hlen plus the header digest.
Verdict check_header_only(const Common &h, size_t hlen, Digests dg) {
  if (h.hlen != hlen) return bad(Fes::InvalidHeaderField, "unexpected hlen", kFeiHlen);
  if (h.flags & kFlagDdgst) return bad(Fes::InvalidHeaderField, "data digest flag on a PDU without data", kFeiFlags);
  if (h.pdo != 0) return bad(Fes::InvalidHeaderField, "pdo set on a PDU without data", kFeiPdo);
  if (h.plen != hlen + hdgst_len(dg.header)) return bad(Fes::InvalidHeaderField, "unexpected plen", kFeiPlen);
  return {};
}

// PDUs that may carry data: data follows at pdo, plen covers it plus digest.
Verdict check_with_data(const Common &h, size_t hlen, Digests dg, uint32_t max_data) {
  if (h.hlen != hlen) return bad(Fes::InvalidHeaderField, "unexpected hlen", kFeiHlen);
  const size_t hdr_end = hlen + hdgst_len(dg.header);
  if (h.plen == hdr_end) { // no data present
    if (h.pdo != 0 && h.pdo != hdr_end) return bad(Fes::InvalidHeaderField, "pdo set without data", kFeiPdo);
    if (h.flags & kFlagDdgst) return bad(Fes::InvalidHeaderField, "data digest flag without data", kFeiFlags);
    return {};
  }
  if (h.pdo < hdr_end) return bad(Fes::InvalidHeaderField, "pdo inside the header", kFeiPdo);
  if (h.plen < h.pdo) return bad(Fes::InvalidHeaderField, "plen shorter than pdo", kFeiPlen);
  if (bool(h.flags & kFlagDdgst) != dg.data)
    return bad(Fes::InvalidHeaderField, "data digest flag differs from negotiation", kFeiFlags);
  const uint32_t trailer = ddgst_len(dg.data);
  if (h.plen < h.pdo + trailer + 1u) return bad(Fes::InvalidHeaderField, "plen too short for data", kFeiPlen);
  if (h.plen - h.pdo - trailer > max_data) return bad(Fes::DataOutOfRange, "PDU data longer than allowed", kFeiPlen);
  return {};
}
} // namespace

Verdict validate(const Common &h, Receiver who, Digests dg, uint32_t max_data) {
  const auto type = static_cast<Type>(h.type);
  const bool term = type == Type::H2CTermReq || type == Type::C2HTermReq;
  if (!term && type != Type::ICReq && type != Type::ICResp) {
    if (bool(h.flags & kFlagHdgst) != dg.header)
      return bad(Fes::InvalidHeaderField, "header digest flag differs from negotiation", kFeiFlags);
  }
  const uint8_t known = kFlagHdgst | kFlagDdgst | kFlagLast | kFlagSuccess;
  if (h.flags & ~known) return bad(Fes::InvalidHeaderField, "unknown flag bits", kFeiFlags);
  if ((h.flags & kFlagSuccess) && type != Type::C2HData)
    return bad(Fes::InvalidHeaderField, "SUCCESS flag outside C2HData", kFeiFlags);
  if ((h.flags & kFlagLast) && type != Type::C2HData && type != Type::H2CData)
    return bad(Fes::InvalidHeaderField, "LAST_PDU flag outside data PDUs", kFeiFlags);

  const bool host = who == Receiver::Host;
  switch (type) {
  case Type::ICReq:
  case Type::ICResp: return bad(Fes::PduSequenceError, "initialize connection PDU after connection setup", kFeiType);
  case Type::H2CTermReq:
  case Type::C2HTermReq:
    if ((type == Type::C2HTermReq) != host) return bad(Fes::InvalidHeaderField, "TermReq in the wrong direction", kFeiType);
    if (h.hlen != kTermHlen) return bad(Fes::InvalidHeaderField, "unexpected hlen", kFeiHlen);
    if (h.plen < kTermHlen || h.plen > kTermMaxPlen) return bad(Fes::InvalidHeaderField, "TermReq plen out of range", kFeiPlen);
    return {};
  case Type::CapsuleResp:
  case Type::R2T:
    if (!host) return bad(Fes::InvalidHeaderField, "controller-to-host PDU sent by the host", kFeiType);
    return check_header_only(h, type == Type::R2T ? kR2THlen : kRespHlen, dg);
  case Type::C2HData: {
    if (!host) return bad(Fes::InvalidHeaderField, "controller-to-host PDU sent by the host", kFeiType);
    if ((h.flags & kFlagSuccess) && !(h.flags & kFlagLast))
      return bad(Fes::InvalidHeaderField, "SUCCESS without LAST_PDU", kFeiFlags);
    Verdict v = check_with_data(h, kDataHlen, dg, max_data);
    if (v && h.plen == kDataHlen + hdgst_len(dg.header)) return bad(Fes::InvalidHeaderField, "C2HData without data", kFeiPlen);
    return v;
  }
  case Type::CapsuleCmd:
  case Type::H2CData: {
    if (host) return bad(Fes::InvalidHeaderField, "host-to-controller PDU sent by the controller", kFeiType);
    Verdict v = check_with_data(h, type == Type::H2CData ? kDataHlen : kCmdHlen, dg, max_data);
    if (v && type == Type::H2CData && h.plen == kDataHlen + hdgst_len(dg.header))
      return bad(Fes::InvalidHeaderField, "H2CData without data", kFeiPlen);
    return v;
  }
  }
  return bad(Fes::InvalidHeaderField, "unknown PDU type", kFeiType);
}

void encode_icreq(uint8_t out[kIcLen], const IcReq &r) {
  std::memset(out, 0, kIcLen);
  encode_common(out, Type::ICReq, 0, kIcLen, 0, kIcLen);
  put16(out, 8, r.pfv);
  out[10] = r.hpda;
  out[11] = static_cast<uint8_t>((r.digests.header ? 1 : 0) | (r.digests.data ? 2 : 0));
  put32(out, 12, r.maxr2t);
}

namespace {
Verdict check_ic(const uint8_t *in, Type want) {
  Common h = decode_common(in);
  if (h.type != static_cast<uint8_t>(want)) return bad(Fes::PduSequenceError, "expected an initialize connection PDU", kFeiType);
  if (h.hlen != kIcLen) return bad(Fes::InvalidHeaderField, "unexpected hlen", kFeiHlen);
  if (h.plen != kIcLen) return bad(Fes::InvalidHeaderField, "unexpected plen", kFeiPlen);
  if (h.pdo != 0) return bad(Fes::InvalidHeaderField, "pdo set", kFeiPdo);
  if (h.flags != 0) return bad(Fes::InvalidHeaderField, "flags set", kFeiFlags);
  if (get16(in, 8) != 0) return bad(Fes::UnsupportedParameter, "unsupported PDU format version", 8);
  if (in[11] & ~3u) return bad(Fes::InvalidHeaderField, "unknown digest bits", 11);
  return {};
}
} // namespace

Verdict decode_icreq(const uint8_t in[kIcLen], IcReq &r) {
  if (Verdict v = check_ic(in, Type::ICReq); !v) return v;
  r.pfv = get16(in, 8);
  r.hpda = in[10];
  r.digests = {bool(in[11] & 1), bool(in[11] & 2)};
  r.maxr2t = get32(in, 12);
  if (r.hpda > 31) return bad(Fes::InvalidHeaderField, "hpda above 31", 10);
  return {};
}

void encode_icresp(uint8_t out[kIcLen], const IcResp &r) {
  std::memset(out, 0, kIcLen);
  encode_common(out, Type::ICResp, 0, kIcLen, 0, kIcLen);
  put16(out, 8, r.pfv);
  out[10] = r.cpda;
  out[11] = static_cast<uint8_t>((r.digests.header ? 1 : 0) | (r.digests.data ? 2 : 0));
  put32(out, 12, r.maxh2cdata);
}

Verdict decode_icresp(const uint8_t in[kIcLen], IcResp &r) {
  if (Verdict v = check_ic(in, Type::ICResp); !v) return v;
  r.pfv = get16(in, 8);
  r.cpda = in[10];
  r.digests = {bool(in[11] & 1), bool(in[11] & 2)};
  r.maxh2cdata = get32(in, 12);
  if (r.cpda > 31) return bad(Fes::InvalidHeaderField, "cpda above 31", 10);
  // Same acceptance rule as the Linux host: at least 4 KiB, dword multiple.
  if (r.maxh2cdata < 4096 || r.maxh2cdata % 4)
    return bad(Fes::InvalidHeaderField, "maxh2cdata below 4096 or not a multiple of 4", 12);
  return {};
}

void encode_data_hdr(uint8_t *p, Type type, uint8_t flags, uint8_t pdo, uint32_t plen, const DataHdr &d) {
  encode_common(p, type, flags, kDataHlen, pdo, plen);
  put16(p, 8, d.cccid);
  put16(p, 10, d.ttag);
  put32(p, 12, d.datao);
  put32(p, 16, d.datal);
  put32(p, 20, 0);
}

DataHdr decode_data_hdr(const uint8_t *p) { return {get16(p, 8), get16(p, 10), get32(p, 12), get32(p, 16)}; }

void encode_r2t(uint8_t *p, uint8_t flags, uint32_t plen, const R2THdr &r) {
  encode_common(p, Type::R2T, flags, kR2THlen, 0, plen);
  put16(p, 8, r.cccid);
  put16(p, 10, r.ttag);
  put32(p, 12, r.r2to);
  put32(p, 16, r.r2tl);
  put32(p, 20, 0);
}

R2THdr decode_r2t(const uint8_t *p) { return {get16(p, 8), get16(p, 10), get32(p, 12), get32(p, 16)}; }

size_t encode_termreq(uint8_t out[kTermMaxPlen], Type type, const TermReq &t, const uint8_t *bad_hdr, size_t bad_len) {
  bad_len = std::min(bad_len, kTermMaxPlen - kTermHlen);
  std::memset(out, 0, kTermHlen);
  const auto plen = static_cast<uint32_t>(kTermHlen + bad_len);
  encode_common(out, type, 0, kTermHlen, bad_len ? kTermHlen : 0, plen);
  put16(out, 8, t.fes);
  put32(out, 10, t.fei);
  if (bad_len) std::memcpy(out + kTermHlen, bad_hdr, bad_len);
  return plen;
}

TermReq decode_termreq(const uint8_t *p) { return {get16(p, 8), get32(p, 10)}; }

void put_header_digest(uint8_t *hdr, size_t hlen) { put32(hdr, hlen, crc32c(hdr, hlen)); }

bool header_digest_ok(const uint8_t *hdr, size_t hlen) { return get32(hdr, hlen) == crc32c(hdr, hlen); }

} // namespace mpnvme::pdu
