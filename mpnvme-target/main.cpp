// SPDX-License-Identifier: GPL-2.0-only
// mpnvme-target: a user-space NVMe/TCP target over MPTCP (or TCP).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <pthread.h>
#include <sstream>
#include <string_view>
#include <sys/prctl.h>
#include <thread>

#include "lib/base/cli.hpp"
#include "lib/base/log.hpp"
#include "mpnvme-target/control/control.hpp"
#include "mpnvme-target/core/ram_budget.hpp"
#include "mpnvme-target/inline_secrets.hpp"
#include "mpnvme-target/transport/descriptor_room.hpp"
#include "mpnvme-target/transport/reactor.hpp"

using namespace mpnvme;
using namespace mpnvme::target;

namespace {

struct Cli {
  std::string config, job, subnqn, control, log_level = "info", transport = "mptcp", port = kNvmeTcpPort;
  std::vector<std::string> listen, namespaces, allow_hosts, ana;
  std::optional<unsigned> sk_priority, tos;
  uint32_t inline_data_size = 16384, queue_size = 128, maxh2cdata = 128 * 1024;
  unsigned threads = 1, mdts = TargetConfig{}.mdts;
  unsigned max_connections = 4096, max_connections_per_address = 512;
  uint32_t max_subsystems = TargetLimits{}.max_subsystems, max_namespaces = TargetLimits{}.max_namespaces,
           max_controllers = TargetLimits{}.max_controllers;
  std::string max_ram; // SIZE; empty: default_max_ram()
  std::vector<std::string> control_ns_dirs;
  double auth_backoff_s = 1;
  bool no_discovery = false;
  bool discovery_trtype_mptcp = false;
  bool allow_any_host = false;
  bool reflect_tos = false;
  bool poll = false;
  AuthOptions auth;
  bool tls = false; // every port requires TLS
  bool tls_compat = false;
  std::vector<std::string> tls_keys; // HOSTNQN=KEY or HOSTNQN=@FILE
};

// --reflect-tos: Linux reflects the TOS of a connection's SYN on the
// accepted socket (and on MPTCP subflows, which are TCP sockets) when
// net.ipv4.tcp_reflect_tos is set in the network namespace. The target sets
// it for its namespace while it runs and restores the old value at exit.
class ReflectTos {
public:
  explicit ReflectTos(bool on) {
    if (!on) return;
    old_ = read();
    if (old_.empty() || !write("1"))
      throw std::runtime_error("--reflect-tos: cannot set net.ipv4.tcp_reflect_tos in this network namespace (root needed)");
  }
  ~ReflectTos() {
    if (!old_.empty()) write(old_);
  }

private:
  static constexpr const char *kPath = "/proc/sys/net/ipv4/tcp_reflect_tos";
  static std::string read() {
    std::ifstream f(kPath);
    std::string v;
    f >> v;
    return v;
  }
  static bool write(const std::string &v) {
    std::ofstream f(kPath);
    return static_cast<bool>(f << v);
  }
  std::string old_;
};

// --allow-host for subsystems from --config or --job: they admit exactly
// these hosts (and, by finalize, the hosts with keys).
void restrict_hosts(TargetConfig &c, const std::vector<std::string> &hosts) {
  if (hosts.empty()) return;
  for (auto &s : c.subsystems) {
    s.allow_any_host = false;
    s.allowed_hosts = hosts;
  }
}

// --listen: a port per address, numbered after the ones already there.
void add_cli_ports(TargetConfig &c, const Cli &o) {
  const Transport tr = o.transport == "tcp" ? Transport::Tcp : Transport::Mptcp;
  for (const auto &l : o.listen) {
    std::stringstream items(l);
    for (std::string item; std::getline(items, item, ',');) {
      const TlsPort tls = take_tls_suffix(item);
      for (const PathAddr &a : parse_paths(item, o.port, "--listen")) {
        PortConfig p;
        p.id = static_cast<uint16_t>(c.ports.size() + 1);
        p.addr = a;
        p.transport = tr;
        p.tls = tls;
        c.ports.push_back(p);
      }
    }
  }
}

// --ana PORT:GROUP:STATE, each naming a port that exists.
void set_cli_ana(TargetConfig &c, const std::vector<std::string> &ana) {
  for (const auto &a : ana) {
    unsigned port = 0, grp = 0;
    char st[32] = {};
    if (sscanf(a.c_str(), "%u:%u:%31s", &port, &grp, st) != 3 || !parse_ana_state(st) || grp == 0 || grp > 128)
      throw std::invalid_argument(fmt::format("--ana {}: expected PORT:GROUP:STATE with GROUP 1..128 and STATE optimized, "
                                              "non-optimized, inaccessible, persistent-loss or change",
                                              a));
    bool found = false;
    for (auto &p : c.ports)
      if (p.id == port) p.ana[grp] = *parse_ana_state(st), found = true;
    if (!found) throw std::invalid_argument(fmt::format("--ana {}: no port {}", a, port));
  }
}

TargetConfig build_config(const Cli &o) {
  TargetConfig c;
  if (!o.config.empty()) c = load_json_config(o.config);
  if (!o.job.empty()) {
    TargetConfig j = config_from_jobfile(o.job);
    for (auto &s : j.subsystems)
      c.subsystems.push_back(s);
    for (auto &p : j.ports) {
      p.id = static_cast<uint16_t>(c.ports.size() + 1);
      c.ports.push_back(p);
    }
  }
  if (!o.subnqn.empty() || !o.namespaces.empty()) {
    if (o.subnqn.empty()) throw std::invalid_argument("--ns needs --subnqn");
    SubsystemConfig s;
    s.nqn = o.subnqn;
    s.allow_any_host = o.allow_hosts.empty();
    s.allowed_hosts = o.allow_hosts;
    uint32_t next = 1;
    for (const auto &spec : o.namespaces) {
      s.namespaces.push_back(parse_namespace_spec(spec, next, "--ns"));
      next = s.namespaces.back().nsid + 1;
    }
    c.subsystems.push_back(s);
  } else {
    restrict_hosts(c, o.allow_hosts);
  }
  if (o.allow_any_host)
    for (auto &s : c.subsystems) {
      s.allow_any_host = true;
      s.allow_any_host_explicit = true;
      s.allowed_hosts.clear();
    }
  add_cli_ports(c, o);
  for (auto &p : c.ports) {
    if (o.tls) p.tls = TlsPort::Required;
    if (o.sk_priority) p.sk_priority = o.sk_priority;
    if (o.tos) p.tos = o.tos;
    if (!o.listen.empty() || !o.job.empty()) p.inline_data_size = o.inline_data_size;
  }
  set_cli_ana(c, o.ana);
  c.discovery = !o.no_discovery;
  c.discovery_trtype_mptcp = o.discovery_trtype_mptcp;
  c.threads = o.threads;
  c.queue_entries = o.queue_size;
  c.mdts = static_cast<uint8_t>(o.mdts);
  c.maxh2cdata = o.maxh2cdata;
  c.reflect_tos = o.reflect_tos;
  c.poll = o.poll;
  c.auth_backoff_ms = static_cast<uint32_t>(o.auth_backoff_s * 1000 + 0.5);
  add_cli_auth(c.host_auth, o.auth);
  add_cli_tls_keys(c.tls_keys, o.tls_keys);
  c.tls_compat = c.tls_compat || o.tls_compat;
  c.limits.max_subsystems = o.max_subsystems;
  c.limits.max_namespaces = o.max_namespaces;
  c.limits.max_controllers = o.max_controllers;
  c.limits.max_ram = o.max_ram.empty() ? default_max_ram() : parse_size(o.max_ram, "--max-ram");
  finalize(c);
  return c;
}

} // namespace

// What the target holds at most beside connections (lib/config/target_limits.hpp).
static void add_limit_options(CLI::App &app, Cli &o) {
  app.add_option("--max-subsystems", o.max_subsystems,
                 "subsystems held at once (start-up and control socket; the discovery subsystem not counted)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-namespaces", o.max_namespaces, "namespaces per subsystem (nvmet's NVMET_MAX_NAMESPACES)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-controllers", o.max_controllers,
                 fmt::format("controllers per subsystem at once; a Connect over it gets Controller Busy (default: every "
                             "controller ID, 1..{})",
                             kMaxCntlid))
      ->check(CLI::Range(1u, kMaxCntlid))
      ->capture_default_str();
  app.add_option("--max-ram", o.max_ram,
                 fmt::format("SIZE (k, m, g, t) all RAM namespaces may have together (default: half of this machine's "
                             "memory or its cgroup's memory.max, here {} MiB)",
                             default_max_ram() >> 20))
      // Given, it is a size: an empty one is a mistake, not the default.
      ->check([](const std::string &v) { return v.empty() ? std::string("a size is required (k, m, g, t)") : std::string(); });
}

// The target's command line, CLI11; the `ctl` subcommand is added by main.
static void add_target_options(CLI::App &app, Cli &o) {
  app.add_option("-c,--config", o.config, "nvmetcli-style JSON configuration")->check(CLI::ExistingFile);
  app.add_option("-j,--job", o.job, "serve what this fio job file of the engine expects")->check(CLI::ExistingFile);
  app.add_option("-l,--listen", o.listen, "listen address(es): ADDR, ADDR:PORT, [IPV6]:PORT, comma-separated; one port each");
  app.add_option("-p,--port", o.port, "TCP port for --listen entries without one")->capture_default_str();
  app.add_option("-t,--transport", o.transport, "mptcp or tcp")->check(CLI::IsMember({"mptcp", "tcp"}))->capture_default_str();
  app.add_option("-s,--subnqn", o.subnqn, "subsystem NQN served with the --ns namespaces");
  app.add_option("-n,--ns", o.namespaces, "namespace: ram:SIZE, null:SIZE, file:PATH or PATH, [,lba=512|4096][,nsid=N]");
  auto *allow = app.add_option("--allow-host", o.allow_hosts,
                               "host NQN allowed to connect (default: any host, or only the hosts with a key once one has)");
  app.add_flag("--allow-any-host", o.allow_any_host,
               "any host may connect, also when some have keys (hosts without one then connect without authentication)")
      ->excludes(allow);
  app.add_option("--dhchap-key", o.auth.keys,
                 "HOSTNQN=SECRET or HOSTNQN=@FILE: that host must authenticate with DH-HMAC-CHAP (repeatable)");
  app.add_option("--dhchap-ctrl-key", o.auth.ctrl_keys,
                 "HOSTNQN=SECRET or HOSTNQN=@FILE: the controller's secret for that host (bidirectional; repeatable)");
  app.add_option("--dhchap-hash", o.auth.hashes, "hash functions allowed, preferred first (default sha256,sha384,sha512)");
  app.add_option("--dhchap-dhgroup", o.auth.groups,
                 "DH groups allowed, preferred first (default null,ffdhe2048,ffdhe3072,ffdhe4096,ffdhe6144,ffdhe8192)");
  app.add_option("--auth-backoff", o.auth_backoff_s,
                 "SECONDS an address waits after a failed authentication, doubling per failure in a row up to 64 times "
                 "(0: no wait)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_flag("--tls", o.tls,
               "every port requires TLS 1.3 (PSK) before ICReq; ADDR:PORT:tls in --listen for one port, "
               "ADDR:PORT:tls-optional to take plaintext too");
  app.add_option("--tls-key", o.tls_keys,
                 "HOSTNQN=KEY or HOSTNQN=@FILE: the host's configured TLS PSK (NVMeTLSkey-1:NN:BASE64:), repeatable");
  app.add_flag("--tls-compat", o.tls_compat,
               "version 0 PSK identities: derive as libnvme did before RFC 8446's HkdfLabel (nvme-cli --compat)");
  app.add_option("--sk-priority", o.sk_priority, "SO_PRIORITY of every accepted socket");
  auto *tos_opt = app.add_option("--tos", o.tos, "IP TOS / traffic class of every accepted socket")->check(CLI::Range(0, 255));
  app.add_flag("--reflect-tos", o.reflect_tos, "answer each connection with the TOS of the host's SYN (net.ipv4.tcp_reflect_tos)")
      ->excludes(tos_opt);
  app.add_option("--ana", o.ana, "initial ANA state PORT:GROUP:STATE");
  app.add_option("--inline-data-size", o.inline_data_size, "in-capsule data bytes per I/O command")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--queue-size", o.queue_size, "entries per queue (CAP.MQES+1)")
      ->check(CLI::Range(2, 1024))
      ->capture_default_str();
  app.add_option("--mdts", o.mdts, "maximum data transfer size as a power of two of 4 KiB pages")
      ->check(CLI::Range(1, 10))
      ->capture_default_str();
  app.add_option("--maxh2cdata", o.maxh2cdata, "largest H2CData PDU the host may send")
      ->check(CLI::Range(4096, 1 << 24))
      ->capture_default_str();
  app.add_flag("--no-discovery", o.no_discovery, "do not serve the discovery controller");
  app.add_flag("--discovery-trtype-mptcp", o.discovery_trtype_mptcp,
               "list MPTCP ports as trtype 4 in the discovery log (the NVMe-over-MPTCP series' value, reserved in the "
               "specification; default: 3, TCP, what any host can use)");
  app.add_option("--threads", o.threads, "event loop threads")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_flag("--poll", o.poll,
               "event loops spin on their io_uring completion queue instead of sleeping (a core each; lowest latency)");
  app.add_option("--control", o.control,
                 "UNIX socket (mode 0600) for run-time commands: ana, port down/up, stats, backoff, and the "
                 "configuration: subsystem add/remove, subsystems, host allow/deny/key/forget (ctl SOCKET help lists them)");
  app.add_option("--control-ns-dir", o.control_ns_dirs,
                 "DIR whose files and block devices the control socket's subsystem add may serve (repeatable; default "
                 "none: RAM and null namespaces only)");
  app.add_option("--max-connections", o.max_connections,
                 fmt::format("connections held at once, from all hosts; more are closed at accept (lowered to what "
                             "the descriptor limit leaves beside {} kept for control clients and files)",
                             kDescriptorReserve))
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-connections-per-address", o.max_connections_per_address,
                 "connections held at once from one address; more are closed at accept")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  add_limit_options(app, o);
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
}

// What is served, then the ready line scripts wait for.
static void announce(Registry &reg, const TargetConfig &cfg) {
  for (auto &p : reg.ports())
    fmt::print("mpnvme-target: port {} listening on {} ({}{})\n", p->cfg.id, p->cfg.addr.display(),
               transport_name(p->cfg.transport),
               p->cfg.tls == TlsPort::None ? "" : fmt::format(", {}", tls_port_name(p->cfg.tls)));
  for (auto &s : cfg.subsystems) {
    for (auto &n : s.namespaces)
      fmt::print("mpnvme-target: {} nsid {}: {}, {}-byte blocks\n", s.nqn, n.nsid, n.spec(), n.lba);
    fmt::print("mpnvme-target: {} hosts: {}\n", s.nqn,
               s.allow_any_host ? "any" : fmt::format("{}", fmt::join(s.allowed_hosts, ", ")));
    if (s.allow_any_host && (!cfg.host_auth.empty() || !cfg.tls_keys.empty()))
      log().warn("{}: any host may connect (allow_any_host): hosts without a key get in without authentication", s.nqn);
  }
  fmt::print("mpnvme-target: ready\n");
  std::fflush(stdout);
}

// Until SIGINT or SIGTERM; SIGUSR1 prints the port counters meanwhile.
static void wait_for_stop(const sigset_t &sigs, Registry &reg) {
  for (;;) {
    int sig = 0;
    sigwait(&sigs, &sig);
    if (sig != SIGUSR1) return;
    fmt::print("{}", port_stats(reg));
    std::fflush(stdout);
  }
}

// Once everything of the start is open: the connections the descriptor
// limit leaves room for, beside the reserve (descriptor_room.hpp).
static void fit_connections_to_descriptors(ConnectionBudget &budget, unsigned asked) {
  const DescriptorRoom room = descriptor_room_for_connections();
  if (room.connections == 0)
    throw std::runtime_error(fmt::format("the descriptor limit (ulimit -n {}) leaves no room for connections: {} are open "
                                         "and {} are kept for control clients and files; raise it",
                                         room.limit, room.open, kDescriptorReserve));
  if (room.connections >= asked) return;
  budget.lower_total(room.connections);
  log().warn("--max-connections {}: the descriptor limit (ulimit -n {}) leaves room for {} connections beside {} open and "
             "{} kept for control clients and files; holding at most {}",
             asked, room.limit, room.connections, room.open, kDescriptorReserve, room.connections);
}

// Configure, listen, run the event loops until SIGINT/SIGTERM (SIGUSR1
// prints the port counters).
static int serve(const Cli &o, const std::vector<MovedSecret> &moved) {
  raise_descriptor_limit();
  set_log_level(o.log_level);
  warn_inline_secrets(moved);
  if (o.maxh2cdata % 4) {
    log().error("--maxh2cdata {}: must be a multiple of 4", o.maxh2cdata);
    return 2;
  }

  TargetConfig cfg;
  std::unique_ptr<Registry> reg;
  std::vector<Fd> listeners;
  std::unique_ptr<ReflectTos> reflect;
  try {
    reflect = std::make_unique<ReflectTos>(o.reflect_tos);
    cfg = build_config(o);
    close_inline_secrets(moved); // read: the keys are on key pages now
    reg = std::make_unique<Registry>(cfg);
    const TargetLimits &l = cfg.limits;
    log().info("holding at most {} subsystems, {} namespaces and {} controllers each, RAM namespaces of {} ({} taken)",
               l.max_subsystems, l.max_namespaces, l.max_controllers, bytes_text(l.max_ram), bytes_text(reg->ram().held()));
    for (auto &p : reg->ports())
      listeners.push_back(listen_stream(p->cfg.addr, p->cfg.transport));
  } catch (const MptcpUnavailable &e) {
    log().error("{}; use --transport tcp", e.what());
    return 1;
  } catch (const std::exception &e) {
    log().error("{}", e.what());
    return 1;
  }
  // Keys in memory, now or later (the control socket): no core dump may
  // carry them, no other process of this user read them (/proc, ptrace).
  if ((!cfg.host_auth.empty() || !cfg.tls_keys.empty() || !o.control.empty()) && prctl(PR_SET_DUMPABLE, 0) != 0)
    log().warn("cannot turn core dumps off (prctl PR_SET_DUMPABLE): {}", strerror(errno));

  // Signals go to the main thread only (sigwait below).
  sigset_t sigs;
  sigemptyset(&sigs);
  for (int s : {SIGINT, SIGTERM, SIGUSR1})
    sigaddset(&sigs, s);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  std::atomic<bool> stop{false};
  ConnectionBudget budget(o.max_connections, o.max_connections_per_address);
  std::vector<std::unique_ptr<Reactor>> reactors;
  std::unique_ptr<ControlServer> control;
  try {
    for (unsigned i = 0; i < cfg.threads; i++)
      reactors.push_back(std::make_unique<Reactor>(*reg, budget, i, stop));
    for (size_t i = 0; i < listeners.size(); i++)
      reactors[0]->add_listener(listeners[i].get(), *reg->ports()[i], &reactors);
    // Before any thread that may call it (ThreadSanitizer caught the
    // control thread reading it while it was set).
    reg->set_waker([&] {
      for (auto &r : reactors)
        r->wake();
    });
    if (!o.control.empty()) control = std::make_unique<ControlServer>(*reg, ControlLimits{o.control_ns_dirs}, o.control);
    fit_connections_to_descriptors(budget, o.max_connections);
  } catch (const std::exception &e) {
    log().error("{}", e.what());
    return 1;
  }
  std::vector<std::thread> threads;
  for (auto &r : reactors)
    threads.emplace_back([&r] { r->run(); });

  announce(*reg, cfg);
  wait_for_stop(sigs, *reg);
  stop = true;
  for (auto &r : reactors)
    r->wake();
  for (auto &t : threads)
    t.join();
  control.reset();
  fmt::print("{}", port_stats(*reg));
  return 0;
}

int main(int argc, char **argv) {
  CLI::App app{"mpnvme-target: user-space NVMe/TCP target over MPTCP (or TCP)"};
  app.set_version_flag("--version", "mpnvme-target " MPNVME_VERSION);
  Cli o;
  add_target_options(app, o);
  std::string ctl_socket;
  std::vector<std::string> ctl_words;
  CLI::App *ctl = app.add_subcommand("ctl", "send a command to a running target's --control socket and print the answer "
                                            "(ctl SOCKET help lists the commands)");
  ctl->add_option("socket", ctl_socket, "the --control socket of the running target")->required();
  ctl->add_option("command", ctl_words,
                  "ana PORT GROUP STATE | port PORT down|up | stats | backoff | subsystem ... | subsystems | "
                  "host ... | help; - reads the command from standard input")
      ->required();
  std::vector<MovedSecret> moved;
  try {
    moved = move_inline_secrets(argc, argv);
  } catch (const std::exception &e) {
    fmt::print(stderr, "mpnvme-target: {}\n", e.what());
    return 1;
  }
  const int rc = mpnvme::parse_command_line(app, argc, argv);
  if (rc >= 0) return rc;
  if (*ctl) {
    std::string command;
    for (const auto &w : ctl_words)
      command += (command.empty() ? "" : " ") + w;
    return control_client(ctl_socket, command);
  }
  return serve(o, moved);
}
