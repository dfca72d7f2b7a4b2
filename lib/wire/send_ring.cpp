// SPDX-License-Identifier: GPL-2.0-only
#include "lib/wire/send_ring.hpp"

namespace mpnvme {
namespace {
const uint8_t kZeros[128] = {}; // pad source: PDU data alignment is at most 128 bytes
}

SendRing::Pdu *SendRing::alloc(int32_t slot) {
  if (full()) return nullptr;
  Pdu *p = &ring_[(head_ + count_) % ring_.size()];
  count_++;
  p->hdr_len = p->pad = 0;
  p->data = nullptr;
  p->data_len = 0;
  p->has_ddgst = false;
  p->slot = slot;
  return p;
}

void SendRing::grow(size_t capacity) {
  if (capacity <= ring_.size()) return;
  std::vector<Pdu> bigger(capacity);
  for (size_t i = 0; i < count_; i++)
    bigger[i] = ring_[(head_ + i) % ring_.size()];
  ring_ = std::move(bigger);
  head_ = 0;
}

size_t SendRing::build_iov(iovec *iov, size_t max) const {
  size_t n = 0, skip = head_sent_;
  auto add = [&](const void *base, size_t len) {
    if (len <= skip) { // already sent by an earlier partial write
      skip -= len;
      return;
    }
    iov[n++] = {const_cast<uint8_t *>(static_cast<const uint8_t *>(base)) + skip, len - skip};
    skip = 0;
  };
  constexpr size_t kPartsPerPdu = 4; // header, padding, data, data digest
  for (size_t i = 0; i < count_ && n + kPartsPerPdu <= max; i++) {
    const Pdu &p = ring_[(head_ + i) % ring_.size()];
    add(p.hdr, p.hdr_len);
    if (p.pad) add(kZeros, p.pad);
    if (p.data_len) add(p.data, p.data_len);
    if (p.has_ddgst) add(p.ddgst, pdu::kDigestLen);
  }
  return n;
}

} // namespace mpnvme
