// SPDX-License-Identifier: GPL-2.0-only
// A host queue bound to its connected socket. The event loops use the
// non-blocking pumps (send, receive); connection setup and admin commands
// use the blocking helpers, which wait on this one socket with a deadline.
#pragma once
#include <chrono>
#include <memory>
#include <vector>

#include "engine/host/queue.hpp"
#include "lib/net/byte_stream.hpp"
#include "lib/net/sock.hpp"

namespace mpnvme::host {

class Channel {
public:
  Channel(Fd fd, QueueParams params);
  Channel(const Channel &) = delete;
  Channel &operator=(const Channel &) = delete;
  ~Channel() { close(); }

  Queue &queue() { return q_; }
  const Queue &queue() const { return q_; }
  int fd() const { return fd_.get(); }
  // What carries the bytes: the socket, or a TLS record layer over it
  // (set before initialize()).
  void set_stream(std::unique_ptr<ByteStream> s) { stream_ = std::move(s); }
  const ByteStream &stream() const { return *stream_; }

  // Hand the queue's batch to the socket, one sendmsg per batch, looping
  // only on partial writes; returns when the socket is full.
  void send();
  // Receive and process what the socket holds; true when bytes came.
  bool receive();
  bool wants_write() const { return (q_.tx_pending() || stream_->output_pending()) && !q_.failed(); }
  // The TermReq (if any) best effort, then shut the socket down so the
  // controller sees the end. Idempotent; the pumps do it once the queue
  // failed.
  void close();

  // ICReq/ICResp. Throws std::runtime_error naming the problem.
  void initialize(std::chrono::steady_clock::time_point deadline);
  // Run one command to completion; completions of other commands stay in
  // queue().completions(). On timeout the queue fails (the command and all
  // others complete as aborted).
  Completion execute(Command c, std::chrono::milliseconds timeout);
  // Wait up to `timeout_ms` for the socket, then send and receive.
  void wait(int timeout_ms);

private:
  void close_if_failed() {
    if (q_.failed()) close();
  }

  Fd fd_;
  std::unique_ptr<ByteStream> stream_;
  Queue q_;
  std::vector<iovec> iov_;
  bool closed_ = false;
};

} // namespace mpnvme::host
