// The run-time control socket of mpnvme-target (--control PATH): one command
// per line, one reply per command.
//   ana PORT GROUP STATE   change an ANA group's state on a port (AEN sent)
//   port PORT down|up      drop a port's connections and refuse new ones / resume
//   stats                  counters per port
//   help
#pragma once
#include <atomic>
#include <string>
#include <thread>

#include "registry.hpp"

namespace mpnvme::target {

std::string port_stats(Registry &reg);
// Executes one control command; returns the reply (starting "ok" or "error").
std::string control_command(Registry &reg, const std::string &line);

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
