// SPDX-License-Identifier: GPL-2.0-only
// The run-time control socket of mpnvme-target (--control PATH): one command
// per line, one reply per command.
//   ana PORT GROUP STATE   change an ANA group's state on a port (AEN sent)
//   port PORT down|up      drop a port's connections and refuse new ones / resume
//   stats                  counters per port
//   backoff [forgive ADDR] addresses backing off after failed authentications
//   subsystem add|remove, subsystems, host allow|deny|key|forget:
//                          the configuration at run time (control_config.cpp)
//   help
#pragma once
#include <atomic>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "mpnvme-target/core/registry.hpp"

namespace mpnvme::target {

std::string port_stats(Registry &reg);
// The configuration commands (subsystem, subsystems, host); nullopt when
// `cmd` is none of them.
std::optional<std::string> config_command(Registry &reg, const std::string &cmd, std::istringstream &in);
// Executes one control command; returns the reply (starting "ok" or "error").
std::string control_command(Registry &reg, const std::string &line);

// `mpnvme-target ctl SOCKET COMMAND`: send one command to a running
// target, print the reply. A command of "-" is read from standard input
// (a key then stays out of the process list). Returns 0 when it starts with "ok", 1 when the
// target refused the command, 2 when the socket could not be used.
int control_client(const std::string &path, const std::string &command);

class ControlServer {
public:
  ControlServer(Registry &reg, std::string path);
  ~ControlServer();

private:
  void serve();
  Registry &reg_;
  std::string path_;
  int fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
};

} // namespace mpnvme::target
