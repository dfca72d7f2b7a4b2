#include "controller.hpp"

#include <cstring>
#include <fmt/format.h>
#include <stdexcept>

#include "../../lib/log.hpp"

namespace mpnvme::host {
namespace {
constexpr uint16_t kAdminSlots = 32; // the Linux host's admin queue depth
constexpr uint32_t kAdminIncapsule = 8192;
} // namespace

Controller::Controller(ControllerConfig cfg) : cfg_(std::move(cfg)) { label_ = fmt::format("path {}", cfg_.path.display()); }

Controller::~Controller() {
  try {
    shutdown();
  } catch (...) { // destructor: shutdown already logged what went wrong
  }
}

std::unique_ptr<Queue> Controller::open_queue(uint16_t qid, uint16_t slots) {
  SocketSettings s = cfg_.socket;
  s.priority = cfg_.sk_priority.for_queue(qid);
  s.tos = cfg_.tos.for_queue(qid);
  Fd fd = connect_stream(cfg_.path, s);
  QueueParams p;
  p.qid = qid;
  p.slots = slots;
  p.digests = cfg_.digests;
  p.incapsule_limit = qid == 0 ? kAdminIncapsule : 0;
  p.label = fmt::format("{} qid {}", label_, qid);
  auto q = std::make_unique<Queue>(std::move(fd), std::move(p));
  try {
    q->initialize(std::chrono::steady_clock::now() + cfg_.admin_timeout);
  } catch (const std::exception &e) {
    throw std::runtime_error(fmt::format("{} qid {}: connection setup (ICReq): {}", label_, qid, e.what()));
  }
  const MptcpState st = query_mptcp(q->fd());
  log().debug("{} qid {}: connected over {}{}", label_, qid, st.mptcp ? "MPTCP" : "TCP",
              cfg_.socket.transport == Transport::Mptcp && !st.mptcp ? " (MPTCP fell back to TCP)" : "");
  return q;
}

void Controller::fabric_connect(Queue &q, uint16_t qid, uint16_t sqsize, uint8_t cattr, uint32_t kato) {
  uint8_t data[nvme::kConnectDataLen];
  nvme::ConnectData cd;
  cd.hostid = cfg_.host.hostid;
  cd.cntlid = qid == 0 ? nvme::kDynamicCntlid : cntlid_;
  cd.subnqn = cfg_.subnqn;
  cd.hostnqn = cfg_.host.hostnqn;
  nvme::encode_connect_data(data, cd);
  Command c;
  c.sqe = nvme::make_connect(qid, sqsize, cattr, kato);
  c.data = data;
  c.len = sizeof data;
  c.dir = DataDir::ToController;
  c.log_failure = false; // refused Connects are explained below
  const Completion r = q.execute(c, cfg_.admin_timeout);
  if (r.error && !r.status) throw std::runtime_error(fmt::format("{} qid {}: Connect: {}", label_, qid, q.failure()));
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
  if (qid == 0) cntlid_ = static_cast<uint16_t>(r.dw0 & 0xffff);
}

Completion Controller::admin(const nvme::Sqe &sqe, uint8_t *data, uint32_t len, DataDir dir) {
  std::lock_guard lk(admin_mu_);
  Command c;
  c.sqe = sqe;
  c.data = data;
  c.len = len;
  c.dir = dir;
  Completion r = admin_->execute(c, cfg_.admin_timeout);
  if (r.error && !r.status)
    throw std::runtime_error(fmt::format("{} admin {}: {}", label_, nvme::opcode_name(sqe.opcode(), true), admin_->failure()));
  return r;
}

uint64_t Controller::property_get(uint32_t off, bool eight) {
  const Completion r = admin(nvme::make_property_get(off, eight));
  if (r.status) throw std::runtime_error(fmt::format("{}: Property Get {:#x}: {}", label_, off, nvme::status_string(r.status)));
  return static_cast<uint64_t>(r.dw1) << 32 | r.dw0;
}

void Controller::property_set(uint32_t off, uint64_t v) {
  const Completion r = admin(nvme::make_property_set(off, v, false));
  if (r.status) throw std::runtime_error(fmt::format("{}: Property Set {:#x}: {}", label_, off, nvme::status_string(r.status)));
}

void Controller::wait_csts(uint32_t mask, uint32_t want, const char *what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(cap_.timeout_ms(), 500u));
  for (;;) {
    const auto csts = static_cast<uint32_t>(property_get(nvme::kRegCsts, false));
    if (csts & nvme::kCstsCfs)
      throw std::runtime_error(fmt::format("{}: controller fatal status while waiting for {}", label_, what));
    if ((csts & mask) == want) return;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(fmt::format("{}: timed out waiting for {} (CSTS {:#x})", label_, what, csts));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void Controller::connect_admin() {
  admin_ = open_queue(0, kAdminSlots);
  fabric_connect(*admin_, 0, kAdminSlots - 1, 0, cfg_.kato_ms);
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

  uint8_t buf[nvme::kIdentifyLen];
  Completion r = admin(nvme::make_identify(nvme::kCnsController, 0), buf, sizeof buf, DataDir::FromController);
  if (r.status) throw std::runtime_error(fmt::format("{}: Identify Controller: {}", label_, nvme::status_string(r.status)));
  id_ctrl_ = nvme::parse_id_controller(buf);
  std::memset(buf, 0, sizeof buf);
  r = admin(nvme::make_identify(nvme::kCnsNamespace, cfg_.nsid), buf, sizeof buf, DataDir::FromController);
  if (r.status)
    throw std::runtime_error(fmt::format("{}: Identify Namespace nsid={}: {}", label_, cfg_.nsid, nvme::status_string(r.status)));
  id_ns_ = nvme::parse_id_namespace(buf);
  if (id_ns_.nsze == 0)
    throw std::runtime_error(fmt::format("{}: nsid={} is not an active namespace of {} (the controller has {} namespace ids)",
                                         label_, cfg_.nsid, cfg_.subnqn, id_ctrl_.nn));
  if (id_ns_.lba_bytes == 0)
    throw std::runtime_error(fmt::format("{}: nsid={} reports an invalid LBA format", label_, cfg_.nsid));
  if (id_ns_.metadata_bytes)
    throw std::runtime_error(fmt::format("{}: nsid={} uses metadata, which is not supported", label_, cfg_.nsid));
  log().info("{}: controller {} ({} {}), cntlid {}, namespace {}: {} blocks of {} bytes", label_, id_ctrl_.subnqn, id_ctrl_.model,
             id_ctrl_.firmware, cntlid_, cfg_.nsid, id_ns_.nsze, id_ns_.lba_bytes);
}

void Controller::connect_io(uint16_t slots) {
  const uint32_t want = cfg_.io_qid;
  const Completion r = admin(nvme::make_set_features(nvme::kFeatNumQueues, (want - 1) | (want - 1) << 16));
  if (r.status)
    throw std::runtime_error(fmt::format("{}: Set Features Number of Queues: {}", label_, nvme::status_string(r.status)));
  const uint32_t granted = std::min(r.dw0 & 0xffff, r.dw0 >> 16) + 1;
  if (granted < want)
    throw std::runtime_error(fmt::format("{}: controller grants {} I/O queue(s), job needs queue id {}", label_, granted, want));
  if (slots > cap_.mqes())
    throw std::runtime_error(fmt::format("{}: queue_size {} exceeds the controller's maximum queue entries (CAP.MQES+1 = {})",
                                         label_, slots, cap_.mqes()));
  io_ = open_queue(cfg_.io_qid, slots);
  const uint64_t limit = id_ctrl_.incapsule_data_limit();
  io_->set_incapsule_limit(static_cast<uint32_t>(std::min<uint64_t>(limit, 1u << 20)));
  fabric_connect(*io_, cfg_.io_qid, static_cast<uint16_t>(slots - 1), cfg_.disable_sqflow ? nvme::kConnectDisableSqFlow : 0, 0);
}

void Controller::start_keep_alive() {
  if (!cfg_.kato_ms || ka_thread_.joinable()) return;
  ka_thread_ = std::thread([this] { keep_alive_loop(); });
}

void Controller::keep_alive_loop() {
  const auto period = std::chrono::milliseconds(std::max(cfg_.kato_ms / 2, 100u));
  std::unique_lock lk(ka_mu_);
  while (!ka_cv_.wait_for(lk, period, [this] { return ka_stop_; })) {
    lk.unlock();
    try {
      const Completion r = admin(nvme::make_cmd(nvme::kAdminKeepAlive, 0));
      if (r.status) throw std::runtime_error(nvme::status_string(r.status));
    } catch (const std::exception &e) {
      log().error("{}: keep alive failed: {}", label_, e.what());
      ka_failed_ = true;
      return;
    }
    lk.lock();
  }
}

void Controller::shutdown() {
  {
    std::lock_guard lk(ka_mu_);
    ka_stop_ = true;
  }
  ka_cv_.notify_all();
  if (ka_thread_.joinable()) ka_thread_.join();
  if (io_ && !io_->failed()) {
    // Best effort: Linux nvmet answers Disconnect with Invalid Opcode on older
    // kernels; the socket close that follows ends the queue either way.
    Command c;
    c.sqe = nvme::make_disconnect();
    c.log_failure = false;
    io_->expect_close();
    const Completion r = io_->execute(c, std::chrono::milliseconds(2000));
    log().debug("{} qid {}: Disconnect: {}", label_, cfg_.io_qid, r.error ? io_->failure() : nvme::status_string(r.status));
  }
  io_.reset();
  if (admin_ && enabled_ && !admin_->failed() && !ka_failed_) {
    try {
      const auto cc = static_cast<uint32_t>(property_get(nvme::kRegCc, false));
      property_set(nvme::kRegCc, (cc & ~nvme::kCcShnMask) | nvme::kCcShnNormal);
      wait_csts(nvme::kCstsShstMask, nvme::kCstsShstComplete, "shutdown complete (CSTS.SHST)");
    } catch (const std::exception &e) {
      log().warn("{}: orderly shutdown: {}", label_, e.what());
    }
  }
  enabled_ = false;
  admin_.reset();
}

MptcpState Controller::mptcp_state() const {
  return io_ ? query_mptcp(io_->fd()) : admin_ ? query_mptcp(admin_->fd()) : MptcpState{};
}

} // namespace mpnvme::host
