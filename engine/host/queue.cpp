#include "queue.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>

#include "../../lib/crc32c.hpp"
#include "../../lib/log.hpp"
#include "../../lib/wire.hpp"

namespace mpnvme::host {
namespace {
constexpr size_t kRxBuffer = 64 * 1024;
constexpr size_t kMaxIov = 1024; // IOV_MAX on Linux
} // namespace

// Every slot has at most one capsule in the ring; the rest is H2CData.
Queue::Queue(Fd fd, QueueParams params)
    : fd_(std::move(fd)), p_(std::move(params)), tx_(static_cast<size_t>(p_.slots) * 2 + 16), rx_(kRxBuffer) {
  if (p_.slots == 0 || p_.slots > 4096) throw std::invalid_argument("queue slots must be 1..4096");
  slots_.resize(p_.slots);
  free_.reserve(p_.slots);
  for (size_t i = p_.slots; i-- > 0;)
    free_.push_back(static_cast<uint16_t>(i));
  done_.reserve(p_.slots);
  h2c_.resize(p_.slots);
  iov_.resize(kMaxIov);
}

void Queue::initialize(std::chrono::steady_clock::time_point deadline) {
  pdu::IcReq req;
  req.digests = p_.digests;
  req.hpda = 0;   // no padding before C2HData payload
  req.maxr2t = 0; // one outstanding R2T per command, as Linux does
  uint8_t buf[pdu::kIcLen];
  pdu::encode_icreq(buf, req);
  send_all(fd_.get(), buf, sizeof buf, deadline);
  recv_all(fd_.get(), buf, sizeof buf, deadline);
  if (pdu::decode_common(buf).type == static_cast<uint8_t>(pdu::Type::C2HTermReq)) {
    const auto t = pdu::decode_termreq(buf);
    throw std::runtime_error(
        fmt::format("controller refused the connection: {} (C2HTermReq fes {})", pdu::fes_name(t.fes), t.fes));
  }
  if (auto v = pdu::decode_icresp(buf, icresp_); !v) throw std::runtime_error(fmt::format("bad ICResp: {}", v.what));
  if (icresp_.digests.header != p_.digests.header)
    throw std::runtime_error(fmt::format("controller {} header digest (hdr_digest={} requested)",
                                         icresp_.digests.header ? "forced" : "declined", p_.digests.header ? 1 : 0));
  if (icresp_.digests.data != p_.digests.data)
    throw std::runtime_error(fmt::format("controller {} data digest (data_digest={} requested)",
                                         icresp_.digests.data ? "forced" : "declined", p_.digests.data ? 1 : 0));
}

bool Queue::submit(const Command &c) {
  if (failed_ || free_.empty()) return false;
  if (tx_.full()) return false; // ring full of H2CData: the caller flushes and retries
  const uint16_t idx = free_.back();
  free_.pop_back();
  SendRing::Pdu *t = tx_.alloc(idx);
  Slot &s = slots_[idx];
  s = Slot{c, true, false, static_cast<uint8_t>(s.gen + 1)};
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
      s.r2t_active = false;
      h2c_head_ = (h2c_head_ + 1) % h2c_.size();
      h2c_count_--;
    }
  }
}

void Queue::flush() {
  generate_h2c();
  while (!tx_.empty() && !failed_) {
    msghdr mh{};
    mh.msg_iov = iov_.data();
    mh.msg_iovlen = tx_.build_iov(iov_.data(), iov_.size());
    ssize_t sent = ::sendmsg(fd_.get(), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return; // socket full: process() waits for POLLOUT too
      fail(fmt::format("send failed: {}", strerror(errno)), ECONNRESET);
      return;
    }
    tx_.advance(static_cast<size_t>(sent), [this](int32_t slot) {
      if (slot < 0) return;
      Slot &s = slots_[static_cast<size_t>(slot)];
      if (--s.in_ring == 0 && s.done) release(static_cast<uint16_t>(slot));
    });
    generate_h2c();
  }
}

void Queue::complete(uint16_t idx, uint16_t status, int err, uint32_t dw0, uint32_t dw1) {
  Slot &s = slots_[idx];
  if (status && s.cmd.log_failure) {
    const bool admin = p_.qid == 0;
    log().error("{} cid {:#x}: {} failed: {}", p_.label, make_cid(idx), nvme::opcode_name(s.cmd.sqe.opcode(), admin),
                nvme::status_string(status));
  }
  if (status && !err) err = nvme::status_errno(status);
  done_.push_back({s.cmd.cookie, status, err, dw0, dw1});
  s.done = true;
  // A controller may complete a write with an error while H2CData for it is
  // still queued: keep the cid reserved until those PDUs have left.
  if (s.in_ring == 0) release(idx);
}

void Queue::release(uint16_t idx) {
  Slot &s = slots_[idx];
  s.busy = false;
  s.done = false;
  free_.push_back(idx);
  inflight_--;
}

void Queue::fail(const std::string &why, int err) {
  if (!failed_) {
    failed_ = true;
    failure_ = why;
    if (expect_close_ && inflight_ == 0)
      log().debug("{}: {}", p_.label, why);
    else
      log().error("{}: {}; failing {} command(s) in flight", p_.label, why, inflight_);
    ::shutdown(fd_.get(), SHUT_RDWR);
  }
  for (uint16_t i = 0; i < slots_.size(); i++) {
    Slot &s = slots_[i];
    if (s.busy && !s.done) done_.push_back({s.cmd.cookie, 0, err, 0, 0});
    if (s.busy) {
      s.in_ring = 0;
      s.done = true;
      release(i);
    }
  }
  tx_.clear();
  h2c_count_ = 0;
}

void Queue::protocol_error(pdu::Fes fes, const char *what, const uint8_t *hdr, size_t hlen, uint32_t fei) {
  // Tell the controller why we leave (best effort), then fail the queue.
  uint8_t term[pdu::kTermMaxPlen];
  const size_t len = pdu::encode_termreq(term, pdu::Type::H2CTermReq, {static_cast<uint16_t>(fes), fei}, hdr, hlen);
  [[maybe_unused]] ssize_t n = ::send(fd_.get(), term, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  const pdu::Common c = pdu::decode_common(hdr);
  fail(fmt::format("protocol error in {} PDU (type {:#x} flags {:#x} hlen {} pdo {} plen {}): {}; sent H2CTermReq ({})",
                   pdu::type_name(c.type), c.type, c.flags, c.hlen, c.pdo, c.plen, what,
                   pdu::fes_name(static_cast<uint16_t>(fes))),
       EPROTO);
}

Queue::Slot *Queue::slot_for_cid(uint16_t cid, const char *pdu_name) {
  const uint16_t idx = cid & 0xfff;
  if (idx >= slots_.size()) return nullptr;
  Slot &s = slots_[idx];
  if (!s.busy || s.done || make_cid(idx) != cid) {
    log().debug("{}: {} for cid {:#x} which is not in flight", p_.label, pdu_name, cid);
    return nullptr;
  }
  return &s;
}

// Make `want` contiguous bytes available in rx_ (from rx_.pos). False when
// the socket has no more data right now (or the queue failed).
bool Queue::rx_fill(size_t want) {
  while (rx_.len - rx_.pos < want) {
    if (rx_.pos && rx_.buf.size() - rx_.pos < want) {
      std::memmove(rx_.buf.data(), rx_.buf.data() + rx_.pos, rx_.len - rx_.pos);
      rx_.len -= rx_.pos;
      rx_.pos = 0;
    }
    ssize_t n = ::recv(fd_.get(), rx_.buf.data() + rx_.len, rx_.buf.size() - rx_.len, MSG_DONTWAIT);
    if (n > 0) {
      rx_.len += static_cast<size_t>(n);
    } else if (n == 0) {
      fail("connection closed by the controller", ECONNRESET);
      return false;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN) {
      return false;
    } else {
      fail(fmt::format("receive failed: {}", strerror(errno)), ECONNRESET);
      return false;
    }
  }
  return true;
}

void Queue::handle_header(const uint8_t *h, const pdu::Common &c) {
  const bool hd = p_.digests.header;
  const auto type = static_cast<pdu::Type>(c.type);
  if (type == pdu::Type::C2HTermReq) {
    const auto t = pdu::decode_termreq(h);
    fail(fmt::format("controller terminated the connection: {} (C2HTermReq fes {:#x} fei {:#x})", pdu::fes_name(t.fes), t.fes,
                     t.fei),
         ECONNRESET);
    return;
  }
  if (hd && !pdu::header_digest_ok(h, c.hlen)) {
    protocol_error(pdu::Fes::HeaderDigestError, "header digest mismatch", h, c.hlen, 0);
    return;
  }
  switch (type) {
  case pdu::Type::CapsuleResp: {
    const nvme::Cqe cqe = nvme::decode_cqe(h + pdu::kCommonLen);
    Slot *s = slot_for_cid(cqe.cid, "CapsuleResp");
    if (!s) return protocol_error(pdu::Fes::InvalidHeaderField, "response for a command not in flight", h, c.hlen, 20);
    const auto idx = static_cast<uint16_t>(s - slots_.data());
    if (cqe.status == 0 && s->cmd.dir == DataDir::FromController && s->rx_done != s->cmd.len) {
      log().error("{} cid {:#x}: success with {} of {} data bytes received", p_.label, cqe.cid, s->rx_done, s->cmd.len);
      return complete(idx, nvme::kStatusDataXferError, EIO, cqe.dw0, cqe.dw1);
    }
    return complete(idx, cqe.status, 0, cqe.dw0, cqe.dw1);
  }
  case pdu::Type::R2T: {
    const pdu::R2THdr r = pdu::decode_r2t(h);
    Slot *s = slot_for_cid(r.cccid, "R2T");
    if (!s || s->cmd.dir != DataDir::ToController)
      return protocol_error(pdu::Fes::InvalidHeaderField, "R2T for a command that is not a pending write", h, c.hlen, 8);
    if (r.r2tl == 0 || r.r2to > s->cmd.len || r.r2tl > s->cmd.len - r.r2to)
      return protocol_error(pdu::Fes::DataOutOfRange, "R2T range outside the command's data", h, c.hlen, 12);
    if (s->r2t_active)
      return protocol_error(pdu::Fes::R2TLimitExceeded, "second R2T while one is outstanding (maxr2t 0)", h, c.hlen, 8);
    s->r2t_active = true;
    s->ttag = r.ttag;
    s->r2t_next = r.r2to;
    s->r2t_end = r.r2to + r.r2tl;
    h2c_[(h2c_head_ + h2c_count_) % h2c_.size()] = static_cast<uint16_t>(s - slots_.data());
    h2c_count_++;
    return;
  }
  case pdu::Type::C2HData: {
    const pdu::DataHdr d = pdu::decode_data_hdr(h);
    Slot *s = slot_for_cid(d.cccid, "C2HData");
    if (!s || s->cmd.dir != DataDir::FromController)
      return protocol_error(pdu::Fes::InvalidHeaderField, "C2HData for a command that is not a pending read", h, c.hlen, 8);
    const uint32_t datal = c.plen - c.pdo - (p_.digests.data ? 4u : 0u);
    if (d.datal != datal) return protocol_error(pdu::Fes::InvalidHeaderField, "datal does not match plen", h, c.hlen, 16);
    if (d.datao != s->rx_done) return protocol_error(pdu::Fes::DataOutOfRange, "C2HData out of order", h, c.hlen, 12);
    if (d.datao > s->cmd.len || d.datal > s->cmd.len - d.datao)
      return protocol_error(pdu::Fes::DataOutOfRange, "C2HData beyond the command's buffer", h, c.hlen, 12);
    const bool pad = rx_.begin_data(static_cast<uint16_t>(s - slots_.data()), s->cmd.data + d.datao, d.datal, c, hd);
    rx_state_ = pad ? Rx::Pad : Rx::Data;
    return;
  }
  default: return protocol_error(pdu::Fes::InvalidHeaderField, "unexpected PDU type", h, c.hlen, 0);
  }
}

void Queue::finish_data_pdu() {
  Slot &s = slots_[rx_.slot];
  rx_state_ = Rx::Header;
  if (p_.digests.data && wire::get32(ddgst_buf_, 0) != crc32c_final(rx_.crc)) {
    // Fail the command and the queue: the data can't be trusted, and the
    // Linux target treats a digest error as fatal for the connection too.
    log().error("{} cid {:#x}: data digest mismatch in C2HData (datao {} datal {})", p_.label, make_cid(rx_.slot), s.rx_done,
                rx_.datal);
    complete(rx_.slot, nvme::kStatusDataXferError, EILSEQ, 0, 0);
    fail("data digest error", EIO);
    return;
  }
  s.rx_done += rx_.datal;
  if (rx_.cur.flags & pdu::kFlagSuccess) {
    if (s.rx_done != s.cmd.len) {
      log().error("{} cid {:#x}: SUCCESS flag with {} of {} bytes", p_.label, make_cid(rx_.slot), s.rx_done, s.cmd.len);
      return complete(rx_.slot, nvme::kStatusDataXferError, EIO, 0, 0);
    }
    complete(rx_.slot, 0, 0, 0, 0);
  }
}

void Queue::process(int timeout_ms) {
  bool progressed = false;
  for (;;) {
    if (failed_) return;
    switch (rx_state_) {
    case Rx::Header: {
      if (!rx_fill(pdu::kCommonLen)) goto wait;
      const uint8_t *h = rx_.buf.data() + rx_.pos;
      const pdu::Common c = pdu::decode_common(h);
      const pdu::Verdict v = pdu::validate(c, pdu::Receiver::Host, p_.digests, UINT32_MAX);
      if (!v) {
        protocol_error(v.fes, v.what, h, pdu::kCommonLen, v.field_offset);
        return;
      }
      const bool term = c.type == static_cast<uint8_t>(pdu::Type::C2HTermReq);
      const size_t hdr_total = c.hlen + (p_.digests.header && !term ? pdu::kDigestLen : 0);
      if (!rx_fill(hdr_total)) goto wait;
      rx_.cur = c;
      std::memcpy(rx_.hdr, rx_.buf.data() + rx_.pos, std::min(hdr_total, sizeof rx_.hdr));
      rx_.pos += hdr_total;
      progressed = true;
      handle_header(rx_.hdr, c);
      break;
    }
    case Rx::Pad: {
      if (!rx_fill(1)) goto wait;
      const size_t take = std::min<size_t>(rx_.pad, rx_.len - rx_.pos);
      rx_.pos += take;
      rx_.pad -= static_cast<uint32_t>(take);
      if (!rx_.pad) rx_state_ = Rx::Data;
      break;
    }
    case Rx::Data: {
      // Bytes already staged (read ahead with a header) are copied; the rest
      // is received straight into the destination, with the socket's next
      // bytes landing in the staging buffer in the same call.
      size_t staged = std::min<size_t>(rx_.left, rx_.len - rx_.pos);
      if (staged) {
        std::memcpy(rx_.dst, rx_.buf.data() + rx_.pos, staged);
        rx_.pos += staged;
      } else {
        if (rx_.pos == rx_.len) rx_.pos = rx_.len = 0;
        iovec iov[2] = {{rx_.dst, rx_.left}, {rx_.buf.data() + rx_.len, rx_.buf.size() - rx_.len}};
        msghdr mh{};
        mh.msg_iov = iov;
        mh.msg_iovlen = 2;
        ssize_t n = ::recvmsg(fd_.get(), &mh, MSG_DONTWAIT);
        if (n == 0) {
          fail("connection closed by the controller", ECONNRESET);
          return;
        }
        if (n < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN) goto wait;
          fail(fmt::format("receive failed: {}", strerror(errno)), ECONNRESET);
          return;
        }
        staged = std::min<size_t>(static_cast<size_t>(n), rx_.left);
        rx_.len += static_cast<size_t>(n) - staged;
      }
      progressed = true;
      if (p_.digests.data) rx_.crc = crc32c_update(rx_.crc, rx_.dst, staged);
      rx_.dst += staged;
      rx_.left -= static_cast<uint32_t>(staged);
      if (!rx_.left) {
        if (p_.digests.data)
          rx_state_ = Rx::DataDigest;
        else
          finish_data_pdu();
      }
      break;
    }
    case Rx::DataDigest: {
      if (!rx_fill(4)) goto wait;
      std::memcpy(ddgst_buf_, rx_.buf.data() + rx_.pos, 4);
      rx_.pos += 4;
      finish_data_pdu();
      break;
    }
    }
    continue;
  wait:
    if (failed_) return;
    flush(); // R2Ts answered above go out before we sleep
    if (progressed || timeout_ms == 0 || !done_.empty()) return;
    pollfd pfd{fd_.get(), static_cast<short>(POLLIN | (tx_.empty() ? 0 : POLLOUT)), 0};
    int n = ::poll(&pfd, 1, timeout_ms);
    if (n <= 0) return; // timeout or EINTR: let the caller decide
    if (pfd.revents & POLLOUT) flush();
    timeout_ms = 0; // one wait per call
    progressed = false;
  }
}

Completion Queue::execute(Command c, std::chrono::milliseconds timeout) {
  int marker;
  c.cookie = &marker;
  if (!submit(c)) {
    if (failed_) return {&marker, 0, ECONNRESET, 0, 0};
    throw std::runtime_error(fmt::format("{}: no free command slot", p_.label));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    flush();
    for (auto it = done_.begin(); it != done_.end(); ++it) {
      if (it->cookie == &marker) {
        Completion r = *it;
        done_.erase(it);
        return r;
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      fail(fmt::format("{} timed out after {} ms", nvme::opcode_name(c.sqe.opcode(), p_.qid == 0), timeout.count()), ETIMEDOUT);
      continue; // fail() produced the completion
    }
    process(static_cast<int>(std::min<long>(left, 100)));
  }
}

} // namespace mpnvme::host
