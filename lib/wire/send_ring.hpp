// SPDX-License-Identifier: GPL-2.0-only
// Outgoing NVMe/TCP PDUs of one connection, host or controller side: a
// fixed ring of descriptors (header bytes inline, payload by pointer, data
// digest inline), handed to the socket as one iovec array per sendmsg and
// retired as the kernel takes bytes, partial writes included.
#pragma once
#include <cstddef>
#include <cstdint>
#include <sys/uio.h>
#include <vector>

#include "lib/wire/pdu.hpp"

namespace mpnvme {

class SendRing {
public:
  struct Pdu {
    uint8_t hdr[pdu::kTermMaxPlen]; // up to a whole TermReq
    uint8_t hdr_len = 0;
    uint8_t pad = 0;               // zero bytes between header and data (PDA)
    const uint8_t *data = nullptr; // payload, owned by the caller until retired
    uint32_t data_len = 0;
    uint8_t ddgst[4];
    bool has_ddgst = false;
    int32_t slot = -1; // command slot the PDU belongs to, -1 none
    size_t bytes() const { return hdr_len + pad + data_len + pdu::ddgst_len(has_ddgst); }
  };

  explicit SendRing(size_t capacity) : ring_(capacity) {}
  size_t capacity() const { return ring_.size(); }
  // Room for `capacity` descriptors, those queued kept in order (a
  // descriptor from alloc is then elsewhere: grow between PDUs only).
  void grow(size_t capacity);
  // A cleared descriptor at the tail, or nullptr when the ring is full.
  Pdu *alloc(int32_t slot);
  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == ring_.size(); }
  size_t size() const { return count_; }
  // The unsent bytes as iovecs (at most `max`, whole descriptors).
  size_t build_iov(iovec *iov, size_t max) const;
  // `n` more bytes left; done(slot) runs for each fully sent PDU.
  template <typename Done> void advance(size_t n, Done &&done) {
    n += head_sent_;
    while (count_) {
      const Pdu &p = ring_[head_];
      if (n < p.bytes()) break;
      n -= p.bytes();
      done(p.slot);
      head_ = (head_ + 1) % ring_.size();
      count_--;
    }
    head_sent_ = n;
  }
  void clear() { count_ = head_sent_ = 0; }

private:
  std::vector<Pdu> ring_;
  size_t head_ = 0, count_ = 0, head_sent_ = 0;
};

} // namespace mpnvme
