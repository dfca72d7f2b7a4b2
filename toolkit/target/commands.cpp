// Connection: command semantics. Fabrics (Connect, Property Get/Set,
// Disconnect), the admin commands the Linux host relies on, and the NVM
// I/O commands against the namespace backends.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include <nvme/types.h>

#include "connection.hpp"
#include "log.hpp"
#include "wire.hpp"

namespace mpnvme::target {
using namespace nvme;
using wire::put16;
using wire::put32;
using wire::put64;

namespace {
constexpr uint16_t kSeqError = make_status(0, 0x0c);        // Command Sequence Error
constexpr uint16_t kInvalidNs = make_status(0, 0x0b, true); // Invalid Namespace or Format
constexpr uint16_t kSglLengthInvalid = make_status(0, 0x0f, true);
constexpr uint16_t kAerLimit = make_status(1, 0x05); // Asynchronous Event Request Limit Exceeded
constexpr uint16_t kCtrlBusy = make_status(1, 0x81); // Connect Controller Busy
constexpr uint16_t kAnaInaccessible = make_status(3, 0x02);
constexpr uint16_t kAnaPersistentLoss = make_status(3, 0x01);
constexpr uint16_t kAnaTransition = make_status(3, 0x03);
constexpr uint32_t kVersion = 0x10300; // NVMe 1.3, as nvmet reports
constexpr unsigned kAerLimitCount = 4;
constexpr uint32_t kMaxAnaGroups = 128;

// Data transfer direction from the opcode (bits 1:0): 01 host to controller.
bool host_to_ctrl(const Sqe &s) {
  if (s.opcode() == kFabricsOpcode) return s.fctype() == kFctConnect;
  return (s.opcode() & 3) == 1;
}
uint32_t invalid_param(bool in_data, uint16_t offset) { return (in_data ? 1u << 16 : 0u) | offset; }
void put_str(uint8_t *dst, size_t n, const std::string &s) { // space padded, as Identify wants
  std::memset(dst, ' ', n);
  std::memcpy(dst, s.data(), std::min(n, s.size()));
}
} // namespace

// A new command (capsule and any in-capsule data received): fetch the rest of
// its data with an R2T, or execute it.
void Connection::dispatch(uint16_t slot) {
  Cmd &c = cmds_[slot];
  if (host_to_ctrl(c.sqe) && c.sqe.sgl_len() > 0 && c.data_len == 0) {
    const uint32_t len = c.sqe.sgl_len();
    const uint64_t mdts = 4096ull << reg_.config().mdts;
    if (c.sqe.sgl_type() != kSglTransportDataBlock) return complete(slot, make_status(0, 0x11, true)); // SGL type invalid
    if (len > mdts) return complete(slot, kSglLengthInvalid);
    if (!ensure_buf(c, len)) return complete(slot, kStatusInternal);
    c.data_len = len;
    return send_r2t(slot);
  }
  execute(slot);
}

void Connection::execute(uint16_t slot) {
  Cmd &c = cmds_[slot];
  const bool fabrics = c.sqe.opcode() == kFabricsOpcode;
  if (!ctrl_ && !(fabrics && c.sqe.fctype() == kFctConnect)) return complete(slot, kSeqError); // Connect first
  if (fabrics) {
    exec_fabrics(c, slot);
  } else if (qid_ == 0) {
    if (!(ctrl_->csts & kCstsRdy)) return complete(slot, kSeqError); // not enabled
    exec_admin(c, slot);
  } else {
    exec_io(c, slot);
  }
}

void Connection::complete(uint16_t slot, uint16_t status, uint32_t dw0, uint32_t dw1) {
  Cmd &c = cmds_[slot];
  c.status = status;
  c.dw0 = dw0;
  c.dw1 = dw1;
  if (status) {
    stats_.errors++;
    log().debug("{} qid {}: cid {:#x} {} failed: {}", label_, qid_, c.cid, opcode_name(c.sqe.opcode(), qid_ == 0),
                status_string(status));
  }
  finish(slot);
}

void Connection::return_data(Cmd &c, uint16_t slot, uint32_t len) {
  // The host says how much it wants (SGL length); send at most that.
  c.out = c.buf;
  c.out_len = std::min(len, c.sqe.sgl_len());
  complete(slot, 0);
}

bool Connection::exec_fabrics(Cmd &c, uint16_t slot) {
  switch (c.sqe.fctype()) {
  case kFctConnect: connect(c, slot); break;
  case kFctPropertyGet: property_get(c, slot); break;
  case kFctPropertySet: property_set(c, slot); break;
  case kFctDisconnect:
    complete(slot, 0);
    close("Disconnect");
    break;
  default: complete(slot, kStatusInvalidOpcode);
  }
  return true;
}

void Connection::connect(Cmd &c, uint16_t slot) {
  const uint8_t *s = c.sqe.b.data();
  const uint16_t recfmt = wire::get16(s, 40), qid = wire::get16(s, 42), sqsize = wire::get16(s, 44);
  const uint8_t cattr = s[46];
  const uint32_t kato = wire::get32(s, 48);
  if (ctrl_) return complete(slot, kStatusConnectInvalidParam, invalid_param(false, 42)); // second Connect
  if (recfmt != 0) return complete(slot, make_status(1, 0x80, true));                     // incompatible format
  if (c.data_len < kConnectDataLen) return complete(slot, kSglLengthInvalid);
  const ConnectData d = decode_connect_data(c.buf);
  const uint32_t entries = reg_.config().queue_entries;
  if (sqsize == 0 || sqsize >= entries) return complete(slot, kStatusConnectInvalidParam, invalid_param(false, 44));
  Subsystem *sub = reg_.find_subsystem(d.subnqn);
  if (!sub || !port_.serves(d.subnqn)) {
    log().info("{}: Connect from {} to unknown subsystem '{}'", label_, d.hostnqn, d.subnqn);
    return complete(slot, kStatusConnectInvalidParam, invalid_param(true, 256));
  }
  if (!sub->discovery && !sub->host_allowed(d.hostnqn)) {
    log().warn("{}: host {} is not allowed on {}", label_, d.hostnqn, d.subnqn);
    return complete(slot, kStatusConnectInvalidHost);
  }
  if (qid == 0) {
    if (d.cntlid != kDynamicCntlid) return complete(slot, kStatusConnectInvalidParam, invalid_param(true, 16));
    ctrl_ = reg_.create_controller(*sub, port_, d.hostnqn, d.hostid, kato);
    if (!ctrl_) return complete(slot, kCtrlBusy);
    log().info("{}: host {} connected to {} as controller {} (kato {} ms)", label_, d.hostnqn, d.subnqn, ctrl_->cntlid, kato);
  } else {
    auto ctrl = reg_.find_controller(*sub, d.cntlid);
    if (!ctrl || ctrl->dead) return complete(slot, kStatusConnectInvalidParam, invalid_param(true, 16));
    if (ctrl->hostnqn != d.hostnqn) return complete(slot, kStatusConnectInvalidParam, invalid_param(true, 512));
    std::lock_guard lk(ctrl->mu);
    if (!(ctrl->csts & kCstsRdy)) return complete(slot, kSeqError);
    if (qid > ctrl->granted_queues || ctrl->io_qids.count(qid))
      return complete(slot, kStatusConnectInvalidParam, invalid_param(false, 42));
    ctrl->io_qids.insert(qid);
    ctrl_ = ctrl;
  }
  qid_ = qid;
  sqsize_ = sqsize + 1u;
  sqflow_disabled_ = cattr & kConnectDisableSqFlow;
  label_ = fmt::format("port {} {} cntlid {}", port_.cfg.id, peer_, ctrl_->cntlid);
  ctrl_->touch();
  complete(slot, 0, ctrl_->cntlid);
}

void Connection::property_get(Cmd &c, uint16_t slot) {
  const uint32_t off = wire::get32(c.sqe.b.data(), 44);
  const bool eight = c.sqe.b[40] & 1;
  uint64_t v = 0;
  std::lock_guard lk(ctrl_->mu);
  switch (off) {
  case kRegCap:
    // MQES, CQR, TO 7.5 s, CSS NVM, MPSMIN = MPSMAX = 4 KiB.
    v = (reg_.config().queue_entries - 1) | (1ull << 16) | (15ull << 24) | (1ull << 37);
    break;
  case kRegVs: v = kVersion; break;
  case kRegCc: v = ctrl_->cc; break;
  case kRegCsts: v = ctrl_->csts; break;
  default: return complete(slot, kStatusInvalidField);
  }
  if (!eight) v &= 0xffffffff;
  complete(slot, 0, static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32));
}

void Connection::property_set(Cmd &c, uint16_t slot) {
  const uint32_t off = wire::get32(c.sqe.b.data(), 44);
  const auto v = static_cast<uint32_t>(wire::get64(c.sqe.b.data(), 48));
  if (off != kRegCc) return complete(slot, kStatusInvalidField);
  std::lock_guard lk(ctrl_->mu);
  const uint32_t old = ctrl_->cc;
  ctrl_->cc = v;
  if ((v & kCcEnable) && !(old & kCcEnable)) {
    const uint32_t iosqes = (v >> 16) & 0xf, iocqes = (v >> 20) & 0xf, mps = (v >> 7) & 0xf, css = (v >> 4) & 7;
    if ((!ctrl_->subsys.discovery && (iosqes != 6 || iocqes != 4)) || mps != 0 || css != 0)
      ctrl_->csts = kCstsCfs;
    else
      ctrl_->csts = kCstsRdy;
  } else if (!(v & kCcEnable) && (old & kCcEnable)) {
    ctrl_->csts = 0; // controller reset
  }
  if ((v & kCcShnMask) && !(old & kCcShnMask)) ctrl_->csts = (ctrl_->csts & ~kCstsShstMask) | kCstsShstComplete;
  complete(slot, 0);
}

bool Connection::exec_admin(Cmd &c, uint16_t slot) {
  switch (c.sqe.opcode()) {
  case kAdminIdentify: identify(c, slot); break;
  case kAdminGetLogPage: get_log_page(c, slot); break;
  case kAdminSetFeatures: features(c, slot, true); break;
  case kAdminGetFeatures: features(c, slot, false); break;
  case kAdminKeepAlive:
    ctrl_->touch();
    complete(slot, 0);
    break;
  case 0x08: complete(slot, 0, 1); break; // Abort: not aborted
  case kAdminAsyncEvent: {
    std::lock_guard lk(ctrl_->mu);
    if (ctrl_->aer_cids.size() >= kAerLimitCount) {
      complete(slot, kAerLimit);
      break;
    }
    c.aer = true; // parked until an event; deliver_aens completes it
    ctrl_->aer_cids.push_back(slot);
    break;
  }
  default: complete(slot, kStatusInvalidOpcode);
  }
  if (c.aer) deliver_aens();
  return true;
}

void Connection::identify(Cmd &c, uint16_t slot) {
  const uint8_t cns = c.sqe.cdw(10) & 0xff;
  const uint32_t nsid = c.sqe.nsid();
  if (!ensure_buf(c, kIdentifyLen)) return complete(slot, kStatusInternal);
  uint8_t *b = c.buf;
  std::memset(b, 0, kIdentifyLen);
  const Subsystem &sub = ctrl_->subsys;
  const TargetConfig &cfg = reg_.config();
  switch (cns) {
  case kCnsController: {
    // Field layout from libnvme's struct nvme_id_ctrl (little-endian host).
    auto *id = reinterpret_cast<nvme_id_ctrl *>(b);
    id->vid = id->ssvid = 0x1d1d; // PCI vendor id fields: unassigned for fabrics
    put_str(reinterpret_cast<uint8_t *>(id->sn), sizeof id->sn, sub.cfg.serial);
    put_str(reinterpret_cast<uint8_t *>(id->mn), sizeof id->mn, sub.cfg.model);
    put_str(reinterpret_cast<uint8_t *>(id->fr), sizeof id->fr, "0.1.0");
    id->rab = 6;
    id->cmic = sub.discovery ? 0 : 0x0b; // multi-port, multi-controller, ANA reporting
    id->mdts = cfg.mdts;
    id->cntlid = ctrl_->cntlid;
    id->ver = kVersion;
    id->oaes = sub.discovery ? 1u << 31 : 1u << 11; // discovery log / ANA change notices
    id->ctratt = 1;                                 // 128-bit host identifier
    id->cntrltype = sub.discovery ? 2 : 1;          // discovery / I/O controller
    id->acl = 3;
    id->aerl = kAerLimitCount - 1;
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
    for (auto &[nsid, ns] : sub.namespaces)
      nn = std::max(nn, nsid);
    id->nn = id->mnan = sub.discovery ? 0 : std::max(nn, 1u);
    id->oncs = sub.discovery ? 0 : (kOncsDsm | kOncsWriteZeroes);
    id->vwc = sub.discovery ? 0 : 1; // Flush matters for file namespaces
    id->sgls = 1u | (1u << 20);      // SGLs supported, address used as offset
    std::memcpy(id->subnqn, sub.cfg.nqn.data(), std::min<size_t>(sub.cfg.nqn.size(), sizeof id->subnqn - 1));
    id->ioccsz = (64 + port_.cfg.inline_data_size) / 16;
    id->iorcsz = 1;
    id->icdoff = 0;
    id->fcatt = 0; // dynamic controller model
    id->msdbd = 1;
    id->psd[0].mp = 0x9c4; // 25 W
    return return_data(c, slot, kIdentifyLen);
  }
  case kCnsNamespace: {
    if (sub.discovery) return complete(slot, kStatusInvalidOpcode);
    auto it = sub.namespaces.find(nsid);
    if (it == sub.namespaces.end()) {
      if (nsid == 0 || nsid == 0xffffffff) return complete(slot, kInvalidNs);
      return return_data(c, slot, kIdentifyLen); // inactive: all zeroes
    }
    const Namespace &ns = it->second;
    auto *id = reinterpret_cast<nvme_id_ns *>(b);
    id->nsze = id->ncap = id->nuse = ns.backend->blocks();
    id->nlbaf = 0; // one format (0's based)
    id->flbas = 0;
    id->nmic = 1;                                               // may be shared by controllers
    id->dlfeat = ns.backend->kind() == Backing::File ? 0 : 0x9; // deallocated blocks read as zeroes
    id->anagrpid = ns.cfg.anagrpid;
    std::memcpy(id->nguid, ns.cfg.nguid.data(), sizeof id->nguid);
    id->lbaf[0].ds = ns.cfg.lba == 4096 ? 12 : 9;
    return return_data(c, slot, kIdentifyLen);
  }
  case kCnsActiveNsList: {
    size_t n = 0;
    for (auto &[id, ns] : sub.namespaces)
      if (id > nsid && n < 1024) put32(b, 4 * n++, id);
    return return_data(c, slot, kIdentifyLen);
  }
  case kCnsNsDescList: {
    auto it = sub.namespaces.find(nsid);
    if (it == sub.namespaces.end()) return complete(slot, kInvalidNs);
    size_t o = 0;
    b[o] = 2, b[o + 1] = 16; // NGUID
    std::memcpy(b + o + 4, it->second.cfg.nguid.data(), 16);
    o += 20;
    b[o] = 3, b[o + 1] = 16; // UUID
    std::memcpy(b + o + 4, it->second.cfg.uuid.data(), 16);
    o += 20;
    b[o] = 4, b[o + 1] = 1; // CSI: NVM
    return return_data(c, slot, kIdentifyLen);
  }
  default: return complete(slot, kStatusInvalidField);
  }
}

void Connection::get_log_page(Cmd &c, uint16_t slot) {
  const uint32_t cdw10 = c.sqe.cdw(10), cdw11 = c.sqe.cdw(11);
  const uint8_t lid = cdw10 & 0xff, lsp = (cdw10 >> 8) & 0xf;
  const uint64_t len = ((static_cast<uint64_t>(cdw11 & 0xffff) << 16 | (cdw10 >> 16)) + 1) * 4;
  const uint64_t off = static_cast<uint64_t>(c.sqe.cdw(13)) << 32 | c.sqe.cdw(12);
  // NUMD comes from the host: the transfer must fit the data buffer the host
  // described and our MDTS, or a hostile host could make us allocate 16 GiB.
  if (len != c.sqe.sgl_len()) return complete(slot, kSglLengthInvalid);
  if (len > (4096ull << reg_.config().mdts)) return complete(slot, kStatusInvalidField);
  const Subsystem &sub = ctrl_->subsys;
  std::vector<uint8_t> page;
  switch (lid) {
  case 0x01: page.assign(64, 0); break; // error information: empty
  case 0x02:
    page.assign(512, 0);
    put16(page.data(), 1, 273 + 20);
    break;   // SMART: 20 C
  case 0x03: // firmware slot
    page.assign(512, 0);
    page[0] = 1;
    std::memcpy(page.data() + 8, "0.1.0   ", 8);
    break;
  case 0x04: page.assign(4096, 0); break; // changed namespaces: none
  case 0x05: {                            // commands supported and effects
    page.assign(4096, 0);
    for (uint8_t op : {kAdminGetLogPage, kAdminIdentify, kAdminSetFeatures, kAdminGetFeatures, kAdminAsyncEvent, kAdminKeepAlive,
                       uint8_t(0x08)})
      put32(page.data(), op * 4u, 1);
    for (uint8_t op : {kCmdFlush, kCmdWrite, kCmdRead, kCmdWriteZeroes, kCmdDsm})
      put32(page.data(), 1024 + op * 4u, 1);
    break;
  }
  case 0x0c: { // ANA
    if (sub.discovery) return complete(slot, kStatusInvalidField);
    const bool groups_only = lsp & 1;
    const auto states = port_.ana_groups();
    std::map<uint32_t, std::vector<uint32_t>> groups; // every group with a namespace or a state
    for (auto &[id, ns] : sub.namespaces)
      groups[ns.cfg.anagrpid].push_back(id);
    for (auto &[g, st] : states)
      groups[g];
    page.assign(16, 0);
    put64(page.data(), 0, port_.ana_change_count());
    put16(page.data(), 8, static_cast<uint16_t>(groups.size()));
    for (auto &[g, nsids] : groups) {
      const size_t at = page.size();
      page.resize(at + 32 + (groups_only ? 0 : 4 * nsids.size()));
      put32(page.data(), at, g);
      put32(page.data(), at + 4, groups_only ? 0 : static_cast<uint32_t>(nsids.size()));
      put64(page.data(), at + 8, port_.ana_change_count());
      page[at + 16] = static_cast<uint8_t>(port_.ana(g));
      for (size_t k = 0; !groups_only && k < nsids.size(); k++)
        put32(page.data(), at + 32 + 4 * k, nsids[k]);
    }
    break;
  }
  case 0x70: { // discovery
    if (!sub.discovery) return complete(slot, kStatusInvalidField);
    page.assign(1024, 0);
    uint64_t records = 0;
    for (auto &pp : reg_.ports()) {
      const PortConfig &pc = pp->cfg;
      for (auto &sc : reg_.config().subsystems) {
        if (!pp->serves(sc.nqn)) continue;
        Subsystem *s = reg_.find_subsystem(sc.nqn);
        if (!s || !s->host_allowed(ctrl_->hostnqn)) continue;
        const size_t at = page.size();
        page.resize(at + 1024, 0);
        uint8_t *e = page.data() + at;
        e[0] = pc.transport == Transport::Tcp ? 3 : 3; // TRTYPE TCP (MPTCP is TCP on the wire)
        e[1] = pc.addr.ipv6 ? 2 : 1;                   // ADRFAM
        e[2] = 2;                                      // SUBTYPE: NVMe subsystem
        e[3] = 0;                                      // TREQ: not specified
        put16(e, 4, pc.id);
        put16(e, 6, 0xffff); // CNTLID: dynamic
        put16(e, 8, 32);     // ASQSZ
        put_str(e + 32, 32, pc.addr.service);
        std::memcpy(e + 256, sc.nqn.data(), std::min<size_t>(sc.nqn.size(), 255));
        put_str(e + 512, 256, pc.addr.addr);
        records++;
      }
    }
    put64(page.data(), 0, reg_.discovery_genctr());
    put64(page.data(), 8, records);
    break;
  }
  default: return complete(slot, kStatusInvalidField);
  }
  if (off > page.size() || (off & 3)) return complete(slot, kStatusInvalidField);
  const uint64_t n = std::min<uint64_t>(len, page.size() - off);
  if (!ensure_buf(c, static_cast<uint32_t>(len))) return complete(slot, kStatusInternal);
  std::memset(c.buf, 0, len);
  std::memcpy(c.buf, page.data() + off, n);
  return_data(c, slot, static_cast<uint32_t>(len));
}

void Connection::features(Cmd &c, uint16_t slot, bool set) {
  const uint8_t fid = c.sqe.cdw(10) & 0xff;
  const uint32_t v = c.sqe.cdw(11);
  std::lock_guard lk(ctrl_->mu);
  switch (fid) {
  case kFeatNumQueues: {
    const uint32_t max = reg_.config().max_io_queues;
    if (set) {
      if ((v & 0xffff) == 0xffff || (v >> 16) == 0xffff) return complete(slot, kStatusInvalidField);
      ctrl_->granted_queues = std::min({(v & 0xffff) + 1, (v >> 16) + 1, max});
    }
    const uint32_t g = (set ? ctrl_->granted_queues : max) - 1;
    return complete(slot, 0, g | g << 16);
  }
  case kFeatKeepAlive:
    if (set) ctrl_->kato_ms = v;
    return complete(slot, 0, ctrl_->kato_ms);
  case 0x0b: // asynchronous event configuration
    if (set) ctrl_->aen_config = v;
    return complete(slot, 0, ctrl_->aen_config);
  case 0x06: return complete(slot, 0, 1);                       // volatile write cache: enabled
  case 0x81: {                                                  // host identifier (128-bit, EXHID)
    if (set) return complete(slot, make_status(1, 0x0d, true)); // not changeable
    if (!ensure_buf(c, 16)) return complete(slot, kStatusInternal);
    std::memcpy(c.buf, ctrl_->hostid.data(), 16);
    return return_data(c, slot, 16);
  }
  case 0x01:
  case 0x02:
  case 0x04:
  case 0x05:
  case 0x08: // arbitration, power, temperature, error recovery, interrupt coalescing
    return complete(slot, 0, 0);
  default: return complete(slot, kStatusInvalidField);
  }
}

// Complete parked Async Event Requests with pending events (ANA changes).
void Connection::deliver_aens() {
  if (!ctrl_ || qid_ != 0) return;
  std::vector<std::pair<uint16_t, uint32_t>> ready;
  {
    std::lock_guard lk(ctrl_->mu);
    while (!ctrl_->aen_events.empty() && !ctrl_->aer_cids.empty()) {
      const uint32_t ev = ctrl_->aen_events.front();
      ctrl_->aen_events.pop_front();
      if (ev == kAenAnaChange && !(ctrl_->aen_config & (1u << 11))) continue; // host did not ask for ANA notices
      ready.emplace_back(ctrl_->aer_cids.front(), ev);
      ctrl_->aer_cids.pop_front();
    }
  }
  for (auto [slot, ev] : ready) {
    cmds_[slot].aer = false;
    complete(slot, 0, ev);
  }
}

Namespace *Connection::io_namespace(Cmd &c, uint16_t slot) {
  auto &nss = ctrl_->subsys.namespaces;
  auto it = nss.find(c.sqe.nsid());
  if (it == nss.end()) {
    complete(slot, kInvalidNs);
    return nullptr;
  }
  switch (port_.ana(it->second.cfg.anagrpid)) {
  case AnaState::Optimized:
  case AnaState::NonOptimized: return &it->second;
  case AnaState::Inaccessible: complete(slot, kAnaInaccessible); break;
  case AnaState::PersistentLoss: complete(slot, kAnaPersistentLoss); break;
  case AnaState::Change: complete(slot, kAnaTransition); break;
  }
  return nullptr;
}

bool Connection::exec_io(Cmd &c, uint16_t slot) {
  Namespace *ns = io_namespace(c, slot);
  if (!ns) return true;
  Backend &be = *ns->backend;
  const uint8_t op = c.sqe.opcode();
  const uint64_t slba = static_cast<uint64_t>(c.sqe.cdw(11)) << 32 | c.sqe.cdw(10);
  const uint64_t nlb = (c.sqe.cdw(12) & 0xffff) + 1ull;
  auto in_range = [&](uint64_t lba, uint64_t n) { return lba < be.blocks() && n <= be.blocks() - lba; };
  switch (op) {
  case kCmdRead:
  case kCmdWrite: {
    if (!in_range(slba, nlb)) return complete(slot, kStatusLbaOutOfRange), true;
    const uint64_t off = slba * be.lba(), len = nlb * be.lba();
    if (c.sqe.sgl_len() != len) return complete(slot, kSglLengthInvalid), true;
    if (op == kCmdWrite && c.data_len != len) return complete(slot, kSglLengthInvalid), true;
    switch (be.kind()) {
    case Backing::Ram:
      if (op == kCmdWrite) {
        std::memcpy(be.memory() + off, c.buf, len);
      } else {
        c.out = be.memory() + off; // sent straight from the namespace
        c.out_len = static_cast<uint32_t>(len);
      }
      return complete(slot, 0), true;
    case Backing::Null:
      if (op == kCmdRead) {
        if (!ensure_buf(c, static_cast<uint32_t>(len))) return complete(slot, kStatusInternal), true;
        std::memset(c.buf, 0, len);
        c.out = c.buf;
        c.out_len = static_cast<uint32_t>(len);
      }
      return complete(slot, 0), true;
    case Backing::File:
      if (op == kCmdRead && !ensure_buf(c, static_cast<uint32_t>(len))) return complete(slot, kStatusInternal), true;
      file_ops_++;
      io_.submit_file(*this, slot, op == kCmdRead ? FileOp::Read : FileOp::Write, be.fd(), c.buf, len, off);
      return true;
    }
    return true;
  }
  case kCmdFlush:
    if (be.kind() != Backing::File) return complete(slot, 0), true;
    file_ops_++;
    io_.submit_file(*this, slot, FileOp::Fsync, be.fd(), nullptr, 0, 0);
    return true;
  case kCmdWriteZeroes:
    if (!in_range(slba, nlb)) return complete(slot, kStatusLbaOutOfRange), true;
    if (be.kind() == Backing::File) {
      file_ops_++;
      io_.submit_file(*this, slot, FileOp::WriteZeroes, be.fd(), nullptr, nlb * be.lba(), slba * be.lba());
      return true;
    }
    be.zero(slba * be.lba(), nlb * be.lba());
    return complete(slot, 0), true;
  case kCmdDsm: {
    const uint32_t nr = (c.sqe.cdw(10) & 0xff) + 1;
    if (c.data_len < nr * kDsmRangeLen) return complete(slot, kSglLengthInvalid), true;
    if (!(c.sqe.cdw(11) & (1u << 2))) return complete(slot, 0), true; // no deallocate: hints only
    for (uint32_t i = 0; i < nr; i++) {
      const uint8_t *r = c.buf + i * kDsmRangeLen;
      const uint64_t lba = wire::get64(r, 8), n = wire::get32(r, 4);
      if (n && !in_range(lba, n)) return complete(slot, kStatusLbaOutOfRange), true;
    }
    if (be.kind() == Backing::File) {
      // One range per file operation keeps the bookkeeping simple; hosts
      // (Linux, fio) send one range per command.
      if (nr != 1) return complete(slot, kStatusInvalidField), true;
      file_ops_++;
      io_.submit_file(*this, slot, FileOp::Deallocate, be.fd(), nullptr, wire::get32(c.buf, 4) * uint64_t(be.lba()),
                      wire::get64(c.buf, 8) * be.lba());
      return true;
    }
    for (uint32_t i = 0; i < nr; i++) {
      const uint8_t *r = c.buf + i * kDsmRangeLen;
      be.zero(wire::get64(r, 8) * be.lba(), uint64_t(wire::get32(r, 4)) * be.lba());
    }
    return complete(slot, 0), true;
  }
  default: return complete(slot, kStatusInvalidOpcode), true;
  }
}

void Connection::on_file_done(uint16_t slot, int res) {
  file_ops_--;
  Cmd &c = cmds_[slot];
  if (closing_) {
    c.state = Cmd::State::Sending;
    if (!c.in_ring) release(slot);
    return;
  }
  if (res < 0) {
    log().error("{} qid {}: cid {:#x} {}: backend I/O failed: {}", label_, qid_, c.cid, opcode_name(c.sqe.opcode(), false),
                strerror(-res));
    return complete(slot, res == -ENOSPC ? make_status(0, 0x81, true) : make_status(2, 0x80)); // capacity exceeded / write fault
  }
  if (c.sqe.opcode() == kCmdRead) {
    c.out = c.buf;
    c.out_len = static_cast<uint32_t>(res);
  }
  complete(slot, 0);
}

bool Connection::poll(std::chrono::steady_clock::time_point now) {
  if (closing_) return false;
  if (port_.disabled) {
    close("port disabled");
    return false;
  }
  if (ctrl_) {
    if (qid_ == 0 && !ctrl_->dead && ctrl_->kato_expired(now)) {
      log().warn("{}: keep alive timeout ({} ms) for host {}: controller {} torn down", label_, ctrl_->kato_ms, ctrl_->hostnqn,
                 ctrl_->cntlid);
      ctrl_->dead = true;
    }
    if (ctrl_->dead) {
      close("controller torn down");
      return false;
    }
    deliver_aens();
  }
  return true;
}

} // namespace mpnvme::target
