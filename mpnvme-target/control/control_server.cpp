// SPDX-License-Identifier: GPL-2.0-only
// The control socket's server: one thread, poll(2) over the listener and
// every client, so a client that is slow to finish its line holds up no
// other. Each client gets its replies in order; one that stays silent for
// kClientIdle, or sends a line longer than kMaxLine, is dropped. A client
// that does not read its replies is not read either once kMaxPending of
// them wait (its commands stop, not the target's memory), and is dropped
// when kClientIdle passes without it taking any.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <list>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/base/log.hpp"
#include "mpnvme-target/control/control.hpp"

namespace mpnvme::target {

namespace {
constexpr size_t kMaxClients = 32;
constexpr size_t kMaxLine = 64 * 1024;
constexpr size_t kMaxPending = 1024 * 1024;
constexpr std::chrono::seconds kClientIdle{10};

struct Client {
  int fd;
  std::string in, out;
  bool eof = false; // the client shut its side: close once the replies are out
  std::chrono::steady_clock::time_point deadline;
};
} // namespace

ControlServer::ControlServer(Registry &reg, ControlLimits limits, std::string path)
    : reg_(reg), limits_(std::move(limits)), path_(std::move(path)) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path_.size() >= sizeof a.sun_path) throw std::invalid_argument(fmt::format("--control {}: path too long", path_));
  std::strcpy(a.sun_path, path_.c_str());
  ::unlink(path_.c_str());
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  // Owner only: the socket admits hosts and sets their keys.
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) < 0 || ::chmod(path_.c_str(), 0600) < 0 ||
      ::listen(fd_, 16) < 0)
    throw std::runtime_error(fmt::format("--control {}: {}", path_, strerror(errno)));
  if (pipe2(stop_pipe_, O_CLOEXEC) < 0) throw std::runtime_error(fmt::format("pipe: {}", strerror(errno)));
  thread_ = std::thread([this] { serve(); });
}

ControlServer::~ControlServer() {
  [[maybe_unused]] ssize_t n = ::write(stop_pipe_[1], "x", 1);
  thread_.join();
  ::close(fd_);
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
  ::unlink(path_.c_str());
}

void ControlServer::serve() {
  std::list<Client> clients;
  std::vector<pollfd> fds;
  for (;;) {
    fds.assign({{stop_pipe_[0], POLLIN, 0}, {fd_, static_cast<short>(clients.size() < kMaxClients ? POLLIN : 0), 0}});
    for (const Client &c : clients)
      fds.push_back(
          {c.fd, static_cast<short>((c.eof || c.out.size() >= kMaxPending ? 0 : POLLIN) | (c.out.empty() ? 0 : POLLOUT)), 0});
    if (::poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) break;
    if (fds[0].revents) break;
    const auto now = std::chrono::steady_clock::now();
    size_t i = 2; // fds[i] is the i-2nd client's, as the list was when polled
    for (auto it = clients.begin(); it != clients.end() && i < fds.size(); i++) {
      Client &c = *it;
      bool drop = false;
      if (fds[i].revents & POLLIN) {
        char chunk[4096];
        const ssize_t n = ::recv(c.fd, chunk, sizeof chunk, 0);
        if (n > 0) {
          c.in.append(chunk, static_cast<size_t>(n));
          c.deadline = now + kClientIdle;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          c.eof = true;
        }
        if (c.in.size() > kMaxLine && c.in.find('\n') == std::string::npos) {
          c.out += "error: a line longer than 64 KiB\n";
          c.in.clear();
          c.eof = true;
        }
      }
      for (size_t nl; c.out.size() < kMaxPending && (nl = c.in.find('\n')) != std::string::npos;) {
        c.out += control_command(reg_, limits_, c.in.substr(0, nl));
        c.in.erase(0, nl + 1);
      }
      if (!c.out.empty()) {
        const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (n > 0) {
          c.out.erase(0, static_cast<size_t>(n));
          c.deadline = now + kClientIdle;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR)
          drop = true;
      }
      drop |= (c.eof && c.out.empty()) || (fds[i].revents & (POLLERR | POLLHUP) && c.out.empty()) || now > c.deadline;
      if (drop) {
        ::close(c.fd);
        it = clients.erase(it);
      } else {
        ++it;
      }
    }
    if (fds[1].revents & POLLIN)
      for (int c; clients.size() < kMaxClients && (c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;)
        clients.push_back({c, {}, {}, false, now + kClientIdle});
  }
  for (Client &c : clients)
    ::close(c.fd);
}

} // namespace mpnvme::target
