// SPDX-License-Identifier: GPL-2.0-only
// One event loop thread: the sockets of many connections read and written
// with non-blocking calls, io_uring for accepts, file I/O, readiness and a
// 100 ms tick (keep-alive expiry, event delivery). Other threads hand it
// new connections and wake it through an eventfd.
//
// Why not socket I/O through the ring: a ring receive is issued from the
// socket's wake-up, which runs inside the sender's softirq with the socket
// lock held, so the receive spins on that lock (perf:
// __pv_queued_spin_lock_slowpath under io_recvmsg; the share is in
// docs/measurements.md, "Where the target's time per command went"). A
// receive made by the loop itself meets the lock only by chance.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <liburing.h>
#include <list>
#include <memory>
#include <mutex>
#include <poll.h>
#include <vector>

#include "lib/net/byte_stream.hpp"
#include "lib/tls/tls_stream.hpp"
#include "mpnvme-target/core/registry.hpp"
#include "mpnvme-target/transport/connection.hpp"
#include "mpnvme-target/transport/connection_budget.hpp"
#include "mpnvme-target/transport/idle_spin.hpp"

namespace mpnvme::target {

class Reactor : public ConnIo {
public:
  Reactor(Registry &reg, ConnectionBudget &budget, unsigned id, std::atomic<bool> &stop);
  ~Reactor() override;
  // Before run(): accept on this listener (one reactor does the accepting).
  void add_listener(int fd, PortState &port, std::vector<std::unique_ptr<Reactor>> *all);
  // Thread-safe: take over an accepted socket.
  void adopt(int fd, PortState &port, std::string peer);
  // Thread-safe: make run() look at its inbox, events and stop flag.
  void wake();
  // Until the stop flag is set and every connection is closed, the
  // accepts are cancelled and no ring operation is left in flight.
  void run();
  unsigned id() const { return id_; }

  void want_send(Connection &c) override;
  void submit_file(Connection &c, uint16_t slot, FileOp op, int fd, uint8_t *buf, uint64_t len, uint64_t off) override;
  void io_queue_connected(int delta) override { io_queues_ += delta; }

private:
  struct Conn;
  struct Op {
    enum Kind : uint8_t { Accept, Readable, Writable, File, Wake, Tick, Cancel } kind;
    Conn *conn = nullptr;
    size_t listener = 0;
    uint16_t slot = 0;
    FileOp fop = FileOp::Read;
  };
  // How far a connection is set up: a TLS port's first byte says TLS or
  // plaintext, then the handshake runs on readiness like any receive.
  enum class Setup : uint8_t { FirstByte, Handshake, Serving };
  // Open until shut (the connection closed; its ring operations still to
  // cancel), then cancelled (cancels issued: freed once none is in flight).
  enum class Life : uint8_t { Open, Shut, Cancelled };
  // The readiness report (multishot POLLIN) in the ring: none, armed, or
  // its cancel in flight (hot while spinning: the turn polls it instead).
  enum class ReadReport : uint8_t { None, Armed, Cancelling };
  struct Conn {
    std::unique_ptr<Connection> c;
    // What carries the bytes; null until Setup::Serving.
    std::unique_ptr<ByteStream> stream;
    std::unique_ptr<tls::TlsStream> handshaking; // Setup::Handshake
    Setup setup = Setup::Serving;
    Life life = Life::Open;
    ReadReport read_report = ReadReport::None;
    Op readable_op{Op::Readable}, writable_op{Op::Writable};
    std::deque<Op> file_ops;     // one per command slot that did file I/O; a deque keeps each where the ring points
    bool readable = true;        // data may be waiting (a readiness report, or the last receive filled its buffers)
    bool peer_done = false;      // the host shut its side: read on until the end of stream
    bool write_armed = false;    // a POLLOUT after a send that would block
    bool plain_tcp = false;      // not MPTCP, no TLS: a lone hot one is spun on with recvmsg (serve_sockets)
    TlsPort tls = TlsPort::None; // the port's secure channel when this connection came
    bool shut() const { return life != Life::Open; }
    std::string addr; // the peer's address: what the connection budget counts
    std::chrono::steady_clock::time_point close_deadline{};
    std::chrono::steady_clock::time_point last_data{}; // when a receive last got bytes: hot ones are polled every turn
  };
  struct Listener {
    int fd;
    PortState *port;
    Op op{Op::Accept};
    bool armed = false;
    // Out of descriptors (EMFILE and the like): accept waits a while instead
    // of failing again at once, and says so once per interval.
    std::chrono::steady_clock::time_point resume_at{};
    std::chrono::steady_clock::time_point next_log{};
    unsigned failed_since_log = 0;
    sockaddr_storage addr{};
    socklen_t addrlen = sizeof(sockaddr_storage);
  };

  io_uring_sqe *sqe();
  void arm_accept(size_t i);
  void arm_readable(Conn &c);
  void arm_writable(Conn &c);
  void arm_wake();
  void arm_tick();
  void cancel(Op &op);
  void wait_for_work(bool spin);
  bool polled_by_turn(const Conn &c) const;
  void update_readiness();
  unsigned drain_completions();
  void on_cqe(io_uring_cqe *cqe);
  void on_accept(Op &op, int res);
  void on_readiness(Op &op, int res, unsigned flags);
  void on_wake();
  bool receive(Conn &c); // true when bytes arrived
  // A TLS port's connection up to its first PDU: true once `stream` is set.
  bool secure_setup(Conn &c);
  void handshake_done(Conn &c);
  void send(Conn &c);
  void send_failed(Conn &c);
  bool serve_sockets();
  void start(int fd, PortState &port, std::string peer);
  void shut(Conn &c);
  void reap(); // close and free connections that are done
  void tick();
  bool finished() const;

  // A connection from an address still waiting after a failed
  // authentication (AuthBackoff): refused, logged once per wait.
  bool waits_after_failed_authentication(const std::string &peer, uint16_t port);
  bool within_budget(const std::string &addr, uint16_t port);
  void accept_failed(Listener &l, int err);
  void resume_listeners(std::chrono::steady_clock::time_point now);
  Registry &reg_;
  ConnectionBudget &budget_;
  unsigned id_;
  bool poll_; // --poll: the same loop, never sleeping
  std::atomic<bool> &stop_;
  io_uring ring_{};
  int wake_fd_ = -1;
  uint64_t wake_buf_ = 0;
  Op wake_op_{Op::Wake}, tick_op_{Op::Tick}, cancel_op_{Op::Cancel};
  bool wake_armed_ = false, tick_armed_ = false;
  __kernel_timespec tick_ts_{0, 100 * 1000 * 1000};
  IdleSpin spin_;
  // A spinning turn is one poll(2) of the hot connections and a receive
  // from those with data; what the ring reports (readiness of idle
  // connections, accepts, file I/O, the tick) is fetched when the kernel
  // flags it.
  static constexpr std::chrono::milliseconds kHot{1};
  bool spinning_ = false; // this turn's mode: what its steps and the reports it reaps go by
  // When the turn started, or woke if it slept: a spinning turn reads the
  // clock once (what a turn costs decides how soon it sees an arrival).
  std::chrono::steady_clock::time_point turn_time_{};
  std::vector<pollfd> hot_fds_;
  std::vector<Conn *> hot_;
  bool unread_ = false;               // a connection's receive rounds ran out with bytes left
  std::array<iovec, 256> send_iov_{}; // one send at a time: the loop's, not each connection's
  std::vector<Listener> listeners_;
  Reactor &least_loaded();
  std::vector<std::unique_ptr<Reactor>> *all_ = nullptr;
  // Read by the accepting loop to place new connections.
  std::atomic<int> io_queues_{0};
  std::atomic<unsigned> assigned_{0}; // connections handed to this loop and not yet freed
  std::list<Conn> conns_;
  std::vector<Conn *> send_wanted_;
  std::mutex inbox_mu_;
  std::vector<std::tuple<int, PortState *, std::string>> inbox_;
};

// "ADDR:PORT" of a socket address, for logs.
std::string peer_name(const sockaddr_storage &ss);

} // namespace mpnvme::target
