// One NVMe/TCP queue as the host sees it: a connected socket, a fixed set
// of command slots, a batch of PDUs waiting to be sent, and the receive
// state machine that places C2HData straight into the caller's buffers and
// answers R2Ts with H2CData taken straight from them.
//
// Not thread-safe: one thread drives a queue (the fio job for I/O queues,
// the keep-alive thread for the admin queue after setup).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <sys/uio.h>
#include <vector>

#include "../../lib/nvme.hpp"
#include "../../lib/pdu.hpp"
#include "../../lib/rx_cursor.hpp"
#include "../../lib/send_ring.hpp"
#include "../../lib/sock.hpp"

namespace mpnvme::host {

enum class DataDir : uint8_t { None, ToController, FromController };

struct Command {
  nvme::Sqe sqe;
  uint8_t *data = nullptr;
  uint32_t len = 0;
  DataDir dir = DataDir::None;
  void *cookie = nullptr;
  bool log_failure = true; // false where a refusal is expected and handled
};

struct Completion {
  void *cookie = nullptr;
  uint16_t status = 0; // NVMe status (0 = success)
  int error = 0;       // errno for fio: 0, from the status, or a transport error
  uint32_t dw0 = 0, dw1 = 0;
};

struct QueueParams {
  uint16_t qid = 0;
  uint16_t slots = 32;          // commands in flight at most
  pdu::Digests digests;         // requested in ICReq
  uint32_t incapsule_limit = 0; // bytes of write data sent inside the capsule
  std::string label;            // "path ADDR:PORT qid N" in log lines
};

class Queue {
public:
  Queue(Fd fd, QueueParams params);
  Queue(const Queue &) = delete;
  Queue &operator=(const Queue &) = delete;

  // ICReq/ICResp exchange. Throws std::runtime_error naming the problem.
  void initialize(std::chrono::steady_clock::time_point deadline);
  void set_incapsule_limit(uint32_t bytes) { p_.incapsule_limit = bytes; }

  // Queue a command into the send batch. False when every slot is busy or the
  // queue has failed (failed() tells which).
  bool submit(const Command &c);
  // Hand the batch to the socket with as few sendmsg calls as it takes;
  // stops without blocking when the socket is full.
  void flush();
  // Receive and process what the socket holds; waits up to `timeout_ms` for
  // the first byte when nothing is ready. Completions accumulate internally.
  void process(int timeout_ms);
  // Completions gathered since the last call (the vector is reused).
  std::vector<Completion> &completions() { return done_; }

  // Run one command to completion (admin/control path).
  Completion execute(Command c, std::chrono::milliseconds timeout);

  bool failed() const { return failed_; }
  const std::string &failure() const { return failure_; }
  unsigned inflight() const { return inflight_; }
  unsigned capacity() const { return p_.slots; }
  bool has_unsent() const { return !tx_.empty() || h2c_count_ > 0; }
  int fd() const { return fd_.get(); }
  const QueueParams &params() const { return p_; }
  const pdu::IcResp &icresp() const { return icresp_; }
  // The controller will close the connection (after Disconnect): an end of
  // stream with nothing in flight is then the expected end, not an error.
  void expect_close() { expect_close_ = true; }
  // Fail every command in flight and mark the queue dead (also on shutdown).
  void fail(const std::string &why, int err);

private:
  struct Slot {
    Command cmd;
    bool busy = false;
    bool done = false;       // completed, waiting for its PDUs to leave the ring
    uint8_t gen = 0;         // cid generation, catches stale responses
    uint32_t rx_done = 0;    // C2HData bytes received
    bool r2t_active = false; // an R2T is being answered
    uint16_t ttag = 0;
    uint32_t r2t_next = 0, r2t_end = 0;
    uint16_t in_ring = 0; // PDUs in the send ring that point at this slot
  };
  enum class Rx { Header, Pad, Data, DataDigest };

  uint16_t make_cid(uint16_t idx) const { return static_cast<uint16_t>((slots_[idx].gen & 0xf) << 12 | idx); }
  Slot *slot_for_cid(uint16_t cid, const char *pdu_name);
  void generate_h2c();
  void complete(uint16_t idx, uint16_t status, int err, uint32_t dw0, uint32_t dw1);
  void release(uint16_t idx);
  bool rx_fill(size_t want);
  void protocol_error(pdu::Fes fes, const char *what, const uint8_t *hdr, size_t hlen, uint32_t fei);
  void handle_header(const uint8_t *h, const pdu::Common &c);
  void finish_data_pdu();

  Fd fd_;
  QueueParams p_;
  pdu::IcResp icresp_;
  bool failed_ = false;
  bool expect_close_ = false;
  std::string failure_;

  std::vector<Slot> slots_;
  std::vector<uint16_t> free_;
  unsigned inflight_ = 0;
  std::vector<Completion> done_;

  SendRing tx_;
  std::vector<uint16_t> h2c_; // slots with R2T data still to generate (FIFO ring)
  size_t h2c_head_ = 0, h2c_count_ = 0;
  std::vector<iovec> iov_;

  RxCursor rx_;
  Rx rx_state_ = Rx::Header;
  uint8_t ddgst_buf_[4];
};

} // namespace mpnvme::host
