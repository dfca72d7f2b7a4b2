// SPDX-License-Identifier: GPL-2.0-only
// NVMe/TCP PDU layouts (NVMe/TCP transport spec 1.0, as the Linux host and
// target implement it): constants, encoders and the validation both peers
// apply to every received header before trusting any length in it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mpnvme::pdu {

enum class Type : uint8_t {
  ICReq = 0x00,
  ICResp = 0x01,
  H2CTermReq = 0x02,
  C2HTermReq = 0x03,
  CapsuleCmd = 0x04,
  CapsuleResp = 0x05,
  H2CData = 0x06,
  C2HData = 0x07,
  R2T = 0x09,
};
const char *type_name(uint8_t type);

// Common header flags.
constexpr uint8_t kFlagHdgst = 0x01;
constexpr uint8_t kFlagDdgst = 0x02;
constexpr uint8_t kFlagLast = 0x04;    // H2CData/C2HData: last PDU of a transfer
constexpr uint8_t kFlagSuccess = 0x08; // C2HData: no CapsuleResp follows

constexpr size_t kCommonLen = 8;
constexpr size_t kDigestLen = 4;
// What a digest adds to a PDU when it is on (the Linux host's
// nvme_tcp_hdgst_len() and nvme_tcp_ddgst_len()): every length on the
// wire is summed with these, never with a bare 4.
constexpr uint32_t hdgst_len(bool header_digest) { return header_digest ? kDigestLen : 0; }
constexpr uint32_t ddgst_len(bool data_digest) { return data_digest ? kDigestLen : 0; }
constexpr size_t kIcLen = 128;
constexpr size_t kTermHlen = 24;
constexpr size_t kTermMaxPlen = 152;
constexpr size_t kCmdHlen = 72;  // 8 + 64-byte SQE
constexpr size_t kRespHlen = 24; // 8 + 16-byte CQE
constexpr size_t kDataHlen = 24;
constexpr size_t kR2THlen = 24;
constexpr size_t kSqeLen = 64;
constexpr size_t kCqeLen = 16;
// Largest header plus header digest any PDU has after IC: the receive
// state machine sizes its header staging with this.
constexpr size_t kMaxHdrWithDigest = kCmdHlen + kDigestLen;

// TermReq fatal error status.
enum class Fes : uint16_t {
  None = 0,
  InvalidHeaderField = 1,
  PduSequenceError = 2,
  HeaderDigestError = 3,
  DataOutOfRange = 4,
  R2TLimitExceeded = 5,
  UnsupportedParameter = 6,
};
const char *fes_name(uint16_t fes);

struct Common {
  uint8_t type;
  uint8_t flags;
  uint8_t hlen;
  uint8_t pdo;
  uint32_t plen;
};
Common decode_common(const uint8_t *p);
void encode_common(uint8_t *p, Type type, uint8_t flags, uint8_t hlen, uint8_t pdo, uint32_t plen);

// Negotiated per-connection parameters that header validation needs.
struct Digests {
  bool header = false;
  bool data = false;
  bool operator==(const Digests &) const = default;
};

// Which side received the PDU: a host only accepts controller-to-host PDUs.
enum class Receiver { Host, Controller };

// Result of validating a received header. `what` is a static string so the
// hot path never allocates.
struct Verdict {
  Fes fes = Fes::None;
  const char *what = nullptr;
  uint32_t field_offset = 0; // FEI: byte offset of the offending field
  explicit operator bool() const { return fes == Fes::None; }
};

// Validate the common header of a PDU received after connection setup.
// Checks type against the receiver, hlen per type, digest flags against the
// negotiated digests, pdo and plen bounds. Type-specific fields (cccid,
// offsets) are checked by the queue that owns the command state.
Verdict validate(const Common &h, Receiver who, Digests dg, uint32_t max_data);

// Where data starts for a data-carrying PDU sent with the given digests and
// the peer's PDU data alignment (cpda/hpda, 0's based dwords).
uint8_t data_offset(size_t hlen, bool hdgst, uint8_t pda);

// --- Connection setup ---------------------------------------------------
struct IcReq {
  uint16_t pfv = 0;
  uint8_t hpda = 0;
  Digests digests;
  uint32_t maxr2t = 0; // 0's based
};
void encode_icreq(uint8_t out[kIcLen], const IcReq &r);
Verdict decode_icreq(const uint8_t in[kIcLen], IcReq &r);

struct IcResp {
  uint16_t pfv = 0;
  uint8_t cpda = 0;
  Digests digests;
  uint32_t maxh2cdata = 0;
};
void encode_icresp(uint8_t out[kIcLen], const IcResp &r);
Verdict decode_icresp(const uint8_t in[kIcLen], IcResp &r);

// --- Data transfer headers (after the common header) ----------------------
struct DataHdr { // H2CData and C2HData
  uint16_t cccid;
  uint16_t ttag; // H2CData only
  uint32_t datao;
  uint32_t datal;
};
void encode_data_hdr(uint8_t *p, Type type, uint8_t flags, uint8_t pdo, uint32_t plen, const DataHdr &d);
DataHdr decode_data_hdr(const uint8_t *p);

struct R2THdr {
  uint16_t cccid;
  uint16_t ttag;
  uint32_t r2to;
  uint32_t r2tl;
};
void encode_r2t(uint8_t *p, uint8_t flags, uint32_t plen, const R2THdr &r);
R2THdr decode_r2t(const uint8_t *p);

struct TermReq {
  uint16_t fes;
  uint32_t fei;
};
// Encodes a TermReq carrying up to 128 bytes of the offending header.
size_t encode_termreq(uint8_t out[kTermMaxPlen], Type type, const TermReq &t, const uint8_t *bad_hdr, size_t bad_len);
TermReq decode_termreq(const uint8_t *p);

// Header digest helpers: the digest covers exactly hlen bytes.
void put_header_digest(uint8_t *hdr, size_t hlen);
bool header_digest_ok(const uint8_t *hdr, size_t hlen);

} // namespace mpnvme::pdu
