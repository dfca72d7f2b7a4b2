// SPDX-License-Identifier: GPL-2.0-only
#include "reactor.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdexcept>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.hpp"
#include "reflected_tos.hpp"

namespace mpnvme::target {
namespace {
constexpr unsigned kRingEntries = 1024;
constexpr size_t kSendIov = 256;
} // namespace

std::string peer_name(const sockaddr_storage &ss) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    auto *a = reinterpret_cast<const sockaddr_in *>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    return fmt::format("{}:{}", buf, ntohs(a->sin_port));
  }
  auto *a = reinterpret_cast<const sockaddr_in6 *>(&ss);
  inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
  return fmt::format("[{}]:{}", buf, ntohs(a->sin6_port));
}

Reactor::Reactor(Registry &reg, unsigned id, std::atomic<bool> &stop) : reg_(reg), id_(id), stop_(stop) {
  if (int rc = io_uring_queue_init(kRingEntries, &ring_, 0); rc < 0)
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
}

void Reactor::arm_recv(Conn &c) {
  if (c.recv_armed || c.shut || c.c->closing()) return;
  c.rx_mh = {};
  c.rx_mh.msg_iov = c.rx_iov;
  c.rx_mh.msg_iovlen = c.c->rx_iov(c.rx_iov);
  io_uring_sqe *s = sqe();
  io_uring_prep_recvmsg(s, c.c->fd(), &c.rx_mh, 0);
  io_uring_sqe_set_data(s, &c.recv_op);
  c.recv_armed = true;
}

void Reactor::arm_send(Conn &c) {
  if (c.send_armed || c.shut || !c.c->has_pending_send()) return;
  const size_t n = c.c->build_send(c.iov.data(), c.iov.size());
  c.mh = {};
  c.mh.msg_iov = c.iov.data();
  c.mh.msg_iovlen = n;
  io_uring_sqe *s = sqe();
  io_uring_prep_sendmsg(s, c.c->fd(), &c.mh, MSG_NOSIGNAL);
  io_uring_sqe_set_data(s, &c.send_op);
  c.send_armed = true;
}

void Reactor::arm_wake() {
  io_uring_sqe *s = sqe();
  io_uring_prep_read(s, wake_fd_, &wake_buf_, sizeof wake_buf_, 0);
  io_uring_sqe_set_data(s, &wake_op_);
}

void Reactor::arm_tick() {
  io_uring_sqe *s = sqe();
  io_uring_prep_timeout(s, &tick_ts_, 0, 0);
  io_uring_sqe_set_data(s, &tick_op_);
}

void Reactor::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void Reactor::adopt(int fd, PortState &port, std::string peer) {
  {
    std::lock_guard lk(inbox_mu_);
    inbox_.emplace_back(fd, &port, std::move(peer));
  }
  wake();
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
  c.c = std::make_unique<Connection>(reg_, *this, fd, port, std::move(peer));
  c.c->io_context = &c;
  c.recv_op.conn = c.send_op.conn = &c;
  c.iov.resize(kSendIov);
  c.file_ops.resize(reg_.config().queue_entries, Op{Op::File});
  for (Op &o : c.file_ops)
    o.conn = &c;
  log().debug("port {}: connection from {} on reactor {}", port.cfg.id, c.c->peer(), id_);
  arm_recv(c);
}

void Reactor::want_send(Connection &c) { send_wanted_.push_back(static_cast<Conn *>(c.io_context)); }

void Reactor::submit_file(Connection &c, uint16_t slot, FileOp op, int fd, uint8_t *buf, uint64_t len, uint64_t off) {
  Op &o = static_cast<Conn *>(c.io_context)->file_ops[slot];
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

void Reactor::on_cqe(io_uring_cqe *cqe) {
  Op *op = static_cast<Op *>(io_uring_cqe_get_data(cqe));
  const int res = cqe->res;
  switch (op->kind) {
  case Op::Accept: {
    Listener &l = listeners_[op->listener];
    if (res >= 0 && l.port->disabled) {
      ::close(res);
    } else if (res >= 0) {
      const std::string peer = peer_name(l.addr);
      Reactor &to = *(*all_)[next_reactor_++ % all_->size()];
      if (&to == this)
        start(res, *l.port, peer);
      else
        to.adopt(res, *l.port, peer);
    } else if (res != -ECANCELED) {
      log().warn("port {}: accept: {}", l.port->cfg.id, strerror(-res));
    }
    if (!stop_) arm_accept(op->listener);
    break;
  }
  case Op::Recv: {
    Conn &c = *op->conn;
    c.recv_armed = false;
    if (res < 0) {
      if (res != -ECANCELED)
        c.c->close(fmt::format("receive: {}", strerror(-res)));
      else
        c.c->close("shutting down");
    } else {
      c.c->on_received(static_cast<size_t>(res));
    }
    arm_recv(c);
    break;
  }
  case Op::Send: {
    Conn &c = *op->conn;
    c.send_armed = false;
    if (res < 0) {
      c.c->close(fmt::format("send: {}", strerror(-res)));
      c.shut = true;
      ::shutdown(c.c->fd(), SHUT_RDWR);
    } else {
      c.c->on_sent(static_cast<size_t>(res));
      arm_send(c);
    }
    break;
  }
  case Op::File: op->conn->c->on_file_done(op->slot, res); break;
  case Op::Wake: {
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
    break;
  }
  case Op::Tick:
    tick();
    if (!stop_) arm_tick();
    break;
  }
}

void Reactor::tick() {
  const auto now = std::chrono::steady_clock::now();
  for (Conn &c : conns_)
    c.c->tick(now);
}

// Closing connections: let the last PDUs (a TermReq, a Disconnect response)
// go out for up to a second, then shut the socket and wait for every
// operation that points into the connection before freeing it.
void Reactor::reap() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = conns_.begin(); it != conns_.end();) {
    Conn &c = *it;
    if (c.c->closing() && !c.shut) {
      if (c.close_deadline == std::chrono::steady_clock::time_point{}) c.close_deadline = now + std::chrono::seconds(1);
      if (!c.c->has_pending_send() || now > c.close_deadline || stop_) {
        c.shut = true;
        ::shutdown(c.c->fd(), SHUT_RDWR);
      }
    }
    if (c.shut && !c.recv_armed && !c.send_armed && c.c->file_ops_in_flight() == 0) {
      const auto &s = c.c->counters();
      log().info("port {}: connection {} closed ({}): {} commands, {} bytes in, {} bytes out", c.c->port().cfg.id, c.c->peer(),
                 c.c->close_reason(), s.commands, s.rx_bytes, s.tx_bytes);
      const int fd = c.c->fd();
      c.c.reset();
      ::close(fd);
      it = conns_.erase(it);
    } else {
      ++it;
    }
  }
}

void Reactor::run() {
  for (size_t i = 0; i < listeners_.size(); i++)
    arm_accept(i);
  arm_wake();
  arm_tick();
  const bool poll = reg_.config().poll;
  while (true) {
    // --poll: hand new requests to the kernel and look for completions
    // without ever sleeping; otherwise sleep until one arrives.
    if (poll) {
      io_uring_submit(&ring_);
      // Socket completions arrive as task work: run it without waiting.
      if (!io_uring_cq_ready(&ring_)) io_uring_get_events(&ring_);
    } else {
      io_uring_submit_and_wait(&ring_, 1);
    }
    unsigned head, n = 0;
    io_uring_cqe *cqe;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      on_cqe(cqe);
      n++;
    }
    io_uring_cq_advance(&ring_, n);
    for (Conn *c : send_wanted_)
      arm_send(*c);
    send_wanted_.clear();
    if (stop_)
      for (Conn &c : conns_)
        c.c->close("target shutting down");
    reap();
    if (stop_ && conns_.empty()) break;
  }
}

} // namespace mpnvme::target
