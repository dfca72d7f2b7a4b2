// SPDX-License-Identifier: GPL-2.0-only
// SubmissionQueue: the admin commands the Linux host relies on (Identify,
// Get and Set Features, Keep Alive, Abort, Asynchronous Event Request).
#include <algorithm>
#include <cstring>
#include <fmt/format.h>

#include "lib/base/log.hpp"
#include "lib/wire/wire.hpp"
#include "mpnvme-target/core/submission_queue.hpp"

namespace mpnvme::target {
using namespace nvme;

void SubmissionQueue::exec_admin(Request &r) {
  switch (r.sqe.opcode()) {
  case kAdminIdentify: return identify(r);
  case kAdminGetLogPage: return get_log_page(r);
  case kAdminSetFeatures: return features(r, true);
  case kAdminGetFeatures: return features(r, false);
  case kAdminKeepAlive: ctrl_->touch(); return complete(r, 0);
  case kAdminAbort: return complete(r, 0, 1); // dword 0 bit 0: the command was not aborted
  case kAdminAsyncEvent:
    if (aers_.size() >= kAerLimit)
      return refuse(r, kStatusAerLimit, fmt::format("more than {} Asynchronous Event Requests outstanding", kAerLimit));
    r.parked = true; // until an event; deliver_aens completes it
    aers_.push_back(&r);
    return deliver_aens();
  default: return refuse(r, kStatusInvalidOpcode, fmt::format("admin opcode {:#04x} is not supported", r.sqe.opcode()));
  }
}

void SubmissionQueue::identify(Request &r) {
  const uint8_t cns = r.sqe.cdw(10) & 0xff;
  uint8_t *buf = buffer(r, kIdentifyLen);
  if (!buf) return complete(r, kStatusInternal);
  std::memset(buf, 0, kIdentifyLen);
  switch (cns) {
  case kCnsController: return identify_controller(r, buf);
  case kCnsNamespace: return identify_namespace(r, buf);
  case kCnsActiveNsList: return identify_active_ns_list(r, buf);
  case kCnsNsDescList: return identify_ns_descriptors(r, buf);
  case kCnsCsiNamespace:
  case kCnsCsiController: return identify_nvm_command_set(r, buf);
  default: return refuse(r, kStatusInvalidField, fmt::format("Identify CNS {:#x} is not supported", cns));
  }
}

// CNS 01h. Field layout from libnvme's struct nvme_id_ctrl (little-endian host).
void SubmissionQueue::identify_controller(Request &r, uint8_t *buf) {
  const Subsystem &sub = ctrl_->subsys;
  const TargetConfig &cfg = reg_.config();
  auto *id = reinterpret_cast<nvme_id_ctrl *>(buf);
  id->vid = id->ssvid = 0x1d1d; // PCI vendor id fields: unassigned for fabrics
  put_padded(reinterpret_cast<uint8_t *>(id->sn), sizeof id->sn, sub.cfg.serial);
  put_padded(reinterpret_cast<uint8_t *>(id->mn), sizeof id->mn, sub.cfg.model);
  put_padded(reinterpret_cast<uint8_t *>(id->fr), sizeof id->fr, MPNVME_VERSION);
  id->rab = 6;
  id->cmic = sub.discovery ? 0 : 0x0b; // multi-port, multi-controller, ANA reporting
  id->mdts = cfg.mdts;
  id->cntlid = ctrl_->cntlid;
  id->ver = kNvmeVersion;
  id->oaes = sub.discovery ? 1u << 31 : 1u << 11; // discovery log / ANA change notices
  id->ctratt = 1;                                 // 128-bit host identifier
  id->cntrltype = sub.discovery ? 2 : 1;          // discovery / I/O controller
  id->acl = 3;
  id->aerl = kAerLimit - 1;
  id->frmw = 0x3; // one slot, read only
  id->lpa = 0x6;  // command effects log, extended data for Get Log Page
  id->kas = 10;   // keep alive granularity 1 s
  if (!sub.discovery) {
    id->anatt = 10;
    id->anacap = 0x5f; // all states reported, ANAGRPID does not change
    id->anagrpmax = id->nanagrpid = kMaxAnaGroups;
  }
  id->sqes = 0x66;
  id->cqes = 0x44;
  id->maxcmd = static_cast<uint16_t>(cfg.queue_entries);
  uint32_t nn = 0;
  for (auto &[id_, ns] : sub.namespaces)
    nn = std::max(nn, id_);
  id->nn = id->mnan = sub.discovery ? 0 : std::max(nn, 1u);
  id->oncs = sub.discovery ? 0 : (NVME_CTRL_ONCS_DSM | NVME_CTRL_ONCS_WRITE_ZEROES | NVME_CTRL_ONCS_RESERVATIONS);
  id->vwc = sub.discovery ? 0 : 1; // Flush matters for file namespaces
  id->sgls = 1u | (1u << 20);      // SGLs supported, address used as offset
  std::memcpy(id->subnqn, sub.cfg.nqn.data(), std::min<size_t>(sub.cfg.nqn.size(), sizeof id->subnqn - 1));
  id->ioccsz = (64 + port_.cfg.inline_data_size) / 16;
  id->iorcsz = 1;
  id->icdoff = 0;
  id->fcatt = 0; // dynamic controller model
  id->msdbd = 1;
  id->psd[0].mp = 0x9c4; // 25 W
  return_data(r, buf, kIdentifyLen);
}

// CNS 00h: an inactive namespace id reads as zeroes, as nvmet answers.
void SubmissionQueue::identify_namespace(Request &r, uint8_t *buf) {
  const Subsystem &sub = ctrl_->subsys;
  const uint32_t nsid = r.sqe.nsid();
  if (sub.discovery) return refuse(r, kStatusInvalidOpcode, "Identify Namespace on a discovery controller");
  auto it = sub.namespaces.find(nsid);
  if (it == sub.namespaces.end()) {
    if (nsid == 0 || nsid == 0xffffffff) return refuse(r, kStatusInvalidNs, fmt::format("Identify Namespace {:#x}", nsid));
    return return_data(r, buf, kIdentifyLen);
  }
  const Namespace &ns = it->second;
  auto *id = reinterpret_cast<nvme_id_ns *>(buf);
  id->nsze = id->ncap = id->nuse = ns.backend->blocks();
  id->nlbaf = 0; // one format (0's based)
  id->flbas = 0;
  id->nmic = 1; // may be shared by controllers
  // Every reservation type, Ignore Existing Key as NVMe 1.3 defines it; no
  // persistence through a power loss.
  id->rescap = NVME_NS_RESCAP_WE | NVME_NS_RESCAP_EA | NVME_NS_RESCAP_WERO | NVME_NS_RESCAP_EARO | NVME_NS_RESCAP_WEAR |
               NVME_NS_RESCAP_EAAR | NVME_NS_RESCAP_IEK_13;
  id->dlfeat = ns.backend->deallocated_reads_zero() ? 0x9 : 0;
  id->anagrpid = ns.cfg.anagrpid;
  std::memcpy(id->nguid, ns.cfg.nguid.data(), sizeof id->nguid);
  id->lbaf[0].ds = ns.cfg.lba == 4096 ? 12 : 9;
  return_data(r, buf, kIdentifyLen);
}

// CNS 02h: active namespace ids above NSID, ascending. No id lies above
// FFFFFFFEh, and FFFFFFFFh is the broadcast value: the specification, and
// nvmet, answer Invalid Namespace for both.
void SubmissionQueue::identify_active_ns_list(Request &r, uint8_t *buf) {
  if (r.sqe.nsid() >= 0xfffffffe)
    return refuse(r, kStatusInvalidNs, fmt::format("active namespace list above {:#x}", r.sqe.nsid()));
  size_t n = 0;
  for (auto &[id, ns] : ctrl_->subsys.namespaces)
    if (id > r.sqe.nsid() && n < 1024) wire::put32(buf, 4 * n++, id);
  return_data(r, buf, kIdentifyLen);
}

// CNS 03h: NGUID, UUID and command set of a namespace (Linux multipath
// matches namespaces across controllers by them).
void SubmissionQueue::identify_ns_descriptors(Request &r, uint8_t *buf) {
  const uint32_t nsid = r.sqe.nsid();
  auto it = ctrl_->subsys.namespaces.find(nsid);
  if (it == ctrl_->subsys.namespaces.end())
    return refuse(r, kStatusInvalidNs, fmt::format("descriptor list of namespace {:#x}", nsid));
  uint8_t *b = buf;
  size_t o = 0;
  b[o] = NVME_NIDT_NGUID, b[o + 1] = NVME_NIDT_NGUID_LEN;
  std::memcpy(b + o + 4, it->second.cfg.nguid.data(), 16);
  o += 20;
  b[o] = NVME_NIDT_UUID, b[o + 1] = NVME_NIDT_UUID_LEN;
  std::memcpy(b + o + 4, it->second.cfg.uuid.data(), 16);
  o += 20;
  b[o] = NVME_NIDT_CSI, b[o + 1] = NVME_NIDT_CSI_LEN;
  b[o + 4] = kCsiNvm;
  return_data(r, buf, kIdentifyLen);
}

// CNS 05h/06h: what a host that enabled with CC.CSS 110b may ask: the NVM
// command set's own structures, which hold nothing we need to report (no
// protection information, no extra limits), as nvmet answers.
void SubmissionQueue::identify_nvm_command_set(Request &r, uint8_t *buf) {
  const uint8_t cns = r.sqe.cdw(10) & 0xff;
  const uint8_t csi = r.sqe.cdw(11) >> 24;
  if (csi != kCsiNvm) return refuse(r, kStatusInvalidField, fmt::format("Identify CNS {:#x} for command set {}", cns, csi));
  if (cns == kCnsCsiNamespace && !ctrl_->subsys.namespaces.count(r.sqe.nsid()))
    return refuse(r, kStatusInvalidNs, fmt::format("NVM Identify Namespace {:#x}", r.sqe.nsid()));
  return_data(r, buf, kIdentifyLen);
}

// Keep Alive Timer and Asynchronous Event Configuration live in the
// controller: read and written under its lock, answered after.
uint32_t SubmissionQueue::controller_feature(uint8_t fid, bool set, uint32_t v) {
  std::lock_guard lk(ctrl_->mu);
  uint32_t &f = fid == kFeatKeepAlive ? ctrl_->kato_ms : ctrl_->aen_config;
  if (set) f = v;
  return f;
}

void SubmissionQueue::features(Request &r, bool set) {
  const uint8_t fid = r.sqe.cdw(10) & 0xff;
  const uint32_t v = r.sqe.cdw(11);
  switch (fid) {
  case kFeatNumQueues: {
    // As nvmet: every controller may use the target's maximum, whatever the
    // host asked for; the Linux host takes the smaller of the two.
    if (set && ((v & 0xffff) == 0xffff || (v >> 16) == 0xffff))
      return refuse(r, kStatusInvalidField, "Number of Queues of 65536 (0xffff, 0's based)");
    const uint32_t g = reg_.config().max_io_queues - 1;
    return complete(r, 0, g | g << 16);
  }
  case kFeatKeepAlive:
  case kFeatAsyncEvent: return complete(r, 0, controller_feature(fid, set, v));
  case kFeatVolatileWc: return complete(r, 0, 1); // enabled
  case kFeatHostId: {
    if (set) return refuse(r, kStatusSeqError, "Set Features Host Identifier after Connect (nvmet refuses it too)");
    uint8_t *buf = buffer(r, 16);
    if (!buf) return complete(r, kStatusInternal);
    std::memcpy(buf, ctrl_->hostid.data(), 16);
    return return_data(r, buf, 16);
  }
  case kFeatArbitration:
  case kFeatPowerMgmt:
  case kFeatTempThresh:
  case kFeatErrRecovery:
  case kFeatIrqCoalesce: return complete(r, 0, 0);
  default: return refuse(r, kStatusInvalidField, fmt::format("{} Features of feature {:#04x}", set ? "Set" : "Get", fid));
  }
}

// Complete parked Async Event Requests with pending events (ANA and
// discovery log changes), those the host asked for.
void SubmissionQueue::deliver_aens() {
  if (!ctrl_ || qid_ != 0) return;
  std::vector<std::pair<Request *, uint32_t>> ready;
  {
    std::lock_guard lk(ctrl_->mu);
    while (!ctrl_->aen_events.empty() && !aers_.empty()) {
      const uint32_t ev = ctrl_->aen_events.front();
      ctrl_->aen_events.pop_front();
      // Only the notices the host asked for (Asynchronous Event Configuration).
      if (ev == kAenAnaChange && !(ctrl_->aen_config & (1u << 11))) continue;
      if (ev == kAenDiscoveryChange && !(ctrl_->aen_config & (1u << 31))) continue;
      ready.emplace_back(aers_.front(), ev);
      aers_.pop_front();
    }
  }
  for (auto [r, ev] : ready) {
    r->parked = false;
    complete(*r, 0, ev);
  }
}

} // namespace mpnvme::target
