// SPDX-License-Identifier: GPL-2.0-only
// One NVMe/TCP connection as the target's transport carries it (nvmet's
// tcp.c): ICReq/ICResp, capsules with in-capsule data, R2T/H2CData for
// larger writes, C2HData (with the SUCCESS flag when SQ flow control is
// off) and responses, digests, and TermReq on protocol errors. It moves
// PDUs and buffers and nothing else: each capsule becomes a Request that
// the queue's controller core (core/submission_queue.*) admits and runs,
// and the core says where a command's data may go before a byte of it is
// received. The event loop feeds bytes in and takes the outgoing batch out
// through ConnIo, so the same code runs under io_uring and the fuzzer.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <sys/uio.h>
#include <vector>

#include "lib/wire/pdu.hpp"
#include "lib/wire/send_ring.hpp"
#include "lib/wire/stream_codec.hpp"
#include "mpnvme-target/core/submission_queue.hpp"

namespace mpnvme::target {

class Connection;

// What a connection needs from its event loop.
class ConnIo {
public:
  virtual ~ConnIo() = default;
  // The connection has PDUs to send (call build_send/on_sent).
  virtual void want_send(Connection &c) = 0;
  // Start file I/O for a command slot; completion calls on_file_done.
  virtual void submit_file(Connection &c, uint16_t slot, FileOp op, int fd, uint8_t *buf, uint64_t len, uint64_t off) = 0;
  // An I/O queue was connected (+1) or went away (-1) on this connection:
  // the loops balance I/O queues, which carry the load, not connections.
  virtual void io_queue_connected(int delta) { (void)delta; }
};

struct ConnCounters {
  uint64_t commands = 0, rx_bytes = 0, tx_bytes = 0, errors = 0;
};

class Connection : private PduHandler, private QueueTransport {
public:
  Connection(Registry &reg, ConnIo &io, int fd, PortState &port, std::string peer);
  ~Connection();
  Connection(const Connection &) = delete;
  Connection &operator=(const Connection &) = delete;

  int fd() const { return fd_; }
  const std::string &peer() const { return peer_; }
  PortState &port() { return port_; }

  // Receive side: where the next receive goes (1 or 2 iovecs: the rest of
  // a data transfer straight to its destination, then the staging buffer),
  // then how many bytes came (0 = the peer closed), or that the receive
  // failed. Exactly one of the two follows each rx_iov: a destination a
  // placement guards is entered for the receive and left after it.
  size_t rx_iov(iovec iov[2]);
  void on_received(size_t n);
  void on_receive_failed() { rx_.on_receive_failed(); }
  // Send side: the pending batch as iovecs (at most max), and progress.
  size_t build_send(iovec *iov, size_t max);
  void on_sent(size_t n);
  bool has_pending_send() const { return !tx_.empty(); }
  void on_file_done(uint16_t slot, int res);
  // Periodic and wake-up work: keep-alive expiry, deadlines, delivery of
  // asynchronous events. Returns false once the connection should close.
  bool tick(std::chrono::steady_clock::time_point now);
  // The connection's secure channel was opened with this PSK identity.
  void set_tls_identity(std::string identity, std::string hostnqn, std::string subnqn, bool generated) {
    sq_.set_tls_identity(std::move(identity), std::move(hostnqn), std::move(subnqn), generated);
  }
  bool closing() const { return closing_; }
  const std::string &close_reason() const { return close_reason_; }
  void close(const std::string &why);
  const ConnCounters &counters() const { return stats_; }
  // Outstanding asynchronous operations (file I/O) that must finish first.
  unsigned file_ops_in_flight() const { return file_ops_; }
  // The event loop's own per-connection state.
  void *io_context = nullptr;

private:
  struct Cmd {
    enum class State : uint8_t { Free, WaitData, Exec, Sending } state = State::Free;
    Request req;
    uint8_t *buf = nullptr; // aligned command buffer (grows; kept on I/O queues)
    uint32_t buf_cap = 0;
    uint32_t received = 0;
    uint16_t in_ring = 0;
    bool digest_failed = false; // a data digest of this transfer failed
  };
  // PduHandler: what the controller side accepts from the shared receiver
  size_t on_setup(const uint8_t *p, size_t staged) override;
  uint32_t max_data(const pdu::Common &c) const override;
  void on_header(const uint8_t *h, const pdu::Common &c) override;
  void on_data_end(bool digest_ok) override;
  void on_termreq(const pdu::TermReq &t) override;
  void on_protocol_error(const uint8_t *termreq, size_t len, pdu::Fes fes, const std::string &why) override;
  void on_peer_closed() override;
  // QueueTransport: what the core asks of the transport
  void complete(Request &r) override;
  uint8_t *buffer(Request &r, uint32_t len) override;
  void submit_file(Request &r, FileOp op, int fd, uint8_t *buf, uint64_t len, uint64_t off) override;
  void end(const std::string &why) override { close(why); }
  void io_queue_connected(int delta) override { io_.io_queue_connected(delta); }
  bool checks_data_after_receipt() const override { return rx_.digests().data; }

  bool handle_icreq(const uint8_t *h);
  void handle_capsule(const uint8_t *h, const pdu::Common &c);
  void handle_h2c_data(const uint8_t *h, const pdu::Common &c);
  void data_complete();
  SendRing::Pdu *tx_alloc(int32_t slot);
  bool ensure_buf(Cmd &c, uint32_t len);
  void send_r2t(uint16_t slot);
  void release(uint16_t slot);
  static PlacementGuard *guard(Cmd &c) { return c.req.placement.granted() ? &c.req.placement : nullptr; }

  Registry &reg_;
  ConnIo &io_;
  int fd_;
  PortState &port_;
  std::string peer_;
  PortCounters &port_counters_;
  ConnCounters stats_;

  bool closing_ = false;
  std::string close_reason_;
  uint8_t hpda_ = 0;
  unsigned file_ops_ = 0;

  static constexpr size_t kSendRingBeforeConnect = 8;
  // Before Connect the peer sends an ICReq and one Connect capsule (its
  // 1 KiB of data goes to the command's buffer): a page of staging holds
  // that, and kRxStaging comes with the Connect that admits the queue.
  static constexpr size_t kRxStagingBeforeConnect = 4096;
  std::deque<Cmd> cmds_; // grows as commands come; a deque keeps each where it is
  std::vector<uint16_t> free_;
  SendRing tx_;

  PduReceiver rx_;
  bool cur_last_ = false;
  bool discarding_ = false; // the current data is a refused command's, dropped
  SubmissionQueue sq_;      // after cmds_: it goes first, their requests after
};

} // namespace mpnvme::target
