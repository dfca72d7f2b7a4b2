#include "options.hpp"

#include <fmt/format.h>
#include <stdexcept>

#include "../../lib/log.hpp"

namespace mpnvme::host {

const char *iopolicy_name(IoPolicy p) {
  switch (p) {
  case IoPolicy::Numa: return "numa";
  case IoPolicy::RoundRobin: return "round-robin";
  case IoPolicy::QueueDepth: return "queue-depth";
  }
  return "?";
}

static std::string str(const char *s) { return s ? s : ""; }

static std::invalid_argument bad(const std::string &opt, const std::string &value, const std::string &accepted) {
  return std::invalid_argument(fmt::format("{}={}: invalid value (accepted: {})", opt, value, accepted));
}

EngineOptions parse_engine_options(const mpnvme_opts &o) {
  EngineOptions e;
  const std::string level = str(o.log_level);
  if (!level.empty() && !set_log_level(level)) throw bad("log_level", level, "trace, debug, info, warn, error, off");

  const std::string port = o.trsvcid && *o.trsvcid ? o.trsvcid : "4420";
  if (!valid_port(port)) throw bad("trsvcid", port, "a port number 1..65535");
  e.paths = parse_paths(str(o.traddr), port, "traddr");

  const std::string tr = str(o.transport);
  if (tr.empty() || tr == "mptcp")
    e.transport = Transport::Mptcp;
  else if (tr == "tcp")
    e.transport = Transport::Tcp;
  else
    throw bad("transport", tr, "mptcp, tcp");

  e.subnqn = str(o.subnqn);
  if (e.subnqn.empty()) throw std::invalid_argument("subnqn: required (the NVMe subsystem NQN to connect to)");
  if (e.subnqn.size() > 223) throw std::invalid_argument("subnqn: longer than 223 bytes");
  e.host = resolve_host_identity(str(o.hostnqn), str(o.hostid));

  if (o.nsid == 0 || o.nsid == 0xffffffffu) throw bad("nsid", std::to_string(o.nsid), "a namespace id 1..4294967294");
  e.nsid = o.nsid;
  e.host_traddr = str(o.host_traddr);
  e.host_iface = str(o.host_iface);

  if (o.queue_size == 1 || o.queue_size > kMaxQueueSize)
    throw bad("queue_size", std::to_string(o.queue_size), fmt::format("0 (from iodepth) or 2..{}", kMaxQueueSize));
  e.queue_size = o.queue_size;
  if (o.kato > 3600) throw bad("kato", std::to_string(o.kato), "seconds 0..3600 (0 disables keep-alive)");
  e.kato_ms = o.kato * 1000;
  e.digests = {o.hdr_digest != 0, o.data_digest != 0};
  e.sk_priority = PriorityPairs::parse(str(o.sk_priority), "sk_priority", 0x7fffffff);
  e.tos = PriorityPairs::parse(str(o.tos), "tos", 255);

  const std::string pol = str(o.iopolicy);
  if (pol.empty() || pol == "numa")
    e.iopolicy = IoPolicy::Numa;
  else if (pol == "round-robin")
    e.iopolicy = IoPolicy::RoundRobin;
  else if (pol == "queue-depth")
    e.iopolicy = IoPolicy::QueueDepth;
  else
    throw bad("iopolicy", pol, "numa, round-robin, queue-depth");

  const std::string tm = str(o.trim_mode);
  if (tm.empty() || tm == "dsm")
    e.trim_mode = TrimMode::Dsm;
  else if (tm == "write_zeroes")
    e.trim_mode = TrimMode::WriteZeroes;
  else
    throw bad("trim_mode", tm, "dsm, write_zeroes");

  e.disable_sqflow = o.disable_sqflow != 0;
  if (o.connect_timeout == 0 || o.connect_timeout > 600)
    throw bad("connect_timeout", std::to_string(o.connect_timeout), "seconds 1..600");
  e.connect_timeout = std::chrono::seconds(o.connect_timeout);
  return e;
}

} // namespace mpnvme::host
