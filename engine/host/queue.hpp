// SPDX-License-Identifier: GPL-2.0-only
// One NVMe/TCP queue as the host sees it: a fixed set of command slots, the
// PDUs waiting to be sent, and the receive state machine that places
// C2HData straight into the caller's buffers and answers R2Ts with H2CData
// taken straight from them.
//
// The queue never touches a socket (like the target's Connection): its
// driver asks where received bytes should go (rx_iov), reports how many came
// (on_received), and takes the outgoing batch as iovecs (tx_iov / on_sent).
// That is what lets one thread wait on the sockets of every path of a job,
// and what lets the fuzzer drive the real receive path.
//
// Not thread-safe: one thread drives a queue.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <sys/uio.h>
#include <vector>

#include "lib/wire/nvme.hpp"
#include "lib/wire/pdu.hpp"
#include "lib/wire/send_ring.hpp"
#include "lib/wire/stream_codec.hpp"

namespace mpnvme::host {

enum class DataDir : uint8_t { None, ToController, FromController };

struct Command {
  nvme::Sqe sqe;
  uint8_t *data = nullptr;
  uint32_t len = 0;
  DataDir dir = DataDir::None;
  void *cookie = nullptr;
};

// How a command ended on this queue. The raw NVMe status travels up to the
// multipath layer, which decides between completing, retrying and failing
// over before anything becomes an errno.
struct Completion {
  void *cookie = nullptr;
  uint16_t status = 0;  // NVMe status without the phase bit (0 = success)
  bool aborted = false; // the queue failed before the controller answered
  uint16_t cid = 0;
  uint8_t opcode = 0;
  uint32_t dw0 = 0, dw1 = 0;
  bool ok() const { return status == 0 && !aborted; }
};

struct QueueParams {
  uint16_t qid = 0;
  uint16_t slots = 32;          // commands in flight at most
  pdu::Digests digests;         // requested in ICReq
  uint32_t incapsule_limit = 0; // bytes of write data sent inside the capsule
  std::string label;            // "path ADDR:PORT qid N" in log lines
};

class Queue : private PduHandler {
public:
  explicit Queue(QueueParams params);
  Queue(const Queue &) = delete;
  Queue &operator=(const Queue &) = delete;

  // Connection setup: queue the ICReq; the ICResp is taken by on_received.
  void start();
  // The ICResp arrived and was accepted: commands may be submitted.
  bool ready() const { return ready_; }
  void set_incapsule_limit(uint32_t bytes) { p_.incapsule_limit = bytes; }

  // Queue a command into the send batch. False when every slot is busy, the
  // send ring is full, or the queue has failed (failed() tells which).
  bool submit(const Command &c);

  // Send side: the unsent bytes as iovecs (at most `max`), then how many of
  // them the socket took.
  size_t tx_iov(iovec *iov, size_t max);
  void on_sent(size_t n);
  bool tx_pending() const { return !tx_.empty() || h2c_count_ > 0; }

  // Receive side: where the next bytes go (one or two iovecs: the rest of a
  // C2HData payload in the caller's buffer, then the staging buffer), then
  // how many came; 0 means the controller closed the connection.
  size_t rx_iov(iovec iov[2]);
  void on_received(size_t n);

  // Completions gathered since the last call (the vector is reused).
  std::vector<Completion> &completions() { return done_; }

  bool failed() const { return failed_; }
  const std::string &failure() const { return failure_; }
  // The H2CTermReq to send (best effort) before closing, after a protocol
  // error of the controller; empty otherwise.
  const std::vector<uint8_t> &termreq() const { return termreq_; }
  // Fail every command in flight (completed as aborted) and mark the queue
  // dead. The first reason is kept.
  void fail(const std::string &why);
  // The controller will close the connection: an end of stream with nothing
  // in flight is then the expected end, not an error worth a log line.
  void expect_close() { expect_close_ = true; }

  unsigned inflight() const { return inflight_; }
  unsigned capacity() const { return p_.slots; }
  const QueueParams &params() const { return p_; }

private:
  struct Slot {
    // Free: unused. Active: capsule queued or sent, waiting for data or the
    // response. SendingData: answering an R2T with H2CData. Retiring:
    // completed, but PDUs pointing at its buffer are still in the send ring.
    enum class State : uint8_t { Free, Active, SendingData, Retiring } state = State::Free;
    Command cmd;
    uint8_t gen = 0;      // cid generation, catches stale responses
    uint32_t rx_done = 0; // C2HData bytes received
    uint16_t ttag = 0;
    uint32_t r2t_next = 0, r2t_end = 0;
    uint16_t in_ring = 0; // PDUs in the send ring that point at this slot
  };
  uint16_t make_cid(uint16_t idx) const { return static_cast<uint16_t>((slots_[idx].gen & 0xf) << 12 | idx); }
  Slot *slot_for_cid(uint16_t cid, const char *pdu_name);
  void generate_h2c();
  void complete(uint16_t idx, uint16_t status, uint32_t dw0 = 0, uint32_t dw1 = 0);
  void release(uint16_t idx);
  // What the host accepts from the shared receiver (PduHandler).
  size_t on_setup(const uint8_t *p, size_t staged) override;
  uint32_t max_data(const pdu::Common &) const override { return UINT32_MAX; }
  void on_header(const uint8_t *h, const pdu::Common &c) override;
  void on_data_end(bool digest_ok) override;
  void on_termreq(const pdu::TermReq &t) override;
  void on_protocol_error(const uint8_t *termreq, size_t len, pdu::Fes fes, const std::string &why) override;
  void on_peer_closed() override { fail("connection closed by the controller"); }
  void on_response(const uint8_t *h, const pdu::Common &c);
  void handle_r2t(const uint8_t *h, const pdu::Common &c);
  void handle_c2h_data(const uint8_t *h, const pdu::Common &c);

  QueueParams p_;
  pdu::IcResp icresp_;
  bool ready_ = false;
  bool failed_ = false;
  bool expect_close_ = false;
  std::string failure_;
  std::vector<uint8_t> termreq_;

  std::vector<Slot> slots_;
  std::vector<uint16_t> free_;
  unsigned inflight_ = 0;
  std::vector<Completion> done_;

  SendRing tx_;
  std::vector<uint16_t> h2c_; // slots with R2T data still to generate (FIFO ring)
  size_t h2c_head_ = 0, h2c_count_ = 0;

  PduReceiver rx_;
};

} // namespace mpnvme::host
