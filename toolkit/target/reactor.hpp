// SPDX-License-Identifier: GPL-2.0-only
// One event loop thread on io_uring: accepts (first reactor only), receives,
// sends and runs file I/O for many connections, plus a 100 ms tick for
// keep-alive expiry and event delivery. Other threads hand it new
// connections and wake it through an eventfd.
#pragma once
#include <atomic>
#include <liburing.h>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "connection.hpp"
#include "registry.hpp"

namespace mpnvme::target {

class Reactor : public ConnIo {
public:
  Reactor(Registry &reg, unsigned id, std::atomic<bool> &stop);
  ~Reactor() override;
  // Before run(): accept on this listener (one reactor does the accepting).
  void add_listener(int fd, PortState &port, std::vector<std::unique_ptr<Reactor>> *all);
  // Thread-safe: take over an accepted socket.
  void adopt(int fd, PortState &port, std::string peer);
  // Thread-safe: make run() look at its inbox, events and stop flag.
  void wake();
  void run();
  unsigned id() const { return id_; }

  void want_send(Connection &c) override;
  void submit_file(Connection &c, uint16_t slot, FileOp op, int fd, uint8_t *buf, uint64_t len, uint64_t off) override;

private:
  struct Conn;
  struct Op {
    enum Kind : uint8_t { Accept, Recv, Send, File, Wake, Tick } kind;
    Conn *conn = nullptr;
    size_t listener = 0;
    uint16_t slot = 0;
    FileOp fop = FileOp::Read;
  };
  struct Conn {
    std::unique_ptr<Connection> c;
    Op recv_op{Op::Recv}, send_op{Op::Send};
    std::vector<Op> file_ops;
    bool recv_armed = false, send_armed = false, shut = false;
    msghdr mh{};
    std::vector<iovec> iov;
    msghdr rx_mh{}; // the receive in flight: data in place, then staging
    iovec rx_iov[2]{};
    std::chrono::steady_clock::time_point close_deadline{};
  };
  struct Listener {
    int fd;
    PortState *port;
    Op op{Op::Accept};
    sockaddr_storage addr{};
    socklen_t addrlen = sizeof(sockaddr_storage);
  };

  io_uring_sqe *sqe();
  void arm_accept(size_t i);
  void arm_recv(Conn &c);
  void arm_send(Conn &c);
  void arm_wake();
  void arm_tick();
  void on_cqe(io_uring_cqe *cqe);
  void start(int fd, PortState &port, std::string peer);
  void reap(); // close and free connections that are done
  void tick();

  Registry &reg_;
  unsigned id_;
  std::atomic<bool> &stop_;
  io_uring ring_{};
  int wake_fd_ = -1;
  uint64_t wake_buf_ = 0;
  Op wake_op_{Op::Wake}, tick_op_{Op::Tick};
  __kernel_timespec tick_ts_{0, 100 * 1000 * 1000};
  std::vector<Listener> listeners_;
  std::vector<std::unique_ptr<Reactor>> *all_ = nullptr;
  size_t next_reactor_ = 0;
  std::list<Conn> conns_;
  std::vector<Conn *> send_wanted_;
  std::mutex inbox_mu_;
  std::vector<std::tuple<int, PortState *, std::string>> inbox_;
};

// "ADDR:PORT" of a socket address, for logs.
std::string peer_name(const sockaddr_storage &ss);

} // namespace mpnvme::target
