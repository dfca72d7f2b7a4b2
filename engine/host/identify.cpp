// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/identify.hpp"

#include <algorithm>
#include <cstring>
#include <endian.h>
#include <fmt/format.h>
#include <nvme/types.h>

namespace mpnvme::host {
namespace {

std::string trimmed(const char *p, size_t n) {
  std::string s(p, strnlen(p, n));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0'))
    s.pop_back();
  return s;
}

template <size_t N> std::string hex(const std::array<uint8_t, N> &a) {
  std::string s;
  for (uint8_t b : a)
    s += fmt::format("{:02x}", b);
  return s;
}

template <size_t N> bool nonzero(const std::array<uint8_t, N> &a) {
  return std::any_of(a.begin(), a.end(), [](uint8_t b) { return b != 0; });
}

} // namespace

IdController parse_id_controller(const uint8_t *in) {
  nvme_id_ctrl id;
  std::memcpy(&id, in, sizeof id);
  IdController c;
  c.serial = trimmed(id.sn, sizeof id.sn);
  c.model = trimmed(id.mn, sizeof id.mn);
  c.firmware = trimmed(id.fr, sizeof id.fr);
  c.subnqn = std::string(id.subnqn, strnlen(id.subnqn, sizeof id.subnqn));
  c.cntlid = le16toh(id.cntlid);
  c.version = le32toh(id.ver);
  c.cmic = id.cmic;
  c.mdts = id.mdts;
  c.oaes = le32toh(id.oaes);
  c.kas = le16toh(id.kas);
  c.anatt = id.anatt;
  c.anacap = id.anacap;
  c.anagrpmax = le32toh(id.anagrpmax);
  c.nanagrpid = le32toh(id.nanagrpid);
  c.maxcmd = le16toh(id.maxcmd);
  c.nn = le32toh(id.nn);
  c.mnan = le32toh(id.mnan);
  c.oncs = le16toh(id.oncs);
  c.vwc = id.vwc;
  c.sgls = le32toh(id.sgls);
  c.ioccsz = le32toh(id.ioccsz);
  c.icdoff = le16toh(id.icdoff);
  return c;
}

uint64_t IdController::max_transfer_bytes() const { return mdts ? (4096ull << std::min<uint8_t>(mdts, 20)) : 0; }

uint64_t IdController::incapsule_data_limit() const {
  // IOCCSZ counts 16-byte units of the whole capsule, SQE included.
  return ioccsz > 4 ? static_cast<uint64_t>(ioccsz) * 16 - 64 : 0;
}

bool IdController::ana_reporting() const { return cmic & NVME_CTRL_CMIC_MULTI_ANA_REPORTING; }
bool IdController::dsm() const { return oncs & NVME_CTRL_ONCS_DSM; }
bool IdController::write_zeroes() const { return oncs & NVME_CTRL_ONCS_WRITE_ZEROES; }

size_t IdController::ana_log_bytes() const {
  const uint32_t namespaces = mnan ? mnan : nn;
  return sizeof(nvme_ana_log) + static_cast<size_t>(nanagrpid) * sizeof(nvme_ana_group_desc) +
         static_cast<size_t>(namespaces) * sizeof(uint32_t);
}

bool NsIds::any() const { return nonzero(nguid) || nonzero(uuid) || nonzero(eui64); }

std::string NsIds::describe() const {
  std::string s;
  if (nonzero(nguid)) s += "nguid " + hex(nguid);
  if (nonzero(eui64)) s += (s.empty() ? "" : " ") + std::string("eui64 ") + hex(eui64);
  if (nonzero(uuid)) s += (s.empty() ? "" : " ") + std::string("uuid ") + hex(uuid);
  return s.empty() ? "no identifiers" : s;
}

IdNamespace parse_id_namespace(const uint8_t *in) {
  nvme_id_ns id;
  std::memcpy(&id, in, sizeof id);
  IdNamespace n;
  n.nsze = le64toh(id.nsze);
  n.ncap = le64toh(id.ncap);
  n.flbas = id.flbas;
  n.nmic = id.nmic;
  n.anagrpid = le32toh(id.anagrpid);
  // FLBAS bits 3:0 and 6:5 select the format (up to 64).
  const unsigned fmt = (n.flbas & 0xf) | ((n.flbas >> 1) & 0x30);
  const nvme_lbaf &f = id.lbaf[fmt];
  n.metadata_bytes = le16toh(f.ms);
  n.lba_bytes = (f.ds >= 9 && f.ds < 32) ? (1u << f.ds) : 0;
  std::memcpy(n.ids.nguid.data(), id.nguid, n.ids.nguid.size());
  std::memcpy(n.ids.eui64.data(), id.eui64, n.ids.eui64.size());
  return n;
}

bool parse_ns_descriptors(const uint8_t *in, size_t len, NsIds &ids, std::string &why) {
  size_t at = 0;
  while (at + sizeof(nvme_ns_id_desc) <= len) {
    nvme_ns_id_desc d;
    std::memcpy(&d, in + at, sizeof d);
    if (d.nidl == 0) break; // end of the list
    const size_t body = at + sizeof d;
    if (body + d.nidl > len) {
      why = fmt::format("descriptor type {} at byte {} runs past the list", d.nidt, at);
      return false;
    }
    auto take = [&](auto &field, size_t want) {
      if (d.nidl != want) {
        why = fmt::format("descriptor type {} has length {} (expected {})", d.nidt, d.nidl, want);
        return false;
      }
      std::memcpy(field.data(), in + body, want);
      return true;
    };
    switch (d.nidt) {
    case NVME_NIDT_EUI64:
      if (!take(ids.eui64, NVME_NIDT_EUI64_LEN)) return false;
      break;
    case NVME_NIDT_NGUID:
      if (!take(ids.nguid, NVME_NIDT_NGUID_LEN)) return false;
      break;
    case NVME_NIDT_UUID:
      if (!take(ids.uuid, NVME_NIDT_UUID_LEN)) return false;
      break;
    default: break; // command set identifier and unknown types: not identity
    }
    at = body + d.nidl;
  }
  return true;
}

std::optional<AnaState> AnaLog::state_of(uint32_t nsid, uint32_t grpid) const {
  if (auto n = ns_to_group.find(nsid); n != ns_to_group.end()) grpid = n->second;
  if (auto g = groups.find(grpid); g != groups.end()) return g->second;
  return std::nullopt;
}

std::optional<AnaLog> parse_ana_log(const uint8_t *in, size_t len, std::string &why) {
  nvme_ana_log hdr;
  if (len < sizeof hdr) {
    why = "shorter than its header";
    return std::nullopt;
  }
  std::memcpy(&hdr, in, sizeof hdr);
  AnaLog log;
  log.chgcnt = le64toh(hdr.chgcnt);
  size_t at = sizeof hdr;
  for (unsigned g = 0; g < le16toh(hdr.ngrps); g++) {
    nvme_ana_group_desc d;
    if (at + sizeof d > len) {
      why = fmt::format("group descriptor {} of {} runs past the page", g + 1, le16toh(hdr.ngrps));
      return std::nullopt;
    }
    std::memcpy(&d, in + at, sizeof d);
    const uint32_t n = le32toh(d.nnsids);
    at += sizeof d;
    if (n > (len - at) / sizeof(uint32_t)) {
      why = fmt::format("group {} lists {} namespaces past the page", le32toh(d.grpid), n);
      return std::nullopt;
    }
    const auto state = static_cast<AnaState>(d.state & 0xf);
    if (std::string_view(ana_state_name(state)) == "invalid") {
      why = fmt::format("group {} has the invalid state {:#x}", le32toh(d.grpid), d.state);
      return std::nullopt;
    }
    log.groups[le32toh(d.grpid)] = state;
    for (uint32_t i = 0; i < n; i++, at += sizeof(uint32_t)) {
      uint32_t nsid;
      std::memcpy(&nsid, in + at, sizeof nsid);
      log.ns_to_group[le32toh(nsid)] = le32toh(d.grpid);
    }
  }
  return log;
}

} // namespace mpnvme::host
