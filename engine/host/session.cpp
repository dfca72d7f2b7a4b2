#include "session.hpp"

#include <atomic>
#include <cerrno>
#include <fmt/format.h>
#include <stdexcept>

#include "../../lib/log.hpp"
#include "../../lib/wire.hpp"

namespace mpnvme::host {

Session::Session(EngineOptions opts, const mpnvme_job &job)
    : o_(std::move(opts)), job_(job), job_name_(job.name ? job.name : "") {
  job_.name = job_name_.c_str();
}

Session::~Session() {
  // Subflows join after connect: what the connection ended up using is the
  // number worth reporting.
  if (opened_ && o_.transport == Transport::Mptcp) {
    const MptcpState st = ctrl_->mptcp_state();
    if (st.mptcp)
      log().info("job {} {} qid {}: MPTCP used {} subflow(s)", job_.name, ctrl_->label(), ctrl_->config().io_qid,
                 st.subflows + 1);
  }
}

ControllerConfig Session::controller_config(uint16_t qid) const {
  ControllerConfig c;
  c.path = o_.paths.front();
  c.socket.transport = o_.transport;
  c.socket.host_traddr = o_.host_traddr;
  c.socket.host_iface = o_.host_iface;
  c.socket.connect_timeout = o_.connect_timeout;
  c.sk_priority = o_.sk_priority;
  c.tos = o_.tos;
  c.subnqn = o_.subnqn;
  c.host = o_.host;
  c.nsid = o_.nsid;
  c.kato_ms = o_.kato_ms;
  c.digests = o_.digests;
  c.io_qid = qid;
  c.disable_sqflow = o_.disable_sqflow;
  c.admin_timeout = std::max(o_.connect_timeout, std::chrono::milliseconds(2000));
  return c;
}

void Session::probe() {
  ctrl_ = std::make_unique<Controller>(controller_config(1));
  ctrl_->connect_admin();
}

uint64_t Session::size_bytes() const { return ctrl_->ns().nsze * ctrl_->ns().lba_bytes; }

void Session::check_geometry() const {
  const uint32_t lba = ctrl_->ns().lba_bytes;
  const uint64_t mdts = ctrl_->id().max_transfer_bytes();
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
    const uint16_t need = o_.trim_mode == TrimMode::Dsm ? nvme::kOncsDsm : nvme::kOncsWriteZeroes;
    if (!(ctrl_->id().oncs & need))
      throw std::invalid_argument(fmt::format(
          "trim_mode={}: the controller does not support {} (ONCS {:#x})", o_.trim_mode == TrimMode::Dsm ? "dsm" : "write_zeroes",
          o_.trim_mode == TrimMode::Dsm ? "Dataset Management" : "Write Zeroes", ctrl_->id().oncs));
  }
}

void Session::report_transport() const {
  const MptcpState st = ctrl_->mptcp_state();
  const uint16_t qid = ctrl_->config().io_qid;
  if (o_.transport == Transport::Mptcp && !st.mptcp) {
    static std::atomic<bool> once{false};
    if (!once.exchange(true))
      log().warn("{}: MPTCP fell back to plain TCP (the peer or a middlebox does not speak MPTCP)", ctrl_->label());
  }
  log().info("job {} {} qid {}: transport in effect: {}{}", job_.name, ctrl_->label(), qid, st.mptcp ? "MPTCP" : "TCP",
             st.mptcp ? fmt::format(", {} additional subflow(s)", st.subflows) : "");
  if (st.mptcp) {
    // Linux MPTCP: once IP_TOS is set, subflow packets lose SO_PRIORITY.
    for (uint16_t q : {uint16_t(0), qid}) {
      const auto prio = o_.sk_priority.for_queue(q), tos = o_.tos.for_queue(q);
      if (prio && *prio && tos) {
        static std::atomic<bool> once{false};
        if (!once.exchange(true))
          log().warn("{} qid {}: sk_priority={} and tos={:#x} on one MPTCP socket: Linux MPTCP subflows lose SO_PRIORITY "
                     "when IP_TOS is set, so their packets leave with priority 0 (see fio-mpnvme(7), PRIORITY PAIRS)",
                     ctrl_->label(), q, *prio, *tos);
      }
    }
  }
}

void Session::open() {
  if (o_.paths.size() > 1) {
    static std::atomic<bool> once{false};
    if (!once.exchange(true))
      log().warn(
          "traddr lists {} paths; engine-level multipath (iopolicy={}) is not implemented yet: using only the first path {}",
          o_.paths.size(), iopolicy_name(o_.iopolicy), o_.paths.front().display());
  }
  const auto qid = static_cast<uint16_t>(job_.job_number ? job_.job_number : 1);
  ctrl_ = std::make_unique<Controller>(controller_config(qid));
  ctrl_->connect_admin();
  lba_shift_ = static_cast<uint32_t>(__builtin_ctz(ctrl_->ns().lba_bytes));
  check_geometry();

  unsigned slots = o_.queue_size;
  const unsigned mqes = ctrl_->cap().mqes();
  if (!slots) {
    slots = std::max(job_.iodepth, 2u);
    if (slots > mqes) {
      log().warn("iodepth={} exceeds the controller's queue size (CAP.MQES+1 = {}): at most {} commands in flight", job_.iodepth,
                 mqes, mqes);
      slots = mqes;
    }
  } else if (slots < job_.iodepth) {
    log().warn("queue_size={} is below iodepth={}: at most {} commands in flight", slots, job_.iodepth, slots);
  }
  ctrl_->connect_io(static_cast<uint16_t>(std::min(slots, kMaxQueueSize)));
  ctrl_->start_keep_alive();
  dsm_.resize(std::max(job_.iodepth, 1u));
  ready_.reserve(static_cast<size_t>(ctrl_->io().capacity()) * 2);
  report_transport();
  opened_ = true;
}

int Session::queue(const mpnvme_io &io, int &error) {
  Queue &q = ctrl_->io();
  if (q.failed()) {
    error = ECONNRESET;
    return MPNVME_COMPLETED;
  }
  Command c;
  c.cookie = io.cookie;
  const uint32_t lba = ctrl_->ns().lba_bytes;
  if (io.ddir != MPNVME_SYNC && ((io.offset | io.len) & (lba - 1))) {
    log().error("job {}: I/O at offset {} length {} is not aligned to the LBA size {}", job_.name, io.offset, io.len, lba);
    error = EINVAL;
    return MPNVME_COMPLETED;
  }
  const uint64_t slba = io.offset >> lba_shift_;
  const auto nlb = static_cast<uint32_t>(io.len >> lba_shift_);
  switch (io.ddir) {
  case MPNVME_READ:
  case MPNVME_WRITE:
    c.sqe = nvme::make_rw(io.ddir == MPNVME_READ ? nvme::kCmdRead : nvme::kCmdWrite, o_.nsid, slba, nlb);
    c.data = static_cast<uint8_t *>(io.buf);
    c.len = static_cast<uint32_t>(io.len);
    c.dir = io.ddir == MPNVME_READ ? DataDir::FromController : DataDir::ToController;
    break;
  case MPNVME_SYNC: c.sqe = nvme::make_cmd(nvme::kCmdFlush, o_.nsid); break;
  case MPNVME_TRIM:
    if (o_.trim_mode == TrimMode::WriteZeroes) {
      c.sqe = nvme::make_rw(nvme::kCmdWriteZeroes, o_.nsid, slba, nlb);
      break;
    }
    if (io.index >= dsm_.size()) {
      error = EINVAL;
      return MPNVME_COMPLETED;
    }
    {
      uint8_t *range = dsm_[io.index].data();
      wire::put32(range, 0, 0);
      wire::put32(range, 4, nlb);
      wire::put64(range, 8, slba);
      c.sqe = nvme::make_cmd(nvme::kCmdDsm, o_.nsid);
      c.sqe.set_cdw(10, 0);       // one range (0's based)
      c.sqe.set_cdw(11, 1u << 2); // AD: deallocate
      c.data = range;
      c.len = nvme::kDsmRangeLen;
      c.dir = DataDir::ToController;
    }
    break;
  }
  if (q.submit(c)) return MPNVME_QUEUED;
  if (q.failed()) {
    error = ECONNRESET;
    return MPNVME_COMPLETED;
  }
  return MPNVME_BUSY;
}

void Session::commit() { ctrl_->io().flush(); }

int Session::getevents(unsigned min, unsigned max, long long timeout_ns) {
  ready_.erase(ready_.begin(), ready_.begin() + static_cast<long>(handed_));
  handed_ = 0;
  Queue &q = ctrl_->io();
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (ctrl_->keep_alive_failed() && !q.failed()) q.fail("keep alive failed; the controller association is gone", ECONNRESET);
    auto &c = q.completions();
    ready_.insert(ready_.end(), c.begin(), c.end());
    c.clear();
    if (ready_.size() >= min || (q.failed() && q.inflight() == 0)) break;
    int wait_ms = 1000; // wake up regularly to notice keep-alive failures
    if (timeout_ns >= 0) {
      const auto left = std::chrono::nanoseconds(timeout_ns) - (std::chrono::steady_clock::now() - start);
      if (left <= std::chrono::nanoseconds(0)) break;
      wait_ms = static_cast<int>(std::min<long long>(wait_ms, std::chrono::ceil<std::chrono::milliseconds>(left).count()));
    }
    q.process(wait_ms);
  }
  handed_ = std::min<size_t>(ready_.size(), max);
  return static_cast<int>(handed_);
}

void *Session::event(unsigned i, int &error) const {
  const Completion &c = ready_[i];
  error = c.error;
  return c.cookie;
}

} // namespace mpnvme::host
