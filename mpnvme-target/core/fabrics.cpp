// SPDX-License-Identifier: GPL-2.0-only
// SubmissionQueue: the Fabrics commands (Connect, Property Get/Set,
// Disconnect; Authentication Send/Receive are in auth.cpp).
// Where the Linux target (nvmet) accepts something without a data-safety
// reason to refuse it, so do we (docs/design.md lists the cases).
//
// Connect checks the host and makes or finds its controller through one
// view of the configuration (the first lock of the order), and completes
// only after letting go of it.
#include <fmt/format.h>

#include "lib/base/log.hpp"
#include "lib/base/printable.hpp"
#include "lib/wire/wire.hpp"
#include "mpnvme-target/core/submission_queue.hpp"

namespace mpnvme::target {
using namespace nvme;

namespace {
// Connect's Invalid Parameters carry the offending field's offset in dword 0:
// bit 16 set for the Connect data, clear for the SQE.
uint32_t invalid_param(bool in_data, uint16_t offset) { return (in_data ? 1u << 16 : 0u) | offset; }
// CAP: MQES, CQR, TO 7.5 s, CSS NVM and "one or more I/O command sets" (as
// nvmet: a host may enable with CC.CSS 110b), MPSMIN = MPSMAX = 4 KiB.
uint64_t capabilities(uint32_t queue_entries) {
  return (queue_entries - 1) | (1ull << 16) | (15ull << 24) |
         (static_cast<uint64_t>(NVME_CAP_CSS_NVM | NVME_CAP_CSS_CSI) << NVME_CAP_CSS_SHIFT);
}
} // namespace

// A refused Connect: its status, the reason, and dword 0 (the field).
struct ConnectRefusal {
  uint16_t status = 0;
  std::string why;
  uint32_t dw0 = 0;
};

void SubmissionQueue::exec_fabrics(Request &r) {
  switch (r.sqe.fctype()) {
  case kFctConnect: return connect(r);
  case kFctPropertyGet: return property_get(r);
  case kFctPropertySet: return property_set(r);
  case kFctDisconnect:
    complete(r, 0);
    peer_left();
    transport_.end("Disconnect");
    return;
  case kFctAuthSend: return auth_send(r);
  case kFctAuthReceive: return auth_receive(r);
  default: return refuse(r, kStatusInvalidOpcode, fmt::format("unknown Fabrics command type {:#04x}", r.sqe.fctype()));
  }
}

void SubmissionQueue::set_tls_identity(std::string identity, std::string hostnqn, std::string subnqn, bool generated) {
  tls_identity_ = std::move(identity);
  tls_host_ = std::move(hostnqn);
  tls_subsys_ = std::move(subnqn);
  tls_generated_ = generated;
}

void SubmissionQueue::connect(Request &r) {
  const uint8_t *s = r.sqe.b.data();
  const uint16_t recfmt = wire::get16(s, 40), qid = wire::get16(s, 42), sqsize = wire::get16(s, 44);
  const uint8_t cattr = s[46];
  const uint32_t kato = wire::get32(s, 48);
  const auto bad = [&](bool in_data, uint16_t offset, const std::string &why) {
    refuse(r, kStatusConnectInvalidParam, why, invalid_param(in_data, offset));
  };
  if (ctrl_) return bad(false, 42, "second Connect on a connected queue");
  if (recfmt != 0) return refuse(r, kStatusConnectFormat, fmt::format("record format {} (only 0 exists)", recfmt));
  if (r.in_len < kConnectDataLen)
    return refuse(r, kStatusSglLengthInvalid, fmt::format("{} bytes of Connect data, {} needed", r.in_len, kConnectDataLen));
  const ConnectData d = decode_connect_data(r.in);
  connect_host_ = printable(d.hostnqn);
  const uint32_t entries = reg_.config().queue_entries;
  if (sqsize == 0 || sqsize >= entries)
    return bad(false, 44, fmt::format("SQSIZE {} (0's based) outside 1..{}", sqsize, entries - 1));
  ConnectRefusal no;
  std::optional<dhchap::ControllerAuthConfig> wants;
  {
    ConfigView view = reg_.view();
    const std::shared_ptr<Subsystem> sub = view.subsystem(d.subnqn);
    if (!sub || !port_.serves(d.subnqn))
      no = {kStatusConnectInvalidParam, fmt::format("unknown subsystem '{}' on this port", printable(d.subnqn)),
            invalid_param(true, 256)};
    else if (!tls_identity_.empty() && (d.hostnqn != tls_host_ || d.subnqn != tls_subsys_))
      no = {kStatusConnectInvalidHost, fmt::format("Connect as host {} to {} over the secure channel of identity '{}'",
                                                   connect_host_, printable(d.subnqn), printable(tls_identity_))};
    else if (tls_generated_ && !reg_.generated_psks().find(tls_identity_))
      no = {kStatusConnectInvalidHost, fmt::format("Connect over the generated PSK of identity '{}', which is withdrawn "
                                                   "(the host's keys changed, or REPLACETLSPSK replaced it)",
                                                   printable(tls_identity_))};
    else if (!view.admits(*sub, d.hostnqn))
      no = {kStatusConnectInvalidHost, fmt::format("host {} is not allowed on {}", connect_host_, d.subnqn)};
    else if (qid == 0)
      no = connect_admin(d, kato, view, sub);
    else
      no = connect_io(d, qid, view, *sub);
    // A queue whose TLS runs on a generated PSK has authenticated: only
    // this host's DH-HMAC-CHAP success made that key (nvmet asks no TLS
    // queue to authenticate; a configured PSK does not spare it here).
    if (!no.status && !tls_generated_) wants = view.host_auth(d.hostnqn);
  }
  if (no.status == kStatusConnectCtrlBusy) return refuse_busy(r, d.subnqn, no);
  if (no.status) return refuse(r, no.status, no.why, no.dw0);
  if (qid != 0) transport_.io_queue_connected(+1);
  qid_ = qid;
  sqsize_ = sqsize + 1u;
  sqflow_disabled_ = cattr & kConnectDisableSqFlow;
  label_ = fmt::format("port {} {} cntlid {}", port_.cfg.id, peer_, ctrl_->cntlid);
  ctrl_->touch();
  complete(r, 0, ctrl_->cntlid | begin_authentication(std::move(wants)));
}

// Controller Busy: logged once per interval and subsystem, with how many
// the interval before kept quiet (RefusalWindow).
void SubmissionQueue::refuse_busy(Request &r, const std::string &subnqn, const ConnectRefusal &no) {
  uint64_t quiet = 0;
  if (reg_.busy_refusals().due(subnqn, RefusalWindow::Clock::now(), quiet))
    return refuse(r, no.status, quiet ? fmt::format("{}; {} more refused since the last such line", no.why, quiet) : no.why,
                  no.dw0);
  log().debug("{}: Controller Busy for host {}: {}", label_, connect_host_, no.why);
  complete(r, no.status, no.dw0);
}

ConnectRefusal SubmissionQueue::connect_admin(const ConnectData &d, uint32_t kato, const ConfigView &view,
                                              const std::shared_ptr<Subsystem> &sub) {
  if (d.cntlid != kDynamicCntlid)
    return {kStatusConnectInvalidParam, fmt::format("admin Connect to controller {:#x}, not 0xffff (dynamic)", d.cntlid),
            invalid_param(true, 16)};
  // A discovery controller without keep-alive still ends in time (nvmet).
  if (sub->discovery && kato == 0) kato = kDiscoveryKatoMs;
  ctrl_ = view.create_controller(sub, port_, d, kato);
  // As nvmet when its controller IDs run out: Controller Busy, with DNR (a
  // host retrying at once would meet the same limit).
  if (!ctrl_)
    return {kStatusConnectCtrlBusy,
            fmt::format("subsystem {} holds {} controller(s), the most {} allows", printable(d.subnqn),
                        controller_limit(*sub, reg_.config().limits), controller_limit_option(*sub, reg_.config().limits))};
  log().info("{}: host {} connected to {} as controller {} (kato {} ms)", label_, connect_host_, d.subnqn, ctrl_->cntlid, kato);
  return {};
}

ConnectRefusal SubmissionQueue::connect_io(const ConnectData &d, uint16_t qid, const ConfigView &view, const Subsystem &sub) {
  auto ctrl = view.find_controller(sub, d.cntlid);
  if (!ctrl || ctrl->dead)
    return {kStatusConnectInvalidParam, fmt::format("I/O Connect to controller {} that does not exist", d.cntlid),
            invalid_param(true, 16)};
  if (ctrl->hostnqn != d.hostnqn)
    return {
        kStatusConnectInvalidParam,
        fmt::format("I/O Connect from host {} to controller {} of host {}", connect_host_, d.cntlid, printable(ctrl->hostnqn)),
        invalid_param(true, 512)};
  std::lock_guard lk(ctrl->mu);
  if (!(ctrl->csts & kCstsRdy)) return {kStatusSeqError, fmt::format("I/O Connect to controller {} before CC.EN", d.cntlid)};
  // As nvmet: any queue id up to the maximum, Set Features Number of
  // Queues or not.
  const uint32_t max = reg_.config().max_io_queues;
  if (qid > max)
    return {kStatusConnectInvalidParam, fmt::format("queue id {} above the maximum {}", qid, max), invalid_param(false, 42)};
  if (ctrl->io_qids.count(qid))
    return {kStatusConnectInvalidParam, fmt::format("queue id {} is connected already", qid), invalid_param(false, 42)};
  ctrl->io_qids.insert(qid);
  ctrl_ = ctrl;
  return {};
}

void SubmissionQueue::property_get(Request &r) {
  const uint32_t off = wire::get32(r.sqe.b.data(), 44);
  const bool eight = r.sqe.b[40] & 1;
  uint64_t v = 0;
  switch (off) {
  case kRegCap: v = capabilities(reg_.config().queue_entries); break;
  case kRegVs: v = kNvmeVersion; break;
  case kRegCc: {
    std::lock_guard lk(ctrl_->mu);
    v = ctrl_->cc;
    break;
  }
  case kRegCsts: v = ctrl_->csts; break;
  default: return refuse(r, kStatusInvalidField, fmt::format("Property Get of offset {:#x}", off));
  }
  if (!eight) v &= 0xffffffff;
  complete(r, 0, static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32));
}

// Why CC.EN cannot be honoured (the controller then reports CSTS.CFS), or
// empty.
static std::string enable_refusal(uint32_t cc, bool discovery) {
  const uint32_t iosqes = (cc >> 16) & 0xf, iocqes = (cc >> 20) & 0xf, mps = (cc >> 7) & 0xf;
  const uint32_t css = (cc >> NVME_CC_CSS_SHIFT) & NVME_CC_CSS_MASK;
  if (css != NVME_CC_CSS_NVM && css != NVME_CC_CSS_CSI) return fmt::format("CC.CSS {:03b}b (only 000b and 110b)", css);
  if (mps != 0) return fmt::format("CC.MPS {} (only 0: 4 KiB pages)", mps);
  // A discovery controller has no I/O queues, so their entry sizes do not
  // matter (the Linux host leaves them 0 there).
  if (!discovery && (iosqes != 6 || iocqes != 4))
    return fmt::format("CC.IOSQES {} / IOCQES {} (only 6 / 4: 64- and 16-byte entries)", iosqes, iocqes);
  return {};
}

void SubmissionQueue::property_set(Request &r) {
  const uint32_t off = wire::get32(r.sqe.b.data(), 44);
  const auto v = static_cast<uint32_t>(wire::get64(r.sqe.b.data(), 48));
  if (off != kRegCc) return refuse(r, kStatusInvalidField, fmt::format("Property Set of offset {:#x} (only CC)", off));
  std::string refusal;
  {
    std::lock_guard lk(ctrl_->mu);
    const uint32_t old = ctrl_->cc;
    uint32_t csts = ctrl_->csts;
    ctrl_->cc = v;
    if ((v & kCcEnable) && !(old & kCcEnable)) {
      refusal = enable_refusal(v, ctrl_->subsys.discovery);
      csts = refusal.empty() ? kCstsRdy : kCstsCfs;
    } else if (!(v & kCcEnable) && (old & kCcEnable)) {
      csts = 0; // controller reset
    }
    if ((v & kCcShnMask) && !(old & kCcShnMask)) csts = (csts & ~kCstsShstMask) | kCstsShstComplete;
    ctrl_->csts = csts;
  }
  if (!refusal.empty())
    log().warn("{}: controller {} of host {}: CSTS.CFS (fatal status) on enable: {}", label_, ctrl_->cntlid,
               printable(ctrl_->hostnqn), refusal);
  complete(r, 0);
}

} // namespace mpnvme::target
