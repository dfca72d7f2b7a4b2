// SPDX-License-Identifier: GPL-2.0-only
#include "options.hpp"

#include <fmt/format.h>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <utility>

#include "../../lib/log.hpp"

namespace mpnvme::host {

namespace {

// The values of an enumerated option; the first is the default.
template <typename E> using Choices = std::initializer_list<std::pair<const char *, E>>;

constexpr Choices<Transport> kTransports = {{"mptcp", Transport::Mptcp}, {"tcp", Transport::Tcp}};
constexpr Choices<IoPolicy> kIoPolicies = {{"numa", IoPolicy::Numa},
                                           {"round-robin", IoPolicy::RoundRobin},
                                           {"queue-depth", IoPolicy::QueueDepth},
                                           {"service-time", IoPolicy::ServiceTime}};
constexpr Choices<TrimMode> kTrimModes = {{"dsm", TrimMode::Dsm}, {"write_zeroes", TrimMode::WriteZeroes}};
constexpr Choices<PollMode> kPollModes = {{"hybrid", PollMode::Hybrid}, {"block", PollMode::Block}, {"busy", PollMode::Busy}};

// A string option as fio stored it. A job file that reads it from an unset
// environment variable leaves "${VAR}" here (fio keeps it literally): say
// which variable, instead of a parse error about the value.
std::string str(const char *option, const char *s) {
  const std::string v = s ? s : "";
  if (const size_t at = v.find("${"); at != std::string::npos) {
    const size_t end = v.find('}', at);
    const std::string var = v.substr(at + 2, end == std::string::npos ? std::string::npos : end - at - 2);
    throw std::invalid_argument(
        fmt::format("{}={}: the environment variable {} is not set (the job file reads {} from it)", option, v, var, option));
  }
  return v;
}

std::invalid_argument bad(const std::string &opt, const std::string &value, const std::string &accepted) {
  return std::invalid_argument(fmt::format("{}={}: invalid value (accepted: {})", opt, value, accepted));
}

// `value` of `option` as one of `choices` (empty: the default); the error
// lists the accepted names from the same table.
template <typename E> E choose(const char *option, const std::string &value, Choices<E> choices) {
  if (value.empty()) return choices.begin()->second;
  std::string accepted;
  for (const auto &[name, v] : choices) {
    if (value == name) return v;
    accepted += accepted.empty() ? name : std::string(", ") + name;
  }
  throw bad(option, value, accepted);
}

// A list aligned with the paths: empty, one entry for all, or one per path.
std::vector<std::string> per_path(const char *option, const std::string &value, size_t paths) {
  std::vector<std::string> v;
  if (value.empty()) return std::vector<std::string>(paths);
  size_t start = 0;
  for (;;) {
    const size_t comma = value.find(',', start);
    v.push_back(value.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (v.size() == 1) return std::vector<std::string>(paths, v[0]);
  if (v.size() != paths)
    throw std::invalid_argument(fmt::format("{}={}: {} entries for {} traddr paths (give one for all paths, or one per path)",
                                            option, value, v.size(), paths));
  return v;
}

// Seconds with an optional fraction ("0.5", "10"); `allow_off` also takes
// -1 and "off" (nullopt: forever / disabled).
std::optional<std::chrono::milliseconds> seconds(const char *option, const std::string &value, bool allow_off,
                                                 const char *accepted) {
  if (allow_off && (value == "-1" || value == "off")) return std::nullopt;
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(value, &used);
  } catch (...) {
  }
  if (used != value.size() || !(v >= 0) || v > 86400 * 365) throw bad(option, value, accepted);
  return std::chrono::milliseconds(static_cast<long>(v * 1000 + 0.5));
}

} // namespace

const char *iopolicy_name(IoPolicy p) {
  for (const auto &[name, v] : kIoPolicies)
    if (v == p) return name;
  return "?";
}

EngineOptions parse_engine_options(const mpnvme_opts &o) {
  EngineOptions e;
  const std::string level = str("log_level", o.log_level);
  if (!level.empty() && !set_log_level(level)) throw bad("log_level", level, "trace, debug, info, warn, error, off");

  const std::string port = o.trsvcid && *o.trsvcid ? o.trsvcid : kNvmeTcpPort;
  if (!valid_port(port)) throw bad("trsvcid", port, "a port number 1..65535");
  e.paths = parse_paths(str("traddr", o.traddr), port, "traddr");

  e.transport = choose("transport", str("transport", o.transport), kTransports);

  e.subnqn = str("subnqn", o.subnqn);
  if (e.subnqn.empty()) throw std::invalid_argument("subnqn: required (the NVMe subsystem NQN to connect to)");
  if (e.subnqn.size() > 223) throw std::invalid_argument("subnqn: longer than 223 bytes");
  e.host = resolve_host_identity(str("hostnqn", o.hostnqn), str("hostid", o.hostid));

  if (o.nsid == 0 || o.nsid == 0xffffffffu) throw bad("nsid", std::to_string(o.nsid), "a namespace id 1..4294967294");
  e.nsid = o.nsid;
  e.host_traddr = per_path("host_traddr", str("host_traddr", o.host_traddr), e.paths.size());
  e.host_iface = per_path("host_iface", str("host_iface", o.host_iface), e.paths.size());

  if (o.queue_size == 1 || o.queue_size > kMaxQueueSize)
    throw bad("queue_size", std::to_string(o.queue_size), fmt::format("0 (from iodepth) or 2..{}", kMaxQueueSize));
  e.queue_size = o.queue_size;
  if (o.kato > 3600) throw bad("kato", std::to_string(o.kato), "seconds 0..3600 (0 disables keep-alive)");
  e.kato_ms = o.kato * 1000;
  e.digests = {o.hdr_digest != 0, o.data_digest != 0};
  e.sk_priority = PriorityPairs::parse(str("sk_priority", o.sk_priority), "sk_priority", 0x7fffffff);
  e.tos = PriorityPairs::parse(str("tos", o.tos), "tos", 255);

  e.iopolicy = choose("iopolicy", str("iopolicy", o.iopolicy), kIoPolicies);
  e.trim_mode = choose("trim_mode", str("trim_mode", o.trim_mode), kTrimModes);
  e.poll = choose("poll", str("poll", o.poll), kPollModes);

  e.disable_sqflow = o.disable_sqflow != 0;
  if (o.connect_timeout == 0 || o.connect_timeout > 600)
    throw bad("connect_timeout", std::to_string(o.connect_timeout), "seconds 1..600");
  e.connect_timeout = std::chrono::seconds(o.connect_timeout);

  if (o.io_timeout < 100 || o.io_timeout > 3600000)
    throw bad("io_timeout", std::to_string(o.io_timeout), "milliseconds 100..3600000");
  e.recovery.io_timeout = std::chrono::milliseconds(o.io_timeout);
  const std::string delay = str("reconnect_delay", o.reconnect_delay);
  e.recovery.reconnect_delay = delay.empty() ? std::chrono::seconds(10)
                                             : *seconds("reconnect_delay", delay, false, "seconds, fractions allowed (e.g. 0.5)");
  if (e.recovery.reconnect_delay < std::chrono::milliseconds(100))
    throw bad("reconnect_delay", delay, "seconds, at least 0.1 (fractions allowed)");
  const std::string loss = str("ctrl_loss_tmo", o.ctrl_loss_tmo);
  if (!loss.empty()) e.recovery.ctrl_loss_tmo = seconds("ctrl_loss_tmo", loss, true, "seconds, or -1 to reconnect forever");
  const std::string fast = str("fast_io_fail_tmo", o.fast_io_fail_tmo);
  if (!fast.empty()) e.recovery.fast_io_fail_tmo = seconds("fast_io_fail_tmo", fast, true, "seconds, or off (-1)");
  if (o.max_retries > 100) throw bad("max_retries", std::to_string(o.max_retries), "0..100");
  e.max_retries = o.max_retries;
  e.path_stats = str("path_stats", o.path_stats);
  if (o.mptcp_join_wait > 10000) throw bad("mptcp_join_wait", std::to_string(o.mptcp_join_wait), "milliseconds 0..10000");
  e.mptcp_join_wait = std::chrono::milliseconds(o.mptcp_join_wait);
  e.fabrics_disconnect = o.fabrics_disconnect != 0;
  return e;
}

} // namespace mpnvme::host
