// SPDX-License-Identifier: GPL-2.0-only
// One NVMe/TCP queue as the controller sees it: ICReq/ICResp, capsules with
// in-capsule data, R2T/H2CData for larger writes, C2HData (with the SUCCESS
// flag when SQ flow control is off) and responses, digests, and TermReq on
// protocol errors. The event loop feeds received bytes in and takes the
// outgoing batch out through the ConnIo interface, so the same code runs
// under io_uring and under the fuzzer.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <sys/uio.h>
#include <unordered_set>
#include <vector>

#include "lib/auth/dhchap_controller.hpp"
#include "lib/wire/nvme.hpp"
#include "lib/wire/pdu.hpp"
#include "lib/wire/send_ring.hpp"
#include "lib/wire/stream_codec.hpp"
#include "mpnvme-target/core/registry.hpp"

namespace mpnvme::target {

class Connection;

constexpr uint32_t kNvmeVersion = 0x10300; // NVMe 1.3, as nvmet reports
constexpr unsigned kAerLimit = 4;          // Asynchronous Event Requests parked per controller
// Before a peer has proved anything it may not hold a connection for long:
// from accept to a finished Connect (a TLS handshake included: nvmet-tcp
// gives that 10 s), and for one DH-HMAC-CHAP transaction.
constexpr std::chrono::seconds kSetupDeadline{10};
constexpr std::chrono::seconds kAuthDeadline{10};

// ASCII fields of Identify data and log pages: space padded, no terminator.
inline void put_padded(uint8_t *dst, size_t n, const std::string &s) {
  std::memset(dst, ' ', n);
  std::memcpy(dst, s.data(), std::min(n, s.size()));
}

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

class Connection : private PduHandler {
public:
  Connection(Registry &reg, ConnIo &io, int fd, PortState &port, std::string peer);
  ~Connection();
  Connection(const Connection &) = delete;
  Connection &operator=(const Connection &) = delete;

  int fd() const { return fd_; }
  const std::string &peer() const { return peer_; }
  uint16_t qid() const { return qid_; }
  PortState &port() { return port_; }

  // Receive side: where the next receive goes (1 or 2 iovecs: the rest of
  // a data transfer straight to its destination, then the staging buffer),
  // then how many bytes came (0 = the peer closed). Processing happens
  // inside on_received.
  size_t rx_iov(iovec iov[2]);
  void on_received(size_t n);
  // Send side: the pending batch as iovecs (at most max), and progress.
  size_t build_send(iovec *iov, size_t max);
  void on_sent(size_t n);
  bool has_pending_send() const { return !tx_.empty(); }
  void on_file_done(uint16_t slot, int res);
  // Periodic and wake-up work: keep-alive expiry, controller teardown,
  // delivery of asynchronous events. Returns false once the connection
  // should be closed.
  bool tick(std::chrono::steady_clock::time_point now);
  // The connection's secure channel was opened with this PSK identity:
  // Connect must come from its host for its subsystem.
  void set_tls_identity(std::string identity, std::string hostnqn, std::string subnqn);
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
    nvme::Sqe sqe;
    uint16_t cid = 0;
    uint8_t *buf = nullptr; // aligned command buffer (grows, kept)
    uint8_t *in = nullptr;  // where the host's data lands: buf, or a RAM namespace
    uint32_t buf_cap = 0;
    uint32_t data_len = 0; // host data expected (writes) or to send (reads)
    uint32_t received = 0;
    const uint8_t *out = nullptr; // C2H data source: buf, RAM or the zero page
    uint32_t out_len = 0;
    uint16_t status = 0;
    uint32_t dw0 = 0, dw1 = 0;
    uint16_t in_ring = 0;
    bool aer = false; // parked Async Event Request
  };
  // transport: what the controller accepts from the shared receiver
  size_t on_setup(const uint8_t *p, size_t staged) override;
  uint32_t max_data(const pdu::Common &c) const override;
  void on_header(const uint8_t *h, const pdu::Common &c) override;
  void on_data_end(bool digest_ok) override;
  void on_termreq(const pdu::TermReq &t) override;
  void on_protocol_error(const uint8_t *termreq, size_t len, pdu::Fes fes, const std::string &why) override;
  void on_peer_closed() override { close("closed by the host"); }
  bool handle_icreq(const uint8_t *h);
  void handle_capsule(const uint8_t *h, const pdu::Common &c);
  void handle_h2c_data(const uint8_t *h, const pdu::Common &c);
  void data_complete();
  SendRing::Pdu *tx_alloc(int32_t slot);
  bool ensure_buf(Cmd &c, uint32_t len);
  void send_r2t(uint16_t slot);
  // commands
  void dispatch(uint16_t slot);
  void execute(uint16_t slot);
  void complete(uint16_t slot, uint16_t status, uint32_t dw0 = 0, uint32_t dw1 = 0);
  void finish(uint16_t slot);
  void release(uint16_t slot);
  void refuse(uint16_t slot, uint16_t status, const std::string &why, uint32_t dw0 = 0);
  uint64_t mdts_bytes() const;
  void exec_fabrics(Cmd &c, uint16_t slot);
  // auth.cpp: the Connect result's AUTHREQ, the gate, Send and Receive.
  uint32_t begin_authentication(const std::string &hostnqn, const std::string &subnqn);
  bool authentication_gate(const Cmd &c, uint16_t slot);
  void auth_send(Cmd &c, uint16_t slot);
  void auth_receive(Cmd &c, uint16_t slot);
  bool auth_fields_valid(const Cmd &c, uint16_t slot);
  void auth_finished();
  bool start_transaction(const std::string &hostnqn, const std::string &subnqn);
  void count_auth_failure();
  void auth_expire(std::chrono::steady_clock::time_point now);
  void exec_admin(Cmd &c, uint16_t slot);
  void exec_io(Cmd &c, uint16_t slot);
  class SlotDone; // a command's BackendCompletion (io.cpp)
  void read_write(Cmd &c, Backend &be, SlotDone &done);
  void deallocate(Cmd &c, uint16_t slot, Backend &be, SlotDone &done);
  void refuse_lba_range(uint16_t slot, const Backend &be, uint64_t lba, uint64_t n);
  void reservation_command(Cmd &c, uint16_t slot, Reservations &r); // io_reservations.cpp
  void reservation_report(Cmd &c, uint16_t slot, const Reservations &r);
  bool reservation_permits(const Cmd &c, uint16_t slot, const Reservations &r);
  void connect(Cmd &c, uint16_t slot);
  void property_get(Cmd &c, uint16_t slot);
  void property_set(Cmd &c, uint16_t slot);
  void identify(Cmd &c, uint16_t slot);
  void identify_controller(Cmd &c, uint16_t slot);
  void identify_namespace(Cmd &c, uint16_t slot);
  void identify_active_ns_list(Cmd &c, uint16_t slot);
  void identify_ns_descriptors(Cmd &c, uint16_t slot);
  void identify_nvm_command_set(Cmd &c, uint16_t slot);
  void get_log_page(Cmd &c, uint16_t slot);
  void features(Cmd &c, uint16_t slot, bool set);
  void return_data(Cmd &c, uint16_t slot, uint32_t len);
  Namespace *io_namespace(Cmd &c, uint16_t slot);
  uint8_t *backend_write_destination(const Cmd &c);
  void deliver_aens();

  Registry &reg_;
  ConnIo &io_;
  int fd_;
  PortState &port_;
  std::string peer_;
  std::string label_;
  PortCounters &port_counters_;
  ConnCounters stats_;

  bool closing_ = false;
  std::string close_reason_;
  uint16_t qid_ = 0xffff; // set by Connect
  uint32_t sqsize_ = 0;   // entries
  uint16_t sqhd_ = 0;
  bool sqflow_disabled_ = false;
  std::shared_ptr<TargetController> ctrl_;
  uint8_t hpda_ = 0;
  uint32_t inline_limit_;
  unsigned file_ops_ = 0;

  std::vector<Cmd> cmds_;
  std::vector<uint16_t> free_;
  SendRing tx_;

  PduReceiver rx_;
  bool cur_last_ = false;
  bool digest_failed_ = false;           // a data digest of the current transfer failed
  std::unordered_set<uint32_t> refused_; // refusals logged at info: status, opcode, fctype
  std::string connect_host_;             // host NQN of the Connect, for refusals before a controller exists
  // DH-HMAC-CHAP: set by Connect for a host with a key; until it has
  // authenticated, the queue takes Authentication Send/Receive only.
  std::string tls_identity_, tls_host_, tls_subsys_; // empty: no secure channel
  std::unique_ptr<dhchap::ControllerTransaction> auth_;
  bool auth_pending_ = false;
  bool auth_failure_counted_ = false;
  std::chrono::steady_clock::time_point auth_deadline_{};
  // Set-up (a TLS handshake, ICReq, Connect) must be over by this time.
  std::chrono::steady_clock::time_point setup_deadline_;
};

} // namespace mpnvme::target
