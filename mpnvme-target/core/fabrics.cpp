// SPDX-License-Identifier: GPL-2.0-only
// Connection: the Fabrics commands (Connect, Property Get/Set, Disconnect;
// Authentication Send/Receive are in auth.cpp).
// Where the Linux target (nvmet) accepts something without a data-safety
// reason to refuse it, so do we (docs/design.md lists the cases).
#include <fmt/format.h>

#include "lib/base/log.hpp"
#include "lib/wire/wire.hpp"
#include "mpnvme-target/transport/connection.hpp"

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

void Connection::exec_fabrics(Cmd &c, uint16_t slot) {
  switch (c.sqe.fctype()) {
  case kFctConnect: return connect(c, slot);
  case kFctPropertyGet: return property_get(c, slot);
  case kFctPropertySet: return property_set(c, slot);
  case kFctDisconnect:
    complete(slot, 0);
    close("Disconnect");
    return;
  case kFctAuthSend: return auth_send(c, slot);
  case kFctAuthReceive: return auth_receive(c, slot);
  default: return refuse(slot, kStatusInvalidOpcode, fmt::format("unknown Fabrics command type {:#04x}", c.sqe.fctype()));
  }
}

void Connection::set_tls_identity(std::string identity, std::string hostnqn, std::string subnqn) {
  tls_identity_ = std::move(identity);
  tls_host_ = std::move(hostnqn);
  tls_subsys_ = std::move(subnqn);
}

void Connection::connect(Cmd &c, uint16_t slot) {
  const uint8_t *s = c.sqe.b.data();
  const uint16_t recfmt = wire::get16(s, 40), qid = wire::get16(s, 42), sqsize = wire::get16(s, 44);
  const uint8_t cattr = s[46];
  const uint32_t kato = wire::get32(s, 48);
  const auto bad = [&](bool in_data, uint16_t offset, const std::string &why) {
    refuse(slot, kStatusConnectInvalidParam, why, invalid_param(in_data, offset));
  };
  if (ctrl_) return bad(false, 42, "second Connect on a connected queue");
  if (recfmt != 0) return refuse(slot, kStatusConnectFormat, fmt::format("record format {} (only 0 exists)", recfmt));
  if (c.data_len < kConnectDataLen)
    return refuse(slot, kStatusSglLengthInvalid, fmt::format("{} bytes of Connect data, {} needed", c.data_len, kConnectDataLen));
  const ConnectData d = decode_connect_data(c.buf);
  connect_host_ = d.hostnqn;
  const uint32_t entries = reg_.config().queue_entries;
  if (sqsize == 0 || sqsize >= entries)
    return bad(false, 44, fmt::format("SQSIZE {} (0's based) outside 1..{}", sqsize, entries - 1));
  const std::shared_ptr<Subsystem> sub = reg_.find_subsystem(d.subnqn);
  if (!sub || !port_.serves(d.subnqn)) return bad(true, 256, fmt::format("unknown subsystem '{}' on this port", d.subnqn));
  if (!tls_identity_.empty() && (d.hostnqn != tls_host_ || d.subnqn != tls_subsys_))
    return refuse(
        slot, kStatusConnectInvalidHost,
        fmt::format("Connect as host {} to {} over the secure channel of identity '{}'", d.hostnqn, d.subnqn, tls_identity_));
  if (!sub->discovery && !sub->host_allowed(d.hostnqn))
    return refuse(slot, kStatusConnectInvalidHost, fmt::format("host {} is not allowed on {}", d.hostnqn, d.subnqn));
  if (qid == 0) {
    if (d.cntlid != kDynamicCntlid)
      return bad(true, 16, fmt::format("admin Connect to controller {:#x}, not 0xffff (dynamic)", d.cntlid));
    ctrl_ = reg_.create_controller(sub, port_, d.hostnqn, d.hostid, kato);
    if (!ctrl_) return refuse(slot, kStatusConnectCtrlBusy, "no controller id left");
    log().info("{}: host {} connected to {} as controller {} (kato {} ms)", label_, d.hostnqn, d.subnqn, ctrl_->cntlid, kato);
  } else {
    auto ctrl = reg_.find_controller(*sub, d.cntlid);
    if (!ctrl || ctrl->dead) return bad(true, 16, fmt::format("I/O Connect to controller {} that does not exist", d.cntlid));
    if (ctrl->hostnqn != d.hostnqn)
      return bad(true, 512,
                 fmt::format("I/O Connect from host {} to controller {} of host {}", d.hostnqn, d.cntlid, ctrl->hostnqn));
    std::lock_guard lk(ctrl->mu);
    if (!(ctrl->csts & kCstsRdy))
      return refuse(slot, kStatusSeqError, fmt::format("I/O Connect to controller {} before CC.EN", d.cntlid));
    // As nvmet: any queue id up to the maximum, Set Features Number of
    // Queues or not.
    const uint32_t max = reg_.config().max_io_queues;
    if (qid > max) return bad(false, 42, fmt::format("queue id {} above the maximum {}", qid, max));
    if (ctrl->io_qids.count(qid)) return bad(false, 42, fmt::format("queue id {} is connected already", qid));
    ctrl->io_qids.insert(qid);
    ctrl_ = ctrl;
    io_.io_queue_connected(+1);
  }
  qid_ = qid;
  sqsize_ = sqsize + 1u;
  sqflow_disabled_ = cattr & kConnectDisableSqFlow;
  label_ = fmt::format("port {} {} cntlid {}", port_.cfg.id, peer_, ctrl_->cntlid);
  ctrl_->touch();
  complete(slot, 0, ctrl_->cntlid | begin_authentication(d.hostnqn, d.subnqn));
}

void Connection::property_get(Cmd &c, uint16_t slot) {
  const uint32_t off = wire::get32(c.sqe.b.data(), 44);
  const bool eight = c.sqe.b[40] & 1;
  uint64_t v = 0;
  std::lock_guard lk(ctrl_->mu);
  switch (off) {
  case kRegCap: v = capabilities(reg_.config().queue_entries); break;
  case kRegVs: v = kNvmeVersion; break;
  case kRegCc: v = ctrl_->cc; break;
  case kRegCsts: v = ctrl_->csts; break;
  default: return refuse(slot, kStatusInvalidField, fmt::format("Property Get of offset {:#x}", off));
  }
  if (!eight) v &= 0xffffffff;
  complete(slot, 0, static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32));
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

void Connection::property_set(Cmd &c, uint16_t slot) {
  const uint32_t off = wire::get32(c.sqe.b.data(), 44);
  const auto v = static_cast<uint32_t>(wire::get64(c.sqe.b.data(), 48));
  if (off != kRegCc) return refuse(slot, kStatusInvalidField, fmt::format("Property Set of offset {:#x} (only CC)", off));
  std::lock_guard lk(ctrl_->mu);
  const uint32_t old = ctrl_->cc;
  ctrl_->cc = v;
  if ((v & kCcEnable) && !(old & kCcEnable)) {
    const std::string why = enable_refusal(v, ctrl_->subsys.discovery);
    if (why.empty()) {
      ctrl_->csts = kCstsRdy;
    } else {
      ctrl_->csts = kCstsCfs;
      log().warn("{}: controller {} of host {}: CSTS.CFS (fatal status) on enable: {}", label_, ctrl_->cntlid, ctrl_->hostnqn,
                 why);
    }
  } else if (!(v & kCcEnable) && (old & kCcEnable)) {
    ctrl_->csts = 0; // controller reset
  }
  if ((v & kCcShnMask) && !(old & kCcShnMask)) ctrl_->csts = (ctrl_->csts & ~kCstsShstMask) | kCstsShstComplete;
  complete(slot, 0);
}

} // namespace mpnvme::target
