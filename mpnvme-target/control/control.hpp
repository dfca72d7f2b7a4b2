// SPDX-License-Identifier: GPL-2.0-only
// The run-time control socket of mpnvme-target (--control PATH): one
// command per line, one reply per command, starting "ok" or "error". The
// commands, their usage and their help are one table (command_table.cpp);
// `help` prints it. A reply never carries a word the command gave it (a
// key, a path, an NQN): a refusal names the argument by its place.
#pragma once
#include <string>
#include <thread>
#include <vector>

#include "mpnvme-target/core/registry.hpp"

namespace mpnvme::target {

// What the control socket may do beyond the registry.
struct ControlLimits {
  // Directories whose files and block devices `subsystem add` may serve
  // (--control-ns-dir); none: RAM and null namespaces only.
  std::vector<std::string> namespace_dirs;
};

std::string port_stats(Registry &reg);
// Executes one control command; returns the reply (starting "ok" or "error").
std::string control_command(Registry &reg, const ControlLimits &limits, const std::string &line);

// `mpnvme-target ctl SOCKET COMMAND`: send one command to a running
// target, print the reply. A command of "-" is read from standard input
// (a key then stays out of the process list). Returns 0 when it starts with "ok", 1 when the
// target refused the command, 2 when the socket could not be used.
int control_client(const std::string &path, const std::string &command);

// Serves the socket on a thread of its own, several clients at once: a
// client that is slow to send its line holds up nobody else.
class ControlServer {
public:
  ControlServer(Registry &reg, ControlLimits limits, std::string path);
  ~ControlServer();

private:
  void serve();
  Registry &reg_;
  const ControlLimits limits_;
  std::string path_;
  int fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
};

} // namespace mpnvme::target
