// SPDX-License-Identifier: GPL-2.0-only
// Where the receive side of an NVMe/TCP connection stands: the staging
// buffer of bytes read ahead, the PDU header being handled, and the data
// transfer in progress. Host queue and target connection each drive their
// own state machine over it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "crc32c.hpp"
#include "pdu.hpp"

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
  // Start taking the `n` data bytes of PDU `c` (command `s`) into `d`, after
  // the padding between its header (plus digest) and pdo. True when there
  // is padding to skip first.
  bool begin_data(uint16_t s, uint8_t *d, uint32_t n, const pdu::Common &c, bool hdgst) {
    slot = s;
    dst = d;
    left = datal = n;
    pad = c.pdo - c.hlen - (hdgst ? pdu::kDigestLen : 0u);
    crc = kCrc32cSeed;
    return pad != 0;
  }
};

} // namespace mpnvme
