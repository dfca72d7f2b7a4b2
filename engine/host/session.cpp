// SPDX-License-Identifier: GPL-2.0-only
// Session: connecting a job's paths, checking that they reach one namespace,
// and what the job reports about them at the end.
#include "engine/host/session.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/host/controller_registry.hpp"
#include "engine/host/mptcp_advice.hpp"
#include "lib/base/log.hpp"
#include "lib/net/netstat.hpp"

namespace mpnvme::host {

Session::Session(EngineOptions opts, const mpnvme_job &job)
    : o_(std::move(opts)), job_(job), job_name_(job.name ? job.name : ""), selector_(o_.iopolicy) {
  job_.name = job_name_.c_str();
}

Session::~Session() {
  if (opened_) {
    try {
      report_paths();
    } catch (const std::exception &e) {
      log().warn("job {}: path report: {}", job_.name, e.what());
    }
  }
  for (Path &p : paths_) {
    if (p.ch && o_.fabrics_disconnect && !p.ch->queue().failed()) {
      // Opt-in: the Linux host never sends it, and the Linux target answers
      // Invalid Opcode.
      Command c;
      c.sqe = nvme::make_disconnect();
      p.ch->queue().expect_close();
      const Completion r = p.ch->execute(c, std::chrono::milliseconds(2000));
      log().debug("{}: Disconnect: {}", p.label, r.aborted ? p.ch->queue().failure() : nvme::status_string(r.status));
    }
    p.ch.reset();
    if (p.att) p.ctrl->detach(p.att);
  }
  paths_.clear(); // the last job of a controller shuts it down (CC.SHN)
  if (epfd_ >= 0) ::close(epfd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

ControllerConfig Session::controller_config(size_t path) const {
  ControllerConfig c;
  c.path = o_.paths[path];
  c.socket.transport = o_.transport;
  c.socket.host_traddr = o_.host_traddr[path];
  c.socket.host_iface = o_.host_iface[path];
  c.socket.connect_timeout = o_.connect_timeout;
  c.sk_priority = o_.sk_priority;
  c.tos = o_.tos;
  c.subnqn = o_.subnqn;
  c.host = o_.host;
  c.kato_ms = o_.kato_ms;
  c.digests = o_.digests;
  c.disable_sqflow = o_.disable_sqflow;
  c.fabrics_disconnect = o_.fabrics_disconnect;
  c.admin_timeout = std::max(o_.connect_timeout, std::chrono::milliseconds(2000));
  c.recovery = o_.recovery;
  c.mptcp_join_wait = o_.mptcp_join_wait;
  c.auth = o_.auth;
  c.tls = o_.tls;
  c.queues_wanted = static_cast<uint16_t>(std::clamp(std::max(job_.job_number, 1u) * o_.nr_io_queues, 64u, 1024u));
  return c;
}

void Session::probe() {
  std::string reasons;
  for (size_t i = 0; i < o_.paths.size(); i++) {
    ControllerConfig cfg = controller_config(i);
    cfg.size_probe = true;
    HostController c(cfg);
    if (!c.connect_first()) {
      reasons += fmt::format("{}{}", reasons.empty() ? "" : "; ", c.reason());
      continue;
    }
    const NamespaceInfo info = c.identify_namespace(o_.nsid);
    size_bytes_ = info.ns.nsze * info.ns.lba_bytes;
    return;
  }
  throw std::runtime_error(fmt::format("no path could be connected: {}", reasons));
}

void Session::check_geometry(const NamespaceInfo &info) const {
  const uint32_t lba = info.ns.lba_bytes;
  const uint64_t mdts = info.ctrl.max_transfer_bytes();
  static const char *names[] = {"read", "write", "trim"};
  for (int d = 0; d < 3; d++) {
    if (d == 2 && !job_.uses_trim) continue;
    for (uint64_t bs : {job_.min_bs[d], job_.max_bs[d]}) {
      if (bs == 0) continue;
      if (bs % lba)
        throw std::invalid_argument(fmt::format("bs: {} block size {} is not a multiple of the namespace LBA size {} (nsid {})",
                                                names[d], bs, lba, o_.nsid));
      if (d != 2 && mdts && bs > mdts)
        throw std::invalid_argument(fmt::format("bs: {} block size {} exceeds the controller's maximum data transfer size "
                                                "(MDTS) of {} bytes; use bs<={}",
                                                names[d], bs, mdts, mdts));
      if (bs / lba > 65536)
        throw std::invalid_argument(fmt::format("bs: {} block size {} exceeds 65536 logical blocks per command", names[d], bs));
    }
  }
  if (job_.uses_trim) {
    const bool dsm = o_.trim_mode == TrimMode::Dsm;
    if (dsm ? !info.ctrl.dsm() : !info.ctrl.write_zeroes())
      throw std::invalid_argument(fmt::format("trim_mode={}: the controller does not support {} (ONCS {:#x})",
                                              dsm ? "dsm" : "write_zeroes", dsm ? "Dataset Management" : "Write Zeroes",
                                              info.ctrl.oncs));
  }
}

// Linux joins controllers into one multipath namespace only when the
// subsystem and every namespace identifier match; so does the engine.
void Session::check_same_namespace(const NamespaceInfo &ref, size_t ref_path, const NamespaceInfo &other, size_t path) const {
  const std::string a = o_.paths[ref_path].display(), b = o_.paths[path].display();
  if (!(other.ns.ids == ref.ns.ids))
    throw std::invalid_argument(fmt::format("traddr: paths {} and {} reach different namespaces as nsid {}: {} vs {}", a, b,
                                            o_.nsid, ref.ns.ids.describe(), other.ns.ids.describe()));
  if (!ref.ns.ids.any())
    log().warn("nsid {} has no namespace identifiers (NGUID, EUI-64, UUID): paths {} and {} cannot be proven to reach the same "
               "namespace",
               o_.nsid, a, b);
  if (other.ns.nsze != ref.ns.nsze || other.ns.lba_bytes != ref.ns.lba_bytes)
    throw std::invalid_argument(fmt::format("traddr: paths {} and {} report nsid {} with different sizes ({} vs {} blocks of {} "
                                            "vs {} bytes)",
                                            a, b, o_.nsid, ref.ns.nsze, other.ns.nsze, ref.ns.lba_bytes, other.ns.lba_bytes));
}

// Entries of the job's I/O queues: queue_size=, or iodepth bounded by the
// controller's MQES.
unsigned Session::queue_slots(uint32_t mqes) const {
  unsigned slots = o_.queue_size;
  if (!slots) {
    slots = std::max(job_.iodepth, 2u);
    if (slots > mqes) {
      log().warn("iodepth={} exceeds the controller's queue size (CAP.MQES+1 = {}): at most {} commands in flight per path",
                 job_.iodepth, mqes, mqes);
      slots = mqes;
    }
  } else if (slots < job_.iodepth) {
    log().warn("queue_size={} is below iodepth={}: at most {} commands in flight per path", slots, job_.iodepth, slots);
  }
  return std::min(slots, kMaxQueueSize);
}

void Session::open() {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (wake_fd_ < 0 || epfd_ < 0) throw std::runtime_error(fmt::format("eventfd/epoll: {}", strerror(errno)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = UINT64_MAX; // the wake-up eventfd
  epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_fd_, &ev);

  const size_t routes = o_.paths.size();
  paths_.resize(routes * o_.nr_io_queues);
  for (size_t e = 0; e < paths_.size(); e++) {
    paths_[e].route = e % routes;
    paths_[e].ctrl = e < routes ? acquire_controller(controller_config(e)) : paths_[e % routes].ctrl;
  }

  // The first live path defines the namespace; every other live path must
  // reach the same one. Paths still connecting are checked when they come.
  std::optional<NamespaceInfo> ref;
  std::vector<std::optional<NamespaceInfo>> identified(routes);
  size_t ref_path = 0;
  std::string down;
  for (size_t i = 0; i < routes; i++) {
    HostController &c = *paths_[i].ctrl;
    if (c.state() != CtrlState::Live) {
      down += fmt::format("{}{}: {}", down.empty() ? "" : "; ", c.label(), c.reason());
      continue;
    }
    const NamespaceInfo &info = identified[i].emplace(c.identify_namespace(o_.nsid));
    if (!ref) {
      check_geometry(info);
      ref = info;
      ref_path = i;
    } else {
      check_same_namespace(*ref, ref_path, info, i);
    }
  }
  if (!ref) throw std::runtime_error(fmt::format("no path could be connected: {}", down));
  lba_bytes_ = ref->ns.lba_bytes;
  lba_shift_ = static_cast<uint32_t>(__builtin_ctz(lba_bytes_));
  size_bytes_ = ref->ns.nsze * lba_bytes_;

  const unsigned slots = queue_slots(ref->mqes);

  // The job's I/O queue ids follow its fio job number where the controller
  // has them free (see fio-mpnvme(7), QUEUE IDS).
  const unsigned first_qid = (std::max(job_.job_number, 1u) - 1) * o_.nr_io_queues + 1;
  const int node = current_numa_node();
  const auto now = Clock::now();
  for (size_t e = 0; e < paths_.size(); e++) {
    Path &p = paths_[e];
    const size_t i = p.route;
    const auto qid = static_cast<uint16_t>(first_qid + e / routes);
    p.att = p.ctrl->attach(qid, static_cast<uint16_t>(slots), o_.nsid, ref->ns.ids, wake_fd_,
                           identified[i] ? &*identified[i] : nullptr);
    p.label = fmt::format("{} qid {}", p.ctrl->label(), p.att->qid);
    p.stats.path = o_.paths[i].display();
    p.down_since = now;
    adopt(e, now);
    if (p.ch) {
      const std::string ifname = o_.host_iface[i].empty() ? interface_of_socket(p.ch->fd()) : o_.host_iface[i];
      p.numa_distance = numa_distance(node, interface_numa_node(ifname));
      report_transport(p);
    } else {
      log().warn("job {} {}: not connected yet ({}); it joins when it connects", job_.name, p.label, p.ctrl->reason());
    }
  }
  views_.resize(routes);
  requests_.resize(std::max(job_.iodepth, 1u));
  for (Request &r : requests_)
    r.cmd.cookie = &r;
  dsm_.resize(requests_.size());
  ready_.reserve(requests_.size() * 2);
  if (paths_.size() > 1)
    log().info("job {}: mpnvme {}, {} path(s) x {} I/O queue(s), iopolicy {}: {}", job_.name, MPNVME_VERSION, routes,
               o_.nr_io_queues, iopolicy_name(o_.iopolicy), path_states());
  opened_ = true;
}

std::string Session::path_states() const {
  std::string s;
  for (const Path &p : paths_) {
    const std::string why = p.ctrl->state() == CtrlState::Live ? "" : fmt::format(" ({})", p.ctrl->reason());
    s += fmt::format("{}{}: {}{}", s.empty() ? "" : "; ", p.label.empty() ? p.ctrl->label() : p.label,
                     p.ctrl->state() == CtrlState::Live && !usable(p) ? fmt::format("ANA {}", ana_state_name(p.att->ana.load()))
                                                                      : std::string(ctrl_state_name(p.ctrl->state())),
                     why);
  }
  return s;
}

void Session::report_transport(const Path &p) const {
  const MptcpState st = query_mptcp(p.ch->fd());
  if (o_.transport == Transport::Mptcp && !st.mptcp) {
    static std::atomic<bool> once{false};
    if (!once.exchange(true))
      log().warn("{}: MPTCP fell back to plain TCP ({})", p.label, fallback_advice(netstat_counter("MPTcpExt", "Blackhole")));
  }
  const ByteStream &bs = p.ch->stream();
  log().info("job {} {}: transport in effect: {}{}{}", job_.name, p.label, st.mptcp ? "MPTCP" : "TCP",
             st.mptcp ? fmt::format(", {} additional subflow(s)", st.subflows) : "",
             bs.cipher().empty() ? "" : fmt::format(", TLS 1.3 {} ({})", bs.cipher(), bs.mode()));
  if (!st.mptcp) return;
  // Linux MPTCP: once IP_TOS is set, subflow packets lose SO_PRIORITY.
  for (uint16_t q : {uint16_t(0), p.att->qid}) {
    const auto prio = o_.sk_priority.for_queue(q), tos = o_.tos.for_queue(q);
    if (prio && *prio && tos) {
      static std::atomic<bool> once{false};
      if (!once.exchange(true))
        log().warn("{}: sk_priority={} and tos={:#x} on one MPTCP socket (qid {}): Linux MPTCP subflows lose SO_PRIORITY "
                   "when IP_TOS is set, so their packets leave with priority 0 (see fio-mpnvme(7), PRIORITY PAIRS)",
                   p.ctrl->label(), *prio, *tos, q);
    }
  }
}

// At job end, when no MPTCP queue of the job has a second subflow
// although there is more than one way to the target (several traddr paths,
// or several usable addresses here): MPTCP ran as plain TCP, and the user
// should hear which setting stopped the joins. Once per process, as the
// fallback warning.
void Session::warn_one_subflow(const MptcpState &st, int fd) const {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  const int family = ::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &len) == 0 ? local.ss_family : AF_INET;
  const unsigned addresses = usable_local_addresses(family);
  if (o_.paths.size() < 2 && addresses < 2) return;
  static std::atomic<bool> once{false};
  if (once.exchange(true)) return;
  log().warn("job {}: MPTCP used one subflow per connection ({} path(s), {} local address(es)): {}", job_.name, o_.paths.size(),
             addresses, one_subflow_advice(st));
}

// At job end: per path, what it carried and how it fared, as a log line
// each (always shown) and, with path_stats=FILE, as one JSON line.
void Session::report_paths() {
  const auto now = Clock::now();
  nlohmann::json paths = nlohmann::json::array();
  std::optional<std::pair<MptcpState, int>> single; // an MPTCP queue's state and fd, while none had a join
  bool joined = false;
  for (Path &p : paths_) {
    PathStats &s = p.stats;
    if (!p.up) s.down_ns += static_cast<uint64_t>(std::chrono::nanoseconds(now - p.down_since).count());
    if (p.ch) {
      const MptcpState st = query_mptcp(p.ch->fd());
      s.subflows = st.mptcp ? st.subflows + 1 : 0;
      s.transport = st.mptcp ? "mptcp" : o_.transport == Transport::Mptcp ? "mptcp (fell back to tcp)" : "tcp";
      if (!p.ch->stream().cipher().empty()) {
        s.tls_mode = p.ch->stream().mode();
        s.tls_cipher = p.ch->stream().cipher();
      }
      if (st.mptcp) log().info("job {} {}: MPTCP used {} subflow(s)", job_.name, p.label, st.subflows + 1);
      joined |= st.mptcp && st.subflows > 0;
      if (st.mptcp && !single) single.emplace(st, p.ch->fd());
    } else if (s.transport.empty()) {
      s.transport = transport_name(o_.transport);
    }
    const double p50 = static_cast<double>(s.latency.quantile(0.5)) / 1000,
                 p99 = static_cast<double>(s.latency.quantile(0.99)) / 1000;
    print_report(fmt::format("job {} {}: {} commands, {:.1f} MiB read, {:.1f} MiB written, in flight max {}, failovers {}, "
                             "reconnects {}, down {:.1f} s, latency p50 {:.0f} us p99 {:.0f} us{}",
                             job_.name, p.label.empty() ? p.ctrl->label() : p.label, s.commands, s.bytes_read / 1048576.0,
                             s.bytes_written / 1048576.0, s.inflight_max, s.failovers, s.reconnects, s.down_ns / 1e9, p50, p99,
                             s.subflows ? fmt::format(", {} MPTCP subflows", s.subflows) : ""));
    paths.push_back(
        {{"path", s.path},
         {"qid", p.att ? p.att->qid : 0},
         {"transport", s.transport},
         {"subflows", s.subflows},
         {"tls", s.tls_mode.empty() ? nlohmann::json(nullptr) : nlohmann::json{{"mode", s.tls_mode}, {"cipher", s.tls_cipher}}},
         {"commands", s.commands},
         {"bytes_read", s.bytes_read},
         {"bytes_written", s.bytes_written},
         {"inflight_max", s.inflight_max},
         {"failovers", s.failovers},
         {"reconnects", s.reconnects},
         {"down_s", s.down_ns / 1e9},
         {"latency_us", {{"p50", p50}, {"p99", p99}, {"p999", s.latency.quantile(0.999) / 1000.0}}},
         {"state", ctrl_state_name(p.ctrl->state())}});
  }
  if (single && !joined) warn_one_subflow(single->first, single->second);
  if (o_.path_stats.empty()) return;
  const nlohmann::json line = {
      {"job", job_name_}, {"job_number", job_.job_number}, {"iopolicy", iopolicy_name(o_.iopolicy)}, {"paths", paths}};
  const std::string text = line.dump() + "\n";
  // One write per job with O_APPEND: jobs in threads and processes share the file.
  const int fd = ::open(o_.path_stats.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    log().error("path_stats={}: {}", o_.path_stats, strerror(errno));
  if (fd >= 0) ::close(fd);
}

} // namespace mpnvme::host
