// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/control/control.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <iostream>
#include <poll.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/base/log.hpp"

namespace mpnvme::target {

std::string port_stats(Registry &reg) {
  std::string out;
  for (auto &p : reg.ports()) {
    PortCounters &c = reg.counters(p->cfg.id);
    std::string ana;
    for (auto &[g, st] : p->ana_groups())
      ana += fmt::format(" ana{}={}", g, ana_state_name(st));
    out += fmt::format("port {} {} {}{}: connections {} commands {} rx_bytes {} tx_bytes {} errors {}{}\n", p->cfg.id,
                       transport_name(p->cfg.transport), p->cfg.addr.display(), p->disabled ? " (down)" : "",
                       c.connections.load(), c.commands.load(), c.rx_bytes.load(), c.tx_bytes.load(), c.errors.load(), ana);
  }
  return out;
}

// "backoff": the addresses waiting after failed authentications;
// "backoff forgive ADDR": let one connect again at once.
static std::string backoff_command(Registry &reg, std::istringstream &in) {
  std::string sub, addr;
  in >> sub >> addr;
  if (sub.empty()) {
    std::string out = "ok\n";
    for (const auto &w : reg.backoff().waiting_now(AuthBackoff::Clock::now()))
      out += fmt::format("{} waits {} ms after {} failure(s)\n", w.addr,
                         std::chrono::duration_cast<std::chrono::milliseconds>(w.left).count(), w.failures);
    return out;
  }
  if (sub != "forgive" || addr.empty()) return "error: usage: backoff [forgive ADDR]\n";
  if (!reg.backoff().forgive(addr)) return fmt::format("error: {} is not backing off\n", addr);
  log().warn("{} forgiven its failed authentications by the control socket", addr);
  return "ok\n";
}

std::string control_command(Registry &reg, const std::string &line) {
  std::istringstream in(line);
  std::string cmd;
  in >> cmd;
  if (cmd == "stats") return "ok\n" + port_stats(reg);
  if (cmd == "help" || cmd.empty())
    return "ok\nana PORT GROUP STATE\nport PORT down|up\nstats\nbackoff [forgive ADDR]\n"
           "subsystem add NQN [any-host] [serial=S] [model=M] [NAMESPACE...]\nsubsystem remove NQN\nsubsystems\n"
           "host allow|deny SUBNQN HOSTNQN\nhost key HOSTNQN dhchap_key=SECRET|@FILE [dhchap_ctrl_key=SECRET|@FILE] "
           "[dhchap_hash=H] [dhchap_dhgroup=G]\nhost forget HOSTNQN\nhelp\n";
  if (cmd == "backoff") return backoff_command(reg, in);
  if (auto reply = config_command(reg, cmd, in)) return *reply;
  if (cmd == "port") {
    unsigned id = 0;
    std::string st;
    if (!(in >> id >> st) || (st != "down" && st != "up")) return "error: usage: port PORT down|up\n";
    PortState *p = reg.port(static_cast<uint16_t>(id));
    if (!p) return fmt::format("error: no port {}\n", id);
    p->disabled = st == "down";
    log().warn("port {} {} by the control socket", id, st == "down" ? "disabled" : "enabled");
    reg.wake();
    return "ok\n";
  }
  if (cmd == "ana") {
    unsigned port = 0, grp = 0;
    std::string st;
    if (!(in >> port >> grp >> st)) return "error: usage: ana PORT GROUP STATE\n";
    auto a = parse_ana_state(st);
    if (!a)
      return fmt::format("error: ANA state '{}' (accepted: optimized, non-optimized, inaccessible, persistent-loss, change)\n",
                         st);
    if (!reg.port(static_cast<uint16_t>(port))) return fmt::format("error: no port {}\n", port);
    if (grp == 0 || grp > kMaxAnaGroups) return fmt::format("error: ANA group must be 1..{}\n", kMaxAnaGroups);
    reg.set_ana(static_cast<uint16_t>(port), grp, *a);
    return "ok\n";
  }
  return fmt::format("error: unknown command '{}' (try help)\n", cmd);
}

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

ControlServer::ControlServer(Registry &reg, std::string path) : reg_(reg), path_(std::move(path)) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path_.size() >= sizeof a.sun_path) throw std::invalid_argument(fmt::format("--control {}: path too long", path_));
  std::strcpy(a.sun_path, path_.c_str());
  ::unlink(path_.c_str());
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  // Owner only: the socket admits hosts and sets their keys.
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) < 0 || ::chmod(path_.c_str(), 0600) < 0 ||
      ::listen(fd_, 8) < 0)
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
  for (;;) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[1].revents) return;
    if (!(p[0].revents & POLLIN)) continue;
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    timeval tv{5, 0}; // a silent client must not block the control thread
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string buf;
    char chunk[512];
    ssize_t n;
    while ((n = ::recv(c, chunk, sizeof chunk, 0)) > 0) {
      buf.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = buf.find('\n')) != std::string::npos) {
        const std::string reply = control_command(reg_, buf.substr(0, nl));
        buf.erase(0, nl + 1);
        [[maybe_unused]] ssize_t w = ::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      }
      if (buf.size() > 4096) break;
    }
    ::close(c);
  }
}

} // namespace mpnvme::target
