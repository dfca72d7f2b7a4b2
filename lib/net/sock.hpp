// SPDX-License-Identifier: GPL-2.0-only
// MPTCP/TCP stream sockets for NVMe/TCP queues: creation with per-queue
// priority and TOS, source binding, connect with a deadline, and the MPTCP
// state (fallback or not, subflows) read back with MPTCP_INFO.
#pragma once
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include "lib/net/paths.hpp"

namespace mpnvme {

enum class Transport { Mptcp, Tcp };
const char *transport_name(Transport t);

struct SocketSettings {
  Transport transport = Transport::Mptcp;
  std::optional<unsigned> priority; // SO_PRIORITY
  std::optional<unsigned> tos;      // IP_TOS / IPV6_TCLASS
  std::string host_traddr;          // source address to bind
  std::string host_iface;           // SO_BINDTODEVICE
  std::chrono::milliseconds connect_timeout{10000};
  bool operator==(const SocketSettings &) const = default;
};

// Owns a file descriptor.
class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd &&o) noexcept : fd_(o.release()) {}
  Fd &operator=(Fd &&o) noexcept;
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd();
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();
  explicit operator bool() const { return fd_ >= 0; }

private:
  int fd_ = -1;
};

// The step a socket operation failed in, so that each caller can name its
// own option for it (the engine's host_traddr=, the target's --tos): this
// layer's messages say what failed, not how a user configures it.
enum class SocketStep { Resolve, Open, Tos, Priority, Device, Source, Connect, Option, Listen };
struct SocketError : std::runtime_error {
  SocketError(SocketStep s, const std::string &what) : std::runtime_error(what), step(s) {}
  SocketStep step;
};

// Connects a non-blocking stream socket to `to`. Throws SocketError with
// the address and the failing step (socket option, bind, connect).
Fd connect_stream(const PathAddr &to, const SocketSettings &s);

// This kernel cannot open MPTCP sockets (connect_stream, listen_stream).
struct MptcpUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Listening socket for a target port: MPTCP (plain TCP clients fall back
// transparently) or TCP, SO_REUSEADDR, non-blocking. Throws
// std::runtime_error naming the address and the failing step.
Fd listen_stream(const PathAddr &at, Transport transport, int backlog = 128);

// TCP_NODELAY on a queue socket, either end. NVMe/TCP PDUs are already
// batched by their sender; with Nagle on, a small PDU (R2T, response) sent
// while earlier data is unacknowledged waits for the peer's delayed ACK
// (~40 ms). On MPTCP the option is kept on the MPTCP socket and applied to
// every subflow, also to those that join later.
void set_nodelay(int fd, const std::string &what);

// SO_PRIORITY and IP_TOS/IPV6_TCLASS on a socket, TOS first (on TCP, IP_TOS
// rewrites sk_priority). `what` prefixes error messages (SocketError).
void apply_priority(int fd, bool ipv6, std::optional<unsigned> priority, std::optional<unsigned> tos, const std::string &what);

struct MptcpState {
  bool mptcp = false;    // false: plain TCP or MPTCP fell back to TCP
  unsigned subflows = 0; // additional subflows beyond the initial one
  // The path manager's view (MPTCP_INFO), to say why no subflow joined:
  unsigned subflows_max = 0;          // its limit on additional subflows
  unsigned add_addr_accepted = 0;     // the peer's announced addresses it took
  unsigned add_addr_accepted_max = 0; // its limit on those
  unsigned local_addr_max = 0;        // this side's subflow endpoints
  bool has_local_addr = false;        // the kernel reports local_addr_max (5.19+)
};
MptcpState query_mptcp(int fd);

// Wait until an MPTCP connection's subflows have settled: the count has not
// changed for `settle`, or `limit` passed. The joins start once the
// connection is fully established (after its first data exchange) and take
// a few round trips; I/O sent before they are up starts on the initial
// subflow and shifts mid-stream. Returns the subflows in the end (initial
// included; 0 for TCP or a fallback).
unsigned wait_for_subflows(int fd, std::chrono::milliseconds settle, std::chrono::milliseconds limit);

} // namespace mpnvme
