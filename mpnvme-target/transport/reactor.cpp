// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/transport/reactor.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <stdexcept>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/base/log.hpp"
#include "lib/net/sock.hpp"
#include "lib/net/socket_calls.hpp"
#include "lib/tls/ktls_stream.hpp"
#include "mpnvme-target/transport/reflected_tos.hpp"

namespace mpnvme::target {
namespace {
constexpr unsigned kRingEntries = 1024;
} // namespace

Reactor::Reactor(Registry &reg, ConnectionBudget &budget, unsigned id, std::atomic<bool> &stop)
    : reg_(reg), budget_(budget), id_(id), poll_(reg.config().poll), stop_(stop) {
  // Task work (readiness reports, file completions) waits for the loop to
  // ask for it instead of interrupting the thread: the report's wake-up
  // then costs the sender's softirq no IPI while it holds the socket lock
  // the loop's next receive needs. DEFER_TASKRUN needs one submitting
  // thread, the loop's: the ring is enabled in run().
  // TASKRUN_FLAG: the kernel marks the ring when task work (a completion
  // not yet posted) waits, so a spinning loop enters only then.
  const unsigned flags =
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_R_DISABLED;
  if (int rc = io_uring_queue_init(kRingEntries, &ring_, flags); rc < 0)
    throw std::runtime_error(fmt::format("io_uring_queue_init: {}", strerror(-rc)));
  wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) throw std::runtime_error(fmt::format("eventfd: {}", strerror(errno)));
}

Reactor::~Reactor() {
  conns_.clear();
  io_uring_queue_exit(&ring_);
  ::close(wake_fd_);
}

io_uring_sqe *Reactor::sqe() {
  io_uring_sqe *s = io_uring_get_sqe(&ring_);
  if (!s) { // ring full: hand what we have to the kernel and retry
    io_uring_submit(&ring_);
    s = io_uring_get_sqe(&ring_);
  }
  if (!s) throw std::runtime_error("io_uring submission queue exhausted");
  return s;
}

void Reactor::add_listener(int fd, PortState &port, std::vector<std::unique_ptr<Reactor>> *all) {
  all_ = all;
  listeners_.push_back({fd, &port});
}

void Reactor::arm_accept(size_t i) {
  Listener &l = listeners_[i];
  l.op.listener = i;
  l.addrlen = sizeof l.addr;
  io_uring_sqe *s = sqe();
  io_uring_prep_accept(s, l.fd, reinterpret_cast<sockaddr *>(&l.addr), &l.addrlen, SOCK_CLOEXEC);
  io_uring_sqe_set_data(s, &l.op);
  l.armed = true;
}

// Readiness only: the loop does the receiving (see reactor.hpp).
void Reactor::arm_readable(Conn &c) {
  if (c.read_report != ReadReport::None || c.shut()) return;
  io_uring_sqe *s = sqe();
  io_uring_prep_poll_multishot(s, c.c->fd(), POLLIN | POLLRDHUP);
  io_uring_sqe_set_data(s, &c.readable_op);
  c.read_report = ReadReport::Armed;
}

void Reactor::arm_writable(Conn &c) {
  if (c.write_armed || c.shut()) return;
  io_uring_sqe *s = sqe();
  io_uring_prep_poll_add(s, c.c->fd(), POLLOUT);
  io_uring_sqe_set_data(s, &c.writable_op);
  c.write_armed = true;
}

void Reactor::arm_wake() {
  io_uring_sqe *s = sqe();
  io_uring_prep_read(s, wake_fd_, &wake_buf_, sizeof wake_buf_, 0);
  io_uring_sqe_set_data(s, &wake_op_);
  wake_armed_ = true;
}

void Reactor::arm_tick() {
  io_uring_sqe *s = sqe();
  io_uring_prep_timeout(s, &tick_ts_, 0, 0);
  io_uring_sqe_set_data(s, &tick_op_);
  tick_armed_ = true;
}

void Reactor::cancel(Op &op) {
  io_uring_sqe *s = sqe();
  io_uring_prep_cancel(s, &op, 0);
  io_uring_sqe_set_data(s, &cancel_op_);
}

void Reactor::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void Reactor::start(int fd, PortState &port, std::string peer) {
  try {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len);
    const std::string what = fmt::format("port {} connection from {}", port.cfg.id, peer);
    std::optional<unsigned> tos = port.cfg.tos;
    if (reg_.config().reflect_tos && port.cfg.transport == Transport::Mptcp) tos = reflected_tos(fd);
    apply_priority(fd, ss.ss_family == AF_INET6, port.cfg.sk_priority, tos, what);
    set_nodelay(fd, what);
  } catch (const SocketError &e) {
    // This layer's message says what failed; the option is the target's.
    const char *opt = e.step == SocketStep::Tos        ? " (--tos or the port's tos)"
                      : e.step == SocketStep::Priority ? " (--sk-priority or the port's so_priority)"
                                                       : "";
    log().warn("{}{}", e.what(), opt);
  } catch (const std::exception &e) {
    log().warn("{}", e.what());
  }
  conns_.emplace_back();
  Conn &c = conns_.back();
  c.addr = AuthBackoff::address(peer);
  c.c = std::make_unique<Connection>(reg_, *this, fd, port, std::move(peer));
  c.c->io_context = &c;
  c.readable_op.conn = c.writable_op.conn = &c;
  // Not MPTCP: a TCP port's, or a TCP host's on an MPTCP port (a fallback).
  const TlsPort tls = port.tls(); // as the port is now: a later change leaves this connection alone
  c.plain_tcp = tls == TlsPort::None && !query_mptcp(fd).mptcp;
  c.tls = tls;
  if (tls == TlsPort::None)
    c.stream = std::make_unique<SocketStream>(fd);
  else
    c.setup = Setup::FirstByte;
  log().debug("port {}: connection from {} on reactor {}", port.cfg.id, c.c->peer(), id_);
  arm_readable(c); // --poll too: it is the event loop that never sleeps
}

void Reactor::want_send(Connection &c) { send_wanted_.push_back(static_cast<Conn *>(c.io_context)); }

void Reactor::submit_file(Connection &c, uint16_t slot, FileOp op, int fd, uint8_t *buf, uint64_t len, uint64_t off) {
  Conn &conn = *static_cast<Conn *>(c.io_context);
  while (conn.file_ops.size() <= slot) // as the connection's command slots grow
    conn.file_ops.push_back(Op{Op::File, &conn});
  Op &o = conn.file_ops[slot];
  o.slot = slot;
  o.fop = op;
  io_uring_sqe *s = sqe();
  switch (op) {
  case FileOp::Read: io_uring_prep_read(s, fd, buf, static_cast<unsigned>(len), off); break;
  case FileOp::Write: io_uring_prep_write(s, fd, buf, static_cast<unsigned>(len), off); break;
  case FileOp::Fsync: io_uring_prep_fsync(s, fd, IORING_FSYNC_DATASYNC); break;
  case FileOp::Deallocate: io_uring_prep_fallocate(s, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len); break;
  case FileOp::WriteZeroes: io_uring_prep_fallocate(s, fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, off, len); break;
  }
  io_uring_sqe_set_data(s, &o);
}

// Received in place: the connection says where the next bytes go (a
// command's buffer, or staging for headers). A few rounds at most, so one
// busy connection cannot hold the others up.
bool Reactor::receive(Conn &c) {
  bool got = false;
  if (!c.stream && (c.shut() || c.c->closing() || !secure_setup(c))) return got;
  for (int round = 0; round < 8 && !c.shut() && !c.c->closing(); round++) {
    iovec iov[2];
    const size_t cnt = c.c->rx_iov(iov);
    size_t room = 0;
    for (size_t i = 0; i < cnt; i++)
      room += iov[i].iov_len;
    const ssize_t n = c.stream->recv(iov, cnt);
    if (n < 0) {
      const int err = errno;
      c.c->on_receive_failed();
      if (err == EAGAIN || err == EINTR) {
        c.readable = false;
      } else {
        c.c->close(err == EPROTO ? c.stream->failure() : fmt::format("receive: {}", strerror(err)));
      }
      return got;
    }
    c.c->on_received(static_cast<size_t>(n)); // 0: the peer closed
    if (n == 0) return got;
    got = true;
    if (static_cast<size_t>(n) < room && !c.peer_done) { // drained: a new arrival reports itself
      c.readable = false;
      return got;
    }
  }
  return got;
}

void Reactor::send(Conn &c) {
  if (!c.stream) {
    if (!c.shut() && !c.c->closing() && c.setup == Setup::Handshake) secure_setup(c); // the handshake's flight waited for room
    return;
  }
  while (!c.shut() && !c.write_armed && c.c->has_pending_send()) {
    const size_t cnt = c.c->build_send(send_iov_.data(), send_iov_.size());
    const ssize_t sent = c.stream->send(send_iov_.data(), cnt);
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && errno == EAGAIN) break; // the socket buffer is full
    if (sent < 0) return send_failed(c);
    c.c->on_sent(static_cast<size_t>(sent));
  }
  if (c.shut() || c.write_armed) return;
  // What the stream gathered from the batch (TLS records) goes out now.
  const int left = c.stream->flush();
  if (left < 0) return send_failed(c);
  if (left > 0 || c.c->has_pending_send()) arm_writable(c);
}

void Reactor::send_failed(Conn &c) {
  c.c->close(errno == EPROTO ? c.stream->failure() : fmt::format("send: {}", strerror(errno)));
  shut(c);
}

// While spinning, a hot connection is polled by every turn, so a readiness
// report for it would only make the sender's softirq queue task work and
// the loop enter the ring and receive once more for nothing (one enter and
// one recvmsg per QD1 command): its report is cancelled while it stays hot
// and re-armed when it cools or before the loop sleeps. A report armed on a
// socket with data waiting fires at once, so no arrival is missed.
bool Reactor::polled_by_turn(const Conn &c) const {
  return spinning_ && c.setup == Setup::Serving && !c.shut() && turn_time_ - c.last_data < kHot;
}

void Reactor::update_readiness() {
  for (Conn &c : conns_) {
    if (c.shut()) continue;
    if (!polled_by_turn(c)) {
      arm_readable(c); // nothing while the cancel of its last one is in flight
    } else if (c.read_report == ReadReport::Armed) {
      cancel(c.readable_op);
      c.read_report = ReadReport::Cancelling;
    }
  }
}

// One turn over the sockets: receive what is there, then send what the
// commands produced. True when anything arrived. While spinning, the hot
// connections (bytes within kHot) are checked with one poll(2) instead of
// waiting for their readiness reports, and only those with data are read:
// poll reads the socket's state without its lock, where a receive on an
// empty socket takes it and meets the sender's softirq holding it (the
// lock's slow path then dominates the target's time), and at QD1 a turn
// that read every connection and asked the ring for events cost three
// system calls. Idle connections (an admin queue) wait for their report.
//
// One exception: a lone hot TCP connection (not MPTCP, no TLS: QD1 from
// one TCP host) is read without the poll. Each turn is then one recvmsg
// that gets the command or returns EAGAIN, where the poll's turn was a
// poll and, once data came, a recvmsg: one system call less per command,
// which shortens TCP's QD1 latency. Over MPTCP the direct read was slower
// than the poll (an MPTCP receive costs more than a TCP one), so MPTCP
// keeps the poll; docs/measurements.md has the runs.
bool Reactor::serve_sockets() {
  bool got = false;
  unread_ = false;
  if (spinning_) {
    hot_fds_.clear();
    hot_.clear();
    for (Conn &c : conns_)
      if (!c.readable && polled_by_turn(c)) {
        hot_fds_.push_back({c.c->fd(), POLLIN | POLLRDHUP, 0});
        hot_.push_back(&c);
      }
    if (hot_.size() == 1 && hot_[0]->plain_tcp)
      hot_[0]->readable = true; // receive() clears it again on EAGAIN
    else if (!hot_fds_.empty() && poll_now(hot_fds_.data(), hot_fds_.size()) > 0)
      for (size_t i = 0; i < hot_fds_.size(); i++)
        if (const short ev = hot_fds_[i].revents) {
          hot_[i]->readable = true;
          if (ev & (POLLRDHUP | POLLHUP)) hot_[i]->peer_done = true;
        }
  }
  for (Conn &c : conns_) {
    if (c.readable) {
      if (receive(c)) {
        got = true;
        c.last_data = turn_time_;
      }
    }
    // Its rounds ran out with bytes still there: no new arrival will
    // report them, so the loop must not sleep on them.
    unread_ |= c.readable && !c.shut() && !c.c->closing();
  }
  for (Conn *c : send_wanted_)
    send(*c);
  send_wanted_.clear();
  return got;
}

void Reactor::on_readiness(Op &op, int res, unsigned flags) {
  Conn &c = *op.conn;
  if (op.kind == Op::Writable) {
    c.write_armed = false;
    if (res >= 0) send(c);
    return;
  }
  if (!(flags & IORING_CQE_F_MORE)) { // a multishot poll can end (cancelled, or on CQ overflow)
    if (std::exchange(c.read_report, ReadReport::None) == ReadReport::Cancelling)
      return; // the turn polls it; update_readiness re-arms it
  }
  if (res >= 0) {
    // A hot connection's report, still in flight when it was cancelled:
    // the turn's poll(2) sees the same bytes.
    if (!polled_by_turn(c)) c.readable = true;
    // The host's FIN is queued behind data: a receive that leaves room is
    // then not the end of what there is to read, the end of stream is.
    if (res & (POLLRDHUP | POLLHUP)) c.peer_done = true;
  } else if (res != -ECANCELED)
    c.c->close(fmt::format("poll: {}", strerror(-res)));
  if (c.read_report == ReadReport::None) arm_readable(c);
}

void Reactor::on_wake() {
  wake_armed_ = false;
  std::vector<std::tuple<int, PortState *, std::string>> in;
  {
    std::lock_guard lk(inbox_mu_);
    in.swap(inbox_);
  }
  for (auto &[fd, port, peer] : in)
    start(fd, *port, peer);
  for (Conn &c : conns_)
    c.c->tick(std::chrono::steady_clock::now()); // deliver events now
  if (!stop_) arm_wake();
}

void Reactor::on_cqe(io_uring_cqe *cqe) {
  Op *op = static_cast<Op *>(io_uring_cqe_get_data(cqe));
  const int res = cqe->res;
  switch (op->kind) {
  case Op::Accept: on_accept(*op, res); break;
  case Op::Readable:
  case Op::Writable: on_readiness(*op, res, cqe->flags); break;
  case Op::File: op->conn->c->on_file_done(op->slot, res); break;
  case Op::Wake: on_wake(); break;
  case Op::Tick:
    tick_armed_ = false;
    tick();
    if (!stop_) arm_tick();
    break;
  case Op::Cancel: break;
  }
}

unsigned Reactor::drain_completions() {
  unsigned head, n = 0;
  io_uring_cqe *cqe;
  io_uring_for_each_cqe(&ring_, head, cqe) {
    on_cqe(cqe);
    n++;
  }
  io_uring_cq_advance(&ring_, n);
  return n;
}

void Reactor::tick() {
  const auto now = std::chrono::steady_clock::now();
  for (Conn &c : conns_)
    c.c->tick(now);
  resume_listeners(now);
}

void Reactor::shut(Conn &c) {
  if (c.shut()) return;
  c.life = Life::Shut;
  if (c.stream) c.stream->close();
  ::shutdown(c.c->fd(), SHUT_RDWR);
}

// Closing connections: let the last PDUs (a TermReq, a Disconnect response)
// go out for up to a second, then shut the socket, cancel its readiness
// reports and wait for every operation that points into the connection
// before freeing it.
void Reactor::reap() {
  const auto now = turn_time_;
  for (auto it = conns_.begin(); it != conns_.end();) {
    Conn &c = *it;
    if (c.c->closing() && !c.shut()) {
      if (c.close_deadline == std::chrono::steady_clock::time_point{}) c.close_deadline = now + std::chrono::seconds(1);
      const bool unsent = c.c->has_pending_send() || (c.stream && c.stream->output_pending());
      if (!unsent || now > c.close_deadline || stop_) shut(c);
    }
    if (c.life == Life::Shut) {
      if (c.read_report == ReadReport::Armed) cancel(c.readable_op);
      if (c.write_armed) cancel(c.writable_op);
      c.life = Life::Cancelled;
    }
    if (c.shut() && c.read_report == ReadReport::None && !c.write_armed && c.c->file_ops_in_flight() == 0) {
      const auto &s = c.c->counters();
      log().info("port {}: connection {} closed ({}): {} commands, {} bytes in, {} bytes out", c.c->port().cfg.id, c.c->peer(),
                 c.c->close_reason(), s.commands, s.rx_bytes, s.tx_bytes);
      const int fd = c.c->fd();
      c.c.reset();
      ::close(fd);
      budget_.give_back(c.addr);
      it = conns_.erase(it);
      assigned_--;
    } else {
      ++it;
    }
  }
}

// --poll, or while work came recently: hand new requests to the kernel and
// collect completions without sleeping; otherwise sleep until one arrives.
// Readiness, file completions, accepts and the tick arrive as task work,
// which only an enter runs: the kernel flags the ring when some waits
// (IORING_SQ_TASKRUN), so a spinning turn makes no system call when there
// is none (a fixed 10 us period had cost one enter per QD1 command).
void Reactor::wait_for_work(bool spin) {
  if (spin) {
    io_uring_submit(&ring_); // a system call only when there are requests
    const unsigned pending = IO_URING_READ_ONCE(*ring_.sq.kflags) & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW);
    if (pending && !io_uring_cq_ready(&ring_)) io_uring_get_events(&ring_);
  } else {
    io_uring_submit_and_wait(&ring_, 1);
  }
}

// Stopped: no connection left, no accept, wake-up or tick in the ring, so
// that tearing the ring down releases the listening sockets at once (a
// ring torn down with an accept in flight kept the port bound after exit).
bool Reactor::finished() const {
  if (!stop_ || !conns_.empty() || wake_armed_ || tick_armed_) return false;
  for (const Listener &l : listeners_)
    if (l.armed) return false;
  return true;
}

void Reactor::run() {
  // liburing 2.3 (Debian 12) declares io_uring_enable_rings but does not export it.
  if (syscall(__NR_io_uring_register, ring_.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0) < 0)
    throw std::runtime_error(fmt::format("io_uring enable rings: {}", strerror(errno)));
  for (size_t i = 0; i < listeners_.size(); i++)
    arm_accept(i);
  arm_wake();
  arm_tick();
  bool stopping = false;
  while (!finished()) {
    turn_time_ = std::chrono::steady_clock::now();
    spinning_ = poll_ || unread_ || spin_.spinning(turn_time_);
    update_readiness();
    wait_for_work(spinning_);
    if (!spinning_) turn_time_ = std::chrono::steady_clock::now();
    drain_completions();
    if (serve_sockets()) spin_.work(turn_time_);
    if (stop_ && !stopping) { // once: close everything and take back what the ring holds
      stopping = true;
      for (Conn &c : conns_)
        c.c->close("target shutting down");
      for (Listener &l : listeners_)
        if (l.armed) cancel(l.op);
      if (wake_armed_) cancel(wake_op_);
      if (tick_armed_) cancel(tick_op_);
    }
    reap();
  }
}

} // namespace mpnvme::target
