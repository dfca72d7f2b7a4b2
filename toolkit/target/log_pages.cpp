// SPDX-License-Identifier: GPL-2.0-only
// Connection: Get Log Page (error, SMART, firmware slot, changed
// namespaces, command effects, ANA, discovery).
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <map>

#include "connection.hpp"
#include "wire.hpp"

namespace mpnvme::target {
using namespace nvme;
using wire::put16;
using wire::put32;
using wire::put64;

void Connection::get_log_page(Cmd &c, uint16_t slot) {
  const uint32_t cdw10 = c.sqe.cdw(10), cdw11 = c.sqe.cdw(11);
  const uint8_t lid = cdw10 & 0xff, lsp = (cdw10 >> 8) & 0xf;
  const uint64_t len = ((static_cast<uint64_t>(cdw11 & 0xffff) << 16 | (cdw10 >> 16)) + 1) * 4;
  const uint64_t off = static_cast<uint64_t>(c.sqe.cdw(13)) << 32 | c.sqe.cdw(12);
  // NUMD comes from the host: the transfer must fit the data buffer the host
  // described and our MDTS, or a hostile host could make us allocate 16 GiB.
  if (len != c.sqe.sgl_len())
    return refuse(slot, kStatusSglLengthInvalid,
                  fmt::format("Get Log Page of {} bytes into a {}-byte buffer", len, c.sqe.sgl_len()));
  if (len > mdts_bytes())
    return refuse(slot, kStatusInvalidField, fmt::format("Get Log Page of {} bytes, above MDTS ({} bytes)", len, mdts_bytes()));
  const Subsystem &sub = ctrl_->subsys;
  std::vector<uint8_t> page;
  switch (lid) {
  case kLogError: page.assign(64, 0); break; // empty
  case kLogSmart:
    page.assign(512, 0);
    put16(page.data(), 1, 273 + 20); // composite temperature: 20 C
    break;
  case kLogFwSlot:
    page.assign(512, 0);
    page[0] = 1; // slot 1 active
    std::memset(page.data() + 8, ' ', 8);
    std::memcpy(page.data() + 8, MPNVME_VERSION, std::min<size_t>(8, sizeof MPNVME_VERSION - 1));
    break;
  case kLogChangedNs: page.assign(4096, 0); break; // none
  case kLogCmdEffects: {
    page.assign(4096, 0);
    for (uint8_t op :
         {kAdminGetLogPage, kAdminIdentify, kAdminSetFeatures, kAdminGetFeatures, kAdminAsyncEvent, kAdminKeepAlive, kAdminAbort})
      put32(page.data(), op * 4u, 1);
    for (uint8_t op : {kCmdFlush, kCmdWrite, kCmdRead, kCmdWriteZeroes, kCmdDsm})
      put32(page.data(), 1024 + op * 4u, 1);
    break;
  }
  case kLogAna: {
    if (sub.discovery) return refuse(slot, kStatusInvalidField, "ANA log of a discovery controller");
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
  case kLogDiscovery: {
    if (!sub.discovery) return refuse(slot, kStatusInvalidField, "discovery log of an I/O controller");
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
        e[0] = NVMF_TRTYPE_TCP;      // MPTCP is TCP on the wire
        e[1] = pc.addr.ipv6 ? 2 : 1; // ADRFAM
        e[2] = 2;                    // SUBTYPE: NVMe subsystem
        e[3] = 0;                    // TREQ: not specified
        put16(e, 4, pc.id);
        put16(e, 6, 0xffff); // CNTLID: dynamic
        put16(e, 8, 32);     // ASQSZ
        put_padded(e + 32, 32, pc.addr.service);
        std::memcpy(e + 256, sc.nqn.data(), std::min<size_t>(sc.nqn.size(), 255));
        put_padded(e + 512, 256, pc.addr.addr);
        records++;
      }
    }
    put64(page.data(), 0, reg_.discovery_genctr());
    put64(page.data(), 8, records);
    break;
  }
  default: return refuse(slot, kStatusInvalidField, fmt::format("log page {:#04x} is not supported", lid));
  }
  if (off > page.size() || (off & 3))
    return refuse(slot, kStatusInvalidField, fmt::format("log page {:#04x} from offset {} of {} bytes", lid, off, page.size()));
  const uint64_t n = std::min<uint64_t>(len, page.size() - off);
  if (!ensure_buf(c, static_cast<uint32_t>(len))) return complete(slot, kStatusInternal);
  std::memset(c.buf, 0, len);
  std::memcpy(c.buf, page.data() + off, n);
  return_data(c, slot, static_cast<uint32_t>(len));
}

} // namespace mpnvme::target
