// SPDX-License-Identifier: GPL-2.0-only
// The NVMe/TCP stream codec both roles share: the receive state machine by
// PDU phase (connection setup, header with its digest, padding, data
// straight to its destination, data digest), TermReq handling and the
// protocol-error path with its FES, and the encoders that put header and
// data PDUs into a SendRing.
//
// A role (the host queue, the target connection) keeps only what differs:
// which PDUs it accepts and what it does with them, through PduHandler.
// The codec never touches a socket: its driver asks where received bytes go
// (rx_iov), reports how many came (on_received) and takes the send ring's
// iovecs. That seam is where a TLS record layer goes, once for both roles:
// between the socket and these calls.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/uio.h>
#include <vector>

#include "lib/wire/pdu.hpp"
#include "lib/wire/rx_cursor.hpp"
#include "lib/wire/send_ring.hpp"

namespace mpnvme {

// Staging for headers read ahead: large enough that a receive rarely ends
// inside a header, small enough to stay in cache.
constexpr size_t kRxStaging = 64 * 1024;

// Where the receiver stands in the current PDU.
enum class RxPhase : uint8_t {
  Setup,      // ICReq / ICResp (the role decodes it)
  Header,     // common header, PDU-specific header, header digest
  Pad,        // bytes between the header and pdo
  Data,       // payload, straight to the role's destination where it can
  DataDigest, // the CRC32C after the payload
  Discard,    // after a fatal error or the peer's TermReq: nothing is parsed
};

// A destination whose right to receive can be taken away by another thread
// while its data is on the wire (a namespace a reservation closes). Every
// placement of bytes there, a receive straight into it or a copy from
// staging, is bracketed by enter and leave, and never spans a wait for the
// peer; enter returning false means the right is gone, and the rest of the
// transfer goes to the receiver's sink instead.
class PlacementGuard {
public:
  virtual bool enter() = 0;
  virtual void leave() = 0;

protected:
  ~PlacementGuard() = default;
};

// What a role does with what the receiver found.
class PduHandler {
public:
  virtual ~PduHandler() = default;
  // Setup phase: `staged` bytes at `p`. Returns the bytes taken once the
  // whole setup PDU is there (the receiver then moves to Header), or 0 to
  // wait for more. A refusal calls PduReceiver::stop or protocol_error.
  virtual size_t on_setup(const uint8_t *p, size_t staged) = 0;
  // The largest payload a PDU with this header may carry (validation).
  virtual uint32_t max_data(const pdu::Common &c) const = 0;
  // A whole header whose digest (when negotiated) matched. A PDU with data
  // calls PduReceiver::begin_data; anything else is handled here.
  virtual void on_header(const uint8_t *h, const pdu::Common &c) = 0;
  // The data of the current PDU is complete; `digest_ok` is false when its
  // data digest did not match (the data must not be used).
  virtual void on_data_end(bool digest_ok) = 0;
  // The peer's TermReq: the stream is over.
  virtual void on_termreq(const pdu::TermReq &t) = 0;
  // The peer broke the protocol: `termreq` (of the role's direction, `len`
  // bytes) should be sent before closing; `why` describes the PDU and the
  // rule it broke.
  virtual void on_protocol_error(const uint8_t *termreq, size_t len, pdu::Fes fes, const std::string &why) = 0;
  // The peer closed the stream (a receive of 0 bytes).
  virtual void on_peer_closed() = 0;
};

class PduReceiver {
public:
  // `compact_below`: move unprocessed bytes to the front of staging once
  // less than this is free at its end (1: only when full). `staging`: the
  // staging buffer's first size (widen_staging grows it).
  PduReceiver(PduHandler &handler, pdu::Receiver who, size_t compact_below, size_t staging = kRxStaging);
  PduReceiver(const PduReceiver &) = delete;
  PduReceiver &operator=(const PduReceiver &) = delete;

  // Negotiated in connection setup (ICReq/ICResp).
  void set_digests(pdu::Digests d) { dg_ = d; }
  pdu::Digests digests() const { return dg_; }

  // Where the next receive goes: the rest of a payload straight to its
  // destination, then staging (1 or 2 iovecs).
  size_t rx_iov(iovec iov[2]);
  // Staging of at least `n` bytes from now on. Only between receives (it
  // moves the buffer): a driver calls it before rx_iov.
  void widen_staging(size_t n) {
    if (cur_.buf.size() < n) cur_.buf.resize(n);
  }
  // `n` bytes arrived in the iovecs of the last rx_iov; processes them.
  void on_received(size_t n);
  // The receive after the last rx_iov failed (nothing arrived).
  void on_receive_failed();

  // From on_header: the current PDU carries `n` payload bytes for command
  // `slot`, to be placed at `dst`; through `guard` when another thread may
  // revoke the right to place them.
  void begin_data(uint16_t slot, uint8_t *dst, uint32_t n, PlacementGuard *guard = nullptr);
  // ... or to be read and dropped (a refused command's in-capsule data).
  void begin_discard(uint16_t slot, uint32_t n);
  // The current transfer's data goes to the sink (discarded or revoked).
  bool sinking() const { return cur_.sinking; }
  // A fatal violation in the PDU whose header is `hdr`: the TermReq with
  // `fes` and the offending header goes to the handler, and nothing more
  // is parsed.
  void protocol_error(pdu::Fes fes, const char *what, const uint8_t *hdr, size_t hlen, uint32_t fei);
  // Parse nothing more (the role failed or is closing).
  void stop() { phase_ = RxPhase::Discard; }

  RxPhase phase() const { return phase_; }
  const pdu::Common &current() const { return cur_.cur; }
  uint16_t slot() const { return cur_.slot; }
  uint32_t datal() const { return cur_.datal; }
  // "protocol error in C2HData PDU (type 0x7 ...): WHAT"
  static std::string describe(const uint8_t *hdr, const char *what);

private:
  void process();
  bool step();
  bool take_header();
  void take_staged_data();
  void end_data(bool digest_ok);
  void sink_rest();
  void leave_guard();

  PduHandler &h_;
  PlacementGuard *guard_ = nullptr; // of the current transfer, if any
  bool guard_entered_ = false;      // for the receive in progress
  std::vector<uint8_t> sink_;       // allocated on first use
  const pdu::Receiver who_;
  const size_t compact_below_;
  pdu::Digests dg_;
  RxCursor cur_;
  RxPhase phase_ = RxPhase::Setup;
};

// --- Sending -------------------------------------------------------------
// A PDU without payload: header digest (when negotiated) and length.
void seal_header(SendRing::Pdu &t, size_t hlen, bool hdgst);
// Payload after a sealed header: padding up to `pdo`, the bytes by pointer
// (owned by the caller until the PDU is retired) and their digest.
void attach_payload(SendRing::Pdu &t, uint8_t pdo, const uint8_t *data, uint32_t len, bool ddgst);
// H2CData or C2HData carrying `d.datal` bytes at `data`; `flags` adds
// LAST_PDU / SUCCESS to the digest flags. `pda` is the peer's data
// alignment (cpda for the host, hpda for the controller).
void encode_data_pdu(SendRing::Pdu &t, pdu::Type type, uint8_t flags, const pdu::DataHdr &d, const uint8_t *data, pdu::Digests dg,
                     uint8_t pda);

} // namespace mpnvme
