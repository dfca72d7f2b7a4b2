// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/channel.hpp"

#include "engine/host/clock.hpp"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>

namespace mpnvme::host {
namespace {
constexpr size_t kMaxIov = 1024;       // IOV_MAX on Linux
constexpr unsigned kMaxRecvCalls = 16; // per receive(): other paths get their turn
} // namespace

Channel::Channel(Fd fd, QueueParams params)
    : fd_(std::move(fd)), stream_(std::make_unique<SocketStream>(fd_.get())), q_(std::move(params)), iov_(kMaxIov) {}

void Channel::send() {
  while (!q_.failed()) {
    const size_t n = q_.tx_iov(iov_.data(), iov_.size());
    if (!n) break;
    const ssize_t sent = stream_->send(iov_.data(), n);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      q_.fail(errno == EPROTO ? stream_->failure() : fmt::format("send failed: {}", strerror(errno)));
      return;
    }
    q_.on_sent(static_cast<size_t>(sent));
  }
  // What the stream gathered from the batch (TLS records) goes out now.
  if (!q_.failed() && stream_->flush() < 0)
    q_.fail(stream_->failure().empty() ? fmt::format("send failed: {}", strerror(errno)) : stream_->failure());
  close_if_failed();
}

bool Channel::receive() {
  bool got = false;
  // Records a TLS layer decrypted already are read past the limit: no
  // readiness report would tell of them.
  for (unsigned i = 0; (i < kMaxRecvCalls || stream_->buffered()) && !q_.failed(); i++) {
    iovec iov[2];
    const size_t cnt = q_.rx_iov(iov);
    const size_t room = iov[0].iov_len + (cnt > 1 ? iov[1].iov_len : 0);
    const ssize_t n = stream_->recv(iov, cnt);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPROTO)
        q_.fail(stream_->failure());
      else if (errno != EAGAIN)
        q_.fail(fmt::format("receive failed: {}", strerror(errno)));
      break;
    }
    got = true;
    q_.on_received(static_cast<size_t>(n));
    // A short read drained the socket: spare the call that would say EAGAIN.
    if (n == 0 || static_cast<size_t>(n) < room) break;
  }
  close_if_failed();
  return got;
}

void Channel::close() {
  if (closed_ || !fd_) return;
  closed_ = true;
  const auto &term = q_.termreq();
  if (!term.empty()) {
    const iovec iov{const_cast<uint8_t *>(term.data()), term.size()};
    [[maybe_unused]] ssize_t n = stream_->send(&iov, 1);
  }
  stream_->close();
  ::shutdown(fd_.get(), SHUT_RDWR);
}

void Channel::wait(int timeout_ms) {
  pollfd p{fd_.get(), static_cast<short>(POLLIN | (wants_write() ? POLLOUT : 0)), 0};
  if (::poll(&p, 1, timeout_ms) > 0) {
    if (p.revents & POLLOUT) send();
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) receive();
  }
  send(); // what receiving produced (H2CData for an R2T)
}

// Waits are at most 100 ms, so a deadline is noticed soon after it passes.
static int ms_left(Clock::time_point deadline) { return ms_until(deadline, Clock::now(), 100); }

void Channel::initialize(std::chrono::steady_clock::time_point deadline) {
  q_.start();
  send();
  while (!q_.ready()) {
    if (q_.failed()) throw std::runtime_error(q_.failure());
    const int left = ms_left(deadline);
    if (left == 0) throw std::runtime_error("no ICResp from the controller in time");
    wait(left);
  }
}

Completion Channel::execute(Command c, std::chrono::milliseconds timeout) {
  int marker;
  c.cookie = &marker;
  if (!q_.submit(c)) {
    if (q_.failed()) return {&marker, 0, true, 0, c.sqe.opcode()};
    throw std::runtime_error(fmt::format("{}: no free command slot", q_.params().label));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  send();
  for (;;) {
    auto &done = q_.completions();
    for (auto it = done.begin(); it != done.end(); ++it) {
      if (it->cookie == &marker) {
        const Completion r = *it;
        done.erase(it);
        return r;
      }
    }
    const int left = ms_left(deadline);
    if (left == 0) {
      q_.fail(fmt::format("{} timed out after {} ms", nvme::opcode_name(c.sqe.opcode(), q_.params().qid == 0), timeout.count()));
      continue; // fail() produced the completion
    }
    wait(left);
  }
}

} // namespace mpnvme::host
