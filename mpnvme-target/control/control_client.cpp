// SPDX-License-Identifier: GPL-2.0-only
// `mpnvme-target ctl SOCKET COMMAND`: one command to a running target's
// control socket, its reply printed.
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <iostream>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "mpnvme-target/control/control.hpp"

namespace mpnvme::target {

int control_client(const std::string &path, const std::string &given) {
  std::string command = given;
  if (given == "-" && !std::getline(std::cin, command)) {
    fmt::print(stderr, "mpnvme-target ctl: no command on standard input\n");
    return 2;
  }
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) {
    fmt::print(stderr, "mpnvme-target ctl: {}: path too long\n", path);
    return 2;
  }
  std::strcpy(a.sun_path, path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) < 0) {
    fmt::print(stderr, "mpnvme-target ctl: {}: {} (is a target running with --control {}?)\n", path, strerror(errno), path);
    if (fd >= 0) ::close(fd);
    return 2;
  }
  const std::string line = command + "\n";
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string reply;
  if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size())) {
    ::shutdown(fd, SHUT_WR); // the target answers, then sees the end and closes
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
      reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (reply.empty()) {
    fmt::print(stderr, "mpnvme-target ctl: {}: no answer\n", path);
    return 2;
  }
  fmt::print("{}", reply);
  return reply.rfind("ok", 0) == 0 ? 0 : 1;
}

} // namespace mpnvme::target
