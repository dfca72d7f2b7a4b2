// SPDX-License-Identifier: GPL-2.0-only
// SubmissionQueue: Get Log Page (error, SMART, firmware slot, changed
// namespaces, command effects, ANA, discovery).
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <iterator>
#include <map>

#include "lib/wire/wire.hpp"
#include "mpnvme-target/core/submission_queue.hpp"

namespace mpnvme::target {
using namespace nvme;
using wire::put16;
using wire::put32;
using wire::put64;

namespace {

// What a log page is built from.
struct LogContext {
  Registry &reg;
  const Subsystem &sub;
  const PortState &port;
  const std::string &hostnqn;
};
using Page = std::vector<uint8_t>;

Page error_log(const LogContext &, uint8_t) { return Page(64, 0); } // empty

Page smart_log(const LogContext &, uint8_t) {
  Page page(512, 0);
  put16(page.data(), 1, 273 + 20); // composite temperature: 20 C
  return page;
}

Page firmware_slot_log(const LogContext &, uint8_t) {
  Page page(512, 0);
  page[0] = 1; // slot 1 active
  std::memset(page.data() + 8, ' ', 8);
  std::memcpy(page.data() + 8, MPNVME_VERSION, std::min<size_t>(8, sizeof MPNVME_VERSION - 1));
  return page;
}

Page changed_ns_log(const LogContext &, uint8_t) { return Page(4096, 0); } // none

Page command_effects_log(const LogContext &, uint8_t) {
  Page page(4096, 0);
  for (uint8_t op :
       {kAdminGetLogPage, kAdminIdentify, kAdminSetFeatures, kAdminGetFeatures, kAdminAsyncEvent, kAdminKeepAlive, kAdminAbort})
    put32(page.data(), op * 4u, 1);
  for (uint8_t op : {kCmdFlush, kCmdWrite, kCmdRead, kCmdWriteZeroes, kCmdDsm})
    put32(page.data(), 1024 + op * 4u, 1);
  return page;
}

// Every group with a namespace or a state, with this port's state; LSP bit
// 0 asks for the groups without their namespace lists.
Page ana_log(const LogContext &x, uint8_t lsp) {
  const bool groups_only = lsp & 1;
  std::map<uint32_t, std::vector<uint32_t>> groups;
  for (auto &[id, ns] : x.sub.namespaces)
    groups[ns.cfg.anagrpid].push_back(id);
  for (auto &[g, st] : x.port.ana_groups())
    groups[g];
  Page page(16, 0);
  put64(page.data(), 0, x.port.ana_change_count());
  put16(page.data(), 8, static_cast<uint16_t>(groups.size()));
  for (auto &[g, nsids] : groups) {
    const size_t at = page.size();
    page.resize(at + 32 + (groups_only ? 0 : 4 * nsids.size()));
    put32(page.data(), at, g);
    put32(page.data(), at + 4, groups_only ? 0 : static_cast<uint32_t>(nsids.size()));
    put64(page.data(), at + 8, x.port.ana_change_count());
    page[at + 16] = static_cast<uint8_t>(x.port.ana(g));
    for (size_t k = 0; !groups_only && k < nsids.size(); k++)
      put32(page.data(), at + 32 + 4 * k, nsids[k]);
  }
  return page;
}

// One entry per port and subsystem this host may reach.
Page discovery_log(const LogContext &x, uint8_t) {
  Page page(1024, 0);
  uint64_t records = 0;
  ConfigView view = x.reg.view();
  for (auto &pp : x.reg.ports()) {
    const PortConfig &pc = pp->cfg;
    for (const auto &s : view.discoverable(*pp, x.hostnqn)) {
      const SubsystemConfig &sc = s->cfg; // its NQN, which never changes
      const size_t at = page.size();
      page.resize(at + 1024, 0);
      uint8_t *e = page.data() + at;
      // MPTCP is TCP on the wire: trtype 3 unless asked for the series' 4,
      // which only a host with NVMe over MPTCP knows.
      e[0] = pc.transport == Transport::Mptcp && x.reg.config().discovery_trtype_mptcp ? kTrtypeMptcp : uint8_t{NVMF_TRTYPE_TCP};
      e[1] = pc.addr.ipv6 ? 2 : 1; // ADRFAM
      e[2] = 2;                    // SUBTYPE: NVMe subsystem
      // TREQ: the secure channel required or not (nvmet's addr_treq); with
      // TLS the TSAS says which (SECTYPE TLS 1.3).
      const TlsPort tls = pp->tls();
      e[3] = tls == TlsPort::Required ? NVMF_TREQ_REQUIRED : tls == TlsPort::Optional ? NVMF_TREQ_NOT_REQUIRED : 0;
      if (tls != TlsPort::None) e[768] = NVMF_TCP_SECTYPE_TLS13;
      put16(e, 4, pc.id);
      put16(e, 6, 0xffff); // CNTLID: dynamic
      put16(e, 8, 32);     // ASQSZ
      put_padded(e + 32, 32, pc.addr.service);
      std::memcpy(e + 256, sc.nqn.data(), std::min<size_t>(sc.nqn.size(), 255));
      put_padded(e + 512, 256, pc.addr.addr);
      records++;
    }
  }
  put64(page.data(), 0, x.reg.discovery_genctr());
  put64(page.data(), 8, records);
  return page;
}

// Which controllers serve a page.
enum class Served { Both, Io, Discovery };
struct LogPage {
  uint8_t lid;
  Served by;
  Page (*build)(const LogContext &, uint8_t lsp);
};
constexpr LogPage kLogPages[] = {
    {kLogError, Served::Both, error_log},
    {kLogSmart, Served::Both, smart_log},
    {kLogFwSlot, Served::Both, firmware_slot_log},
    {kLogChangedNs, Served::Both, changed_ns_log},
    {kLogCmdEffects, Served::Both, command_effects_log},
    {kLogAna, Served::Io, ana_log},
    {kLogDiscovery, Served::Discovery, discovery_log},
};

} // namespace

void SubmissionQueue::get_log_page(Request &r) {
  const uint32_t cdw10 = r.sqe.cdw(10), cdw11 = r.sqe.cdw(11);
  const uint8_t lid = cdw10 & 0xff, lsp = (cdw10 >> 8) & 0xf;
  const uint64_t len = ((static_cast<uint64_t>(cdw11 & 0xffff) << 16 | (cdw10 >> 16)) + 1) * 4;
  const uint64_t off = static_cast<uint64_t>(r.sqe.cdw(13)) << 32 | r.sqe.cdw(12);
  // NUMD comes from the host: the transfer must fit the data buffer the host
  // described and our MDTS, or a hostile host could make us allocate 16 GiB.
  if (len != r.sqe.sgl_len())
    return refuse(r, kStatusSglLengthInvalid,
                  fmt::format("Get Log Page of {} bytes into a {}-byte buffer", len, r.sqe.sgl_len()));
  if (len > mdts_bytes())
    return refuse(r, kStatusInvalidField, fmt::format("Get Log Page of {} bytes, above MDTS ({} bytes)", len, mdts_bytes()));
  const Subsystem &sub = ctrl_->subsys;
  const LogPage *lp = std::find_if(std::begin(kLogPages), std::end(kLogPages), [lid](const LogPage &p) { return p.lid == lid; });
  if (lp == std::end(kLogPages)) return refuse(r, kStatusInvalidField, fmt::format("log page {:#04x} is not supported", lid));
  if (lp->by == Served::Io && sub.discovery)
    return refuse(r, kStatusInvalidField, fmt::format("log page {:#04x} of a discovery controller", lid));
  if (lp->by == Served::Discovery && !sub.discovery)
    return refuse(r, kStatusInvalidField, fmt::format("log page {:#04x} (discovery) of an I/O controller", lid));
  const Page page = lp->build({reg_, sub, port_, ctrl_->hostnqn}, lsp);
  if (off > page.size() || (off & 3))
    return refuse(r, kStatusInvalidField, fmt::format("log page {:#04x} from offset {} of {} bytes", lid, off, page.size()));
  const uint64_t n = std::min<uint64_t>(len, page.size() - off);
  uint8_t *buf = buffer(r, static_cast<uint32_t>(len));
  if (!buf) return complete(r, kStatusInternal);
  std::memset(buf, 0, len);
  std::memcpy(buf, page.data() + off, n);
  return_data(r, buf, static_cast<uint32_t>(len));
}

} // namespace mpnvme::target
