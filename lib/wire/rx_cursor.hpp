// SPDX-License-Identifier: GPL-2.0-only
// Where the receive side of an NVMe/TCP connection stands: the staging
// buffer of bytes read ahead, the PDU header being handled, and the data
// transfer in progress. Host queue and target connection each drive their
// own state machine over it.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sys/uio.h>
#include <vector>

#include "lib/wire/crc32c.hpp"
#include "lib/wire/pdu.hpp"

namespace mpnvme {

struct RxCursor {
  explicit RxCursor(size_t staging) : buf(staging) {}
  std::vector<uint8_t> buf; // staging: bytes [pos, len) are unprocessed
  size_t pos = 0, len = 0;
  uint8_t hdr[pdu::kMaxHdrWithDigest]; // the current PDU's header (+digest)
  pdu::Common cur{};
  uint16_t slot = 0;      // command slot the data belongs to
  uint8_t *dst = nullptr; // where the rest of the data goes
  uint32_t left = 0;      // data bytes still to come
  uint32_t pad = 0;       // padding bytes before the data
  uint32_t datal = 0;     // data bytes of the current PDU
  uint32_t crc = 0;       // running data digest
  uint32_t direct = 0;    // bytes the last receive_iov offered straight to dst
  // Data nobody may have (a refused command's, or one whose right to land
  // was revoked mid-transfer) goes to `sink`, overwritten and never read:
  // the stream stays in step and no byte reaches a destination.
  uint8_t *sink = nullptr;
  uint32_t sink_len = 0;
  bool sinking = false;
  // Start taking the `n` data bytes of PDU `c` (command `s`) into `d`, after
  // the padding between its header (plus digest) and pdo. True when there
  // is padding to skip first.
  bool begin_data(uint16_t s, uint8_t *d, uint32_t n, const pdu::Common &c, bool hdgst) {
    slot = s;
    dst = d;
    sinking = false;
    left = datal = n;
    pad = c.pdo - c.hlen - pdu::hdgst_len(hdgst);
    crc = kCrc32cSeed;
    return pad != 0;
  }
  size_t staged() const { return len - pos; }
  // Where the next receive goes. While data is due (`in_data`) and nothing
  // is staged ahead of it, the rest of it goes straight to dst and the
  // headers after it land in staging in the same call: only data that
  // arrives together with a header is ever copied. Unprocessed bytes move
  // to the front once less than `compact_below` bytes of staging are free.
  size_t receive_iov(iovec iov[2], bool in_data, size_t compact_below) {
    direct = 0;
    if (pos == len) {
      pos = len = 0;
    } else if (buf.size() - len < compact_below) {
      std::memmove(buf.data(), buf.data() + pos, staged());
      len -= pos;
      pos = 0;
    }
    size_t n = 0;
    if (in_data && staged() == 0 && left) {
      direct = sinking ? std::min(left, sink_len) : left;
      iov[n++] = {sinking ? sink : dst, direct};
    }
    iov[n++] = {buf.data() + len, buf.size() - len};
    return n;
  }
  // `n` bytes came for the last receive_iov: the part that went straight to
  // dst is accounted (and digested with `data_digest`); `n` keeps the rest,
  // for the caller to stage. True when that part finished the data.
  bool take_direct(size_t &n, bool data_digest) {
    if (!direct) return false;
    const auto d = static_cast<uint32_t>(std::min<size_t>(n, direct));
    if (data_digest) crc = crc32c_update(crc, sinking ? sink : dst, d);
    if (!sinking) dst += d;
    left -= d;
    n -= d;
    direct = 0;
    return !left;
  }
};

} // namespace mpnvme
