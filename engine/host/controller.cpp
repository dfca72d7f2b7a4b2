// SPDX-License-Identifier: GPL-2.0-only
// Controller: connecting the association (admin queue, enable, identify,
// number of queues, asynchronous events, ANA) and the jobs' I/O queues, as
// the Linux host does it. The admin thread is in controller_thread.cpp.
#include "engine/host/controller.hpp"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <nvme/types.h>
#include <stdexcept>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/host/authenticate.hpp"
#include "engine/host/secure_channel.hpp"
#include "lib/base/log.hpp"

namespace mpnvme::host {
namespace {
constexpr uint16_t kAdminSlots = 32; // the Linux host's admin queue depth
} // namespace

IoAttachment::IoAttachment(uint16_t qid, uint16_t slots, uint32_t nsid, NsIds expected, int wake_fd)
    : qid(qid), slots(slots), nsid(nsid), expected(std::move(expected)), wake_(::fcntl(wake_fd, F_DUPFD_CLOEXEC, 0)) {
  if (!wake_) throw std::runtime_error(fmt::format("dup of the job's eventfd: {}", strerror(errno)));
}

IoAttachment::~IoAttachment() = default;

std::unique_ptr<Channel> IoAttachment::take(uint32_t &generation) {
  std::lock_guard lk(mu_);
  has_.store(false, std::memory_order_relaxed);
  generation = ready_generation_;
  return std::move(ready_);
}

void IoAttachment::hand_over(std::unique_ptr<Channel> ch, uint32_t generation) {
  {
    std::lock_guard lk(mu_);
    if (generation < ready_generation_) return;
    ready_ = std::move(ch);
    ready_generation_ = generation;
    has_.store(true, std::memory_order_release);
  }
  wake();
}

void IoAttachment::wake() const {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

std::string IoAttachment::refusal() const {
  std::lock_guard lk(mu_);
  return refusal_;
}

void IoAttachment::set_refusal(std::string why) {
  std::lock_guard lk(mu_);
  refusal_ = std::move(why);
}

HostController::HostController(ControllerConfig cfg)
    : cfg_(std::move(cfg)), label_(fmt::format("path {}", cfg_.path.display())), rec_(cfg_.recovery, Clock::now()),
      wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!wake_) throw std::runtime_error(fmt::format("eventfd: {}", strerror(errno)));
}

HostController::~HostController() {
  stop_ = true;
  wake_self();
  if (thread_.joinable()) thread_.join();
  try {
    shutdown();
  } catch (const std::exception &e) {
    log().warn("{}: orderly shutdown: {}", label_, e.what());
  }
}

IdController HostController::id() const {
  std::lock_guard lk(mu_);
  return id_;
}

// The engine option behind a failed socket step, for the error message.
static std::string socket_option_hint(SocketStep step, const SocketSettings &s) {
  switch (step) {
  case SocketStep::Source: return fmt::format(" (host_traddr={})", s.host_traddr);
  case SocketStep::Device: return fmt::format(" (host_iface={})", s.host_iface);
  case SocketStep::Priority: return fmt::format(" (sk_priority={})", s.priority.value_or(0));
  case SocketStep::Tos: return fmt::format(" (tos={})", s.tos.value_or(0));
  default: return "";
  }
}

std::unique_ptr<Channel> HostController::open_channel(uint16_t qid, uint16_t slots,
                                                      const std::optional<tls::Offer> &generated) const {
  SocketSettings s = cfg_.socket;
  s.priority = cfg_.sk_priority.for_queue(qid);
  s.tos = cfg_.tos.for_queue(qid);
  Fd fd = [&] {
    try {
      return connect_stream(cfg_.path, s);
    } catch (const MptcpUnavailable &e) {
      throw std::runtime_error(fmt::format("{}; use transport=tcp", e.what()));
    } catch (const SocketError &e) {
      throw std::runtime_error(fmt::format("{}{}", e.what(), socket_option_hint(e.step, s)));
    }
  }();
  QueueParams p;
  p.qid = qid;
  p.slots = slots;
  p.digests = cfg_.digests;
  p.incapsule_limit = qid == 0 ? nvme::kAdminInlineBytes : 0;
  p.label = fmt::format("{} qid {}", label_, qid);
  auto ch = std::make_unique<Channel>(std::move(fd), std::move(p));
  // With concat=1 every queue but the first admin queue of an association
  // runs TLS on the PSK that one generated.
  if (cfg_.tls.enabled || generated) {
    try {
      const tls::Offer offer = generated ? *generated : tls::host_offer(cfg_.tls, cfg_.host.hostnqn, cfg_.subnqn);
      ch->set_stream(start_tls(ch->fd(), cfg_.socket.transport, cfg_.tls.mode, offer, Clock::now() + cfg_.admin_timeout));
    } catch (const std::exception &e) {
      throw std::runtime_error(fmt::format("{} qid {}: TLS{}: {}", label_, qid, generated ? " (generated PSK)" : "", e.what()));
    }
  }
  try {
    ch->initialize(Clock::now() + cfg_.admin_timeout);
  } catch (const std::exception &e) {
    // nvmet closes a plaintext connection to a port that requires TLS.
    const bool closed = ch->queue().failure().find("closed by the controller") != std::string::npos;
    throw std::runtime_error(fmt::format("{} qid {}: connection setup (ICReq): {}{}", label_, qid, e.what(),
                                         closed && !cfg_.tls.enabled && !generated
                                             ? " (a port that requires TLS closes plaintext connections: tls=1 with the "
                                               "target's PSK?)"
                                             : ""));
  }
  const MptcpState st = query_mptcp(ch->fd());
  log().debug("{} qid {}: connected over {}{}", label_, qid, st.mptcp ? "MPTCP" : "TCP",
              cfg_.socket.transport == Transport::Mptcp && !st.mptcp ? " (MPTCP fell back to TCP)" : "");
  return ch;
}

// Fabrics Connect; a refusal throws naming the field the target rejected.
Completion HostController::send_connect(Channel &ch, uint16_t qid, uint16_t sqsize, uint8_t cattr, uint32_t kato,
                                        uint16_t cntlid) const {
  uint8_t data[nvme::kConnectDataLen];
  nvme::ConnectData cd;
  cd.hostid = cfg_.host.hostid;
  cd.cntlid = cntlid;
  cd.subnqn = cfg_.subnqn;
  cd.hostnqn = cfg_.host.hostnqn;
  nvme::encode_connect_data(data, cd);
  Command c;
  c.sqe = nvme::make_connect(qid, sqsize, cattr, kato);
  c.data = data;
  c.len = sizeof data;
  c.dir = DataDir::ToController;
  const Completion r = ch.execute(c, cfg_.admin_timeout);
  if (r.aborted) throw std::runtime_error(fmt::format("{} qid {}: Connect: {}", label_, qid, ch.queue().failure()));
  if (r.status) {
    std::string hint;
    const uint16_t code = r.status & 0x7ff;
    if (code == (nvme::kStatusConnectInvalidParam & 0x7ff)) {
      // CQE DW0: IATTR bit 16 (1 = Connect data, 0 = SQE), IPO bits 15:0.
      const bool in_data = r.dw0 & (1u << 16);
      const uint32_t ipo = r.dw0 & 0xffff;
      const char *field = !in_data    ? "a Connect command field (qid/sqsize/kato)"
                          : ipo < 16  ? "hostid"
                          : ipo < 256 ? "cntlid"
                          : ipo < 512 ? "subnqn (no such subsystem on the target)"
                                      : "hostnqn";
      hint = fmt::format(": the target rejected {} (subnqn '{}', hostnqn '{}')", field, cfg_.subnqn, cfg_.host.hostnqn);
    } else if (code == (nvme::kStatusConnectInvalidHost & 0x7ff)) {
      hint = fmt::format(": host '{}' is not allowed on subsystem '{}'", cfg_.host.hostnqn, cfg_.subnqn);
    }
    throw std::runtime_error(fmt::format("{} qid {}: Connect refused: {}{}", label_, qid, nvme::status_string(r.status), hint));
  }
  return r;
}

// The admin queue's Connect, then its authentication when the controller
// asks for it (again after every reconnect: a new connection is a new
// queue). With concatenation that authentication generates the PSK the
// association's other queues use.
void HostController::connect_admin(Channel &ch) {
  const Completion r = send_connect(ch, 0, kAdminSlots - 1, 0, cfg_.kato_ms, nvme::kDynamicCntlid);
  cntlid_ = static_cast<uint16_t>(r.dw0 & 0xffff);
  const std::string where = fmt::format("{} admin queue", label_);
  if (needs_authentication(r.dw0, cfg_.auth, where, 0, cfg_.tls.concat)) {
    // An admin queue on a generated PSK that must authenticate again asks
    // for a new PSK in place of it, as Linux does.
    const auto sc = !cfg_.tls.concat ? dhchap::SecureChannel::None
                    : generated_     ? dhchap::SecureChannel::ReplaceTlsPsk
                                     : dhchap::SecureChannel::NewTlsPsk;
    if (auto g = authenticate(ch, cfg_.auth, cfg_.host.hostnqn, cfg_.subnqn, where, cfg_.admin_timeout, sc))
      generated_ = std::move(g);
  } else if (cfg_.tls.concat && !generated_) {
    throw std::runtime_error(fmt::format("{}: concat=1, but the controller asks for no DH-HMAC-CHAP on the admin queue, so no "
                                         "TLS PSK can be generated (does the target have host {}'s key?)",
                                         where, cfg_.host.hostnqn));
  }
}

Completion HostController::admin(const nvme::Sqe &sqe, uint8_t *data, uint32_t len, DataDir dir) {
  Command c;
  c.sqe = sqe;
  c.data = data;
  c.len = len;
  c.dir = dir;
  Completion r = admin_->execute(c, cfg_.admin_timeout);
  if (r.aborted)
    throw std::runtime_error(
        fmt::format("{} admin {}: {}", label_, nvme::opcode_name(sqe.opcode(), true), admin_->queue().failure()));
  if (r.status) log().debug("{} admin {}: {}", label_, nvme::opcode_name(sqe.opcode(), true), nvme::status_string(r.status));
  return r;
}

uint64_t HostController::property_get(uint32_t off, bool eight) {
  const Completion r = admin(nvme::make_property_get(off, eight));
  if (r.status) throw std::runtime_error(fmt::format("{}: Property Get {:#x}: {}", label_, off, nvme::status_string(r.status)));
  return static_cast<uint64_t>(r.dw1) << 32 | r.dw0;
}

void HostController::property_set(uint32_t off, uint64_t v) {
  const Completion r = admin(nvme::make_property_set(off, v, false));
  if (r.status) throw std::runtime_error(fmt::format("{}: Property Set {:#x}: {}", label_, off, nvme::status_string(r.status)));
}

void HostController::wait_csts(uint32_t mask, uint32_t want, const char *what) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(cap_.timeout_ms(), 500u));
  for (;;) {
    const auto csts = static_cast<uint32_t>(property_get(nvme::kRegCsts, false));
    if (csts & nvme::kCstsCfs)
      throw std::runtime_error(fmt::format("{}: controller fatal status while waiting for {}", label_, what));
    if ((csts & mask) == want) return;
    if (Clock::now() > deadline)
      throw std::runtime_error(fmt::format("{}: timed out waiting for {} (CSTS {:#x})", label_, what, csts));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Admin queue up to a live controller: Connect, enable, Identify
// Controller, Number of Queues, asynchronous event configuration and the
// ANA log. Throws std::runtime_error naming the path and the step.
// How long a connection step took, for the log (reconnect time decides
// how long a failover takes; bench/run floor reads these lines).
static double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

void HostController::connect_association() {
  const auto t0 = Clock::now();
  enabled_ = false;
  generated_.reset();
  ana_last_.reset();
  admin_ = open_channel(0, kAdminSlots, generated_);
  connect_admin(*admin_);
  if (cfg_.tls.concat) {
    // Secure channel concatenation: the first admin queue of the
    // association ran plaintext and generated the PSK; the admin queue
    // starts over on TLS with it (a new connection, a new controller), as
    // the Linux host restarts it.
    admin_.reset();
    admin_ = open_channel(0, kAdminSlots, generated_);
    connect_admin(*admin_);
    log().debug("{}: admin queue on TLS with the generated PSK '{}' ({:.1f} ms since the first Connect)", label_,
                generated_->identity, ms_since(t0));
  }
  cap_ = nvme::Cap{property_get(nvme::kRegCap, true)};
  if (cap_.mpsmin_bytes() > 4096)
    throw std::runtime_error(fmt::format("{}: controller minimum page size {} above 4 KiB", label_, cap_.mpsmin_bytes()));
  const auto cc = static_cast<uint32_t>(property_get(nvme::kRegCc, false));
  if (cc & nvme::kCcEnable) { // a fresh fabrics controller is disabled; reset if not
    property_set(nvme::kRegCc, cc & ~nvme::kCcEnable);
    wait_csts(nvme::kCstsRdy, 0, "CSTS.RDY=0");
  }
  property_set(nvme::kRegCc, nvme::kCcDefault);
  property_set(nvme::kRegCc, nvme::kCcDefault | nvme::kCcEnable);
  wait_csts(nvme::kCstsRdy, nvme::kCstsRdy, "CSTS.RDY=1");
  enabled_ = true;

  std::vector<uint8_t> buf(nvme::kIdentifyLen);
  const Completion r =
      admin(nvme::make_identify(NVME_IDENTIFY_CNS_CTRL, 0), buf.data(), nvme::kIdentifyLen, DataDir::FromController);
  if (r.status) throw std::runtime_error(fmt::format("{}: Identify Controller: {}", label_, nvme::status_string(r.status)));
  IdController id = parse_id_controller(buf.data());
  if (id.subnqn != cfg_.subnqn)
    throw std::runtime_error(
        fmt::format("{}: the controller reports subsystem '{}', not subnqn '{}'", label_, id.subnqn, cfg_.subnqn));

  const uint32_t want = std::max<uint32_t>(cfg_.queues_wanted, 1) - 1; // 0's based
  const Completion q = admin(nvme::make_set_features(NVME_FEAT_FID_NUM_QUEUES, want | want << 16));
  if (q.status)
    throw std::runtime_error(fmt::format("{}: Set Features Number of Queues: {}", label_, nvme::status_string(q.status)));
  granted_ = static_cast<uint16_t>(std::min(q.dw0 & 0xffff, q.dw0 >> 16) + 1);

  // ANA change notices, when the controller can send them (as the kernel's
  // nvme_enable_aen); a refusal only costs the notices.
  if (id.oaes & NVME_FEATURE_AENCFG_NOTICE_ANA_CHANGE) {
    const Completion a = admin(nvme::make_set_features(NVME_FEAT_FID_ASYNC_EVENT, NVME_FEATURE_AENCFG_NOTICE_ANA_CHANGE));
    if (a.status) log().warn("{}: Set Features Asynchronous Event Configuration: {}", label_, nvme::status_string(a.status));
  }
  {
    std::lock_guard lk(mu_);
    id_ = id;
  }
  ana_enabled_ = id.ana_reporting();
  if (ana_enabled_) {
    const size_t bytes = (id.ana_log_bytes() + 3) / 4 * 4;
    if (id.max_transfer_bytes() && bytes > id.max_transfer_bytes()) {
      log().warn("{}: ANA log page ({} bytes) larger than MDTS ({} bytes): ANA states not used", label_, bytes,
                 id.max_transfer_bytes());
      ana_enabled_ = false;
    } else {
      ana_buf_.assign(bytes, 0);
      read_ana_log_now();
    }
  }
  log().log(cfg_.size_probe ? spdlog::level::debug : spdlog::level::info,
            "{}: controller {} ({} {}), cntlid {}, {} I/O queue(s){}; association up in {:.1f} ms{}", label_, id.subnqn, id.model,
            id.firmware, cntlid_, granted_, ana_enabled_ ? ", ANA reporting" : "", ms_since(t0),
            cfg_.tls.concat    ? " (authentication and TLS on its PSK included)"
            : cfg_.auth.secret ? " (authentication included)"
                               : "");
}

void HostController::read_ana_log_now() {
  const uint64_t covered = ana_reads_.read_now(); // before the read: a later request gets a later read
  const auto len = static_cast<uint32_t>(ana_buf_.size());
  const Completion r = admin(nvme::make_get_log_page(NVME_LOG_LID_ANA, len), ana_buf_.data(), len, DataDir::FromController);
  if (r.status) throw std::runtime_error(fmt::format("{}: Get Log Page (ANA): {}", label_, nvme::status_string(r.status)));
  std::string why;
  auto log_page = parse_ana_log(ana_buf_.data(), ana_buf_.size(), why);
  if (!log_page) throw std::runtime_error(fmt::format("{}: ANA log page: {}", label_, why));
  apply_ana(*log_page, covered);
}

NamespaceInfo HostController::identify_ns_now(uint32_t nsid) {
  if (state() != CtrlState::Live && !enabled_) throw std::runtime_error(fmt::format("{}: not connected: {}", label_, reason()));
  std::vector<uint8_t> buf(nvme::kIdentifyLen);
  Completion r = admin(nvme::make_identify(NVME_IDENTIFY_CNS_NS, nsid), buf.data(), nvme::kIdentifyLen, DataDir::FromController);
  if (r.status)
    throw std::runtime_error(fmt::format("{}: Identify Namespace nsid={}: {}", label_, nsid, nvme::status_string(r.status)));
  NamespaceInfo info{id(), parse_id_namespace(buf.data()), cap_.mqes(), generation()};
  if (info.ns.nsze == 0)
    throw std::runtime_error(fmt::format("{}: nsid={} is not an active namespace of {} (the controller has {} namespace ids)",
                                         label_, nsid, cfg_.subnqn, info.ctrl.nn));
  if (info.ns.lba_bytes == 0) throw std::runtime_error(fmt::format("{}: nsid={} reports an invalid LBA format", label_, nsid));
  if (info.ns.metadata_bytes)
    throw std::runtime_error(fmt::format("{}: nsid={} uses metadata, which is not supported", label_, nsid));
  // The descriptor list (NVMe 1.3) names the namespace across controllers;
  // a controller without it leaves the Identify Namespace identifiers.
  std::fill(buf.begin(), buf.end(), 0);
  r = admin(nvme::make_identify(NVME_IDENTIFY_CNS_NS_DESC_LIST, nsid), buf.data(), nvme::kIdentifyLen, DataDir::FromController);
  if (r.status == 0) {
    std::string why;
    if (!parse_ns_descriptors(buf.data(), buf.size(), info.ns.ids, why))
      throw std::runtime_error(fmt::format("{}: nsid={} identification descriptors: {}", label_, nsid, why));
  } else {
    log().debug("{}: nsid={} has no identification descriptor list: {}", label_, nsid, nvme::status_string(r.status));
  }
  return info;
}

uint16_t HostController::pick_qid(uint16_t preferred) const {
  auto taken = [this](uint16_t q) {
    return std::any_of(attachments_.begin(), attachments_.end(), [q](const auto &a) { return a->qid == q; });
  };
  const uint16_t limit = granted_ ? granted_ : cfg_.queues_wanted;
  if (preferred >= 1 && preferred <= limit && !taken(preferred)) return preferred;
  for (uint16_t q = 1; q <= limit; q++)
    if (!taken(q)) return q;
  throw std::runtime_error(
      fmt::format("{}: the controller grants {} I/O queue(s) and all are taken by jobs of this process", label_, limit));
}

// The connection of the attachment's I/O queue to the ticket's association:
// Connect, authentication when the controller asks for it, the MPTCP
// subflows when asked to wait for them; then handed over to the job.
void HostController::connect_io(IoAttachment &a, const IoQueueTicket &t) const {
  const auto t0 = Clock::now();
  auto ch = open_channel(a.qid, a.slots, t.generated);
  ch->queue().set_incapsule_limit(t.incapsule_limit);
  const Completion r = send_connect(*ch, a.qid, static_cast<uint16_t>(a.slots - 1),
                                    cfg_.disable_sqflow ? nvme::kConnectDisableSqFlow : 0, 0, t.cntlid);
  const std::string where = fmt::format("{} I/O queue {}", label_, a.qid);
  if (needs_authentication(r.dw0, cfg_.auth, where, a.qid, cfg_.tls.concat))
    authenticate(*ch, cfg_.auth, cfg_.host.hostnqn, cfg_.subnqn, where, cfg_.admin_timeout, dhchap::SecureChannel::None);
  log().info("{} qid {}: I/O queue up in {:.1f} ms", label_, a.qid, ms_since(t0));
  if (cfg_.fabrics_disconnect) ch->queue().expect_close();
  if (cfg_.mptcp_join_wait.count() && cfg_.socket.transport == Transport::Mptcp) {
    // The Connect exchange established the connection fully: the joins
    // start now. I/O begun before they are up is first all on the initial
    // subflow, then moved (bench/run stall: 3 of 40 one-connection runs
    // lost a quarter second there).
    const auto t0 = Clock::now();
    const unsigned n = wait_for_subflows(ch->fd(), std::chrono::milliseconds(20), cfg_.mptcp_join_wait);
    log().info("{} qid {}: {} MPTCP subflow(s) after {} ms (mptcp_join_wait={})", label_, a.qid, n,
               std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count(), cfg_.mptcp_join_wait.count());
  }
  a.hand_over(std::move(ch), t.generation);
}

std::shared_ptr<IoAttachment> HostController::attach(uint16_t preferred, uint16_t slots, uint32_t nsid, const NsIds &expected,
                                                     int wake_fd, const NamespaceInfo *identified) {
  std::shared_ptr<IoAttachment> a;
  std::optional<IoQueueTicket> ticket;
  call([&] {
    {
      std::lock_guard lk(mu_);
      a = std::make_shared<IoAttachment>(pick_qid(preferred), slots, nsid, expected, wake_fd);
      attachments_.push_back(a);
    }
    if (state() != CtrlState::Live) return; // the next reconnect connects it
    try {
      ticket = prepare_io(*a, identified);
    } catch (...) {
      detach(a);
      throw;
    }
  });
  if (!ticket) return a;
  // The connection on the job's own thread: the jobs that share this
  // controller connect their queues side by side, where on the admin
  // thread they waited for each other's round trips.
  try {
    connect_io(*a, *ticket);
  } catch (...) {
    if (generation() != ticket->generation) return a; // that association is gone; its reconnect connects the queue
    detach(a);
    throw;
  }
  return a;
}

// Identify the attachment's namespace on this association (it must still be
// the job's namespace), read its ANA state, and check that the controller
// can take its queue; returns what its connection needs. Throws
// std::runtime_error; a refusal of the path for this job only (a changed
// namespace, too few queues or entries) is also left on the attachment, so
// the job can say why the path stays unused.
IoQueueTicket HostController::prepare_io(IoAttachment &a, const NamespaceInfo *identified) {
  auto refuse = [&a](std::string why) {
    a.set_refusal(why);
    throw std::runtime_error(why);
  };
  // Under load each admin command waits behind the paths' full queues:
  // what this association already said is not asked again.
  const NamespaceInfo info = identified && identified->generation == generation() ? *identified : identify_ns_now(a.nsid);
  if (a.expected.any() && !(info.ns.ids == a.expected))
    refuse(fmt::format("{}: nsid {} is now {} (the job's namespace is {}): path not used", label_, a.nsid, info.ns.ids.describe(),
                       a.expected.describe()));
  const uint32_t mqes = cap_.mqes();
  if (a.slots > mqes)
    refuse(
        fmt::format("{}: queue_size {} exceeds the controller's maximum queue entries (CAP.MQES+1 = {})", label_, a.slots, mqes));
  if (a.qid > granted_)
    refuse(fmt::format("{}: controller grants {} I/O queue(s), the job needs queue id {}", label_, granted_, a.qid));
  a.set_refusal("");
  a.anagrpid.store(info.ns.anagrpid);
  if (ana_last_)
    a.ana.store(ana_last_->state_of(a.nsid, info.ns.anagrpid).value_or(AnaState::Optimized));
  else if (ana_enabled_)
    read_ana_log_now();
  return IoQueueTicket{generation(), cntlid_, static_cast<uint32_t>(std::min<uint64_t>(id_.incapsule_data_limit(), 1u << 20)),
                       generated_};
}

void HostController::detach(const std::shared_ptr<IoAttachment> &a) {
  std::lock_guard lk(mu_);
  std::erase(attachments_, a);
}

NamespaceInfo HostController::identify_namespace(uint32_t nsid) {
  NamespaceInfo info;
  call([&] { info = identify_ns_now(nsid); });
  return info;
}

void HostController::apply_ana(const AnaLog &log_page, uint64_t covered) {
  ana_last_ = log_page;
  std::lock_guard lk(mu_);
  for (auto &a : attachments_) {
    // The group comes from Identify Namespace; a controller without ANA
    // groups for it leaves the path optimized.
    const auto st = log_page.state_of(a->nsid, a->anagrpid.load());
    const AnaState now = st.value_or(AnaState::Optimized);
    const AnaState before = a->ana.exchange(now);
    clear_ana_pending(a->ana_pending, covered);
    if (before != now) {
      log().info("{}: nsid {} ANA state {} -> {}", label_, a->nsid, ana_state_name(before), ana_state_name(now));
      a->wake();
    }
  }
}

// CC.SHN and close, as the Linux host ends an association.
void HostController::shutdown() {
  if (admin_ && enabled_ && !admin_->queue().failed()) {
    const auto cc = static_cast<uint32_t>(property_get(nvme::kRegCc, false));
    property_set(nvme::kRegCc, (cc & ~nvme::kCcShnMask) | nvme::kCcShnNormal);
    wait_csts(nvme::kCstsShstMask, nvme::kCstsShstComplete, "shutdown complete (CSTS.SHST)");
  }
  enabled_ = false;
  admin_.reset();
}

} // namespace mpnvme::host
