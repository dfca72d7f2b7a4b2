// SPDX-License-Identifier: GPL-2.0-only
// What the host reads from a controller: Identify Controller and Namespace,
// the Namespace Identification Descriptor list (CNS 03h) and the ANA log
// page, parsed through libnvme's structure definitions (one definition for
// host and target: hand-counted offsets put the ANA fields one byte off
// once). Every length comes from the controller and is bounds-checked.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "lib/wire/ana.hpp"

namespace mpnvme::host {

struct IdController {
  std::string serial, model, firmware, subnqn;
  uint16_t cntlid = 0;
  uint32_t version = 0;
  uint8_t cmic = 0;
  uint8_t mdts = 0; // 2^mdts * 4 KiB; 0 = no limit
  uint32_t oaes = 0;
  uint16_t kas = 0; // keep alive granularity, 100 ms units
  uint8_t anatt = 0, anacap = 0;
  uint32_t anagrpmax = 0, nanagrpid = 0;
  uint16_t maxcmd = 0;
  uint32_t nn = 0, mnan = 0;
  uint16_t oncs = 0;
  uint8_t vwc = 0;
  uint32_t sgls = 0;
  uint32_t ioccsz = 0; // 16-byte units, SQE included
  uint16_t icdoff = 0;

  uint64_t max_transfer_bytes() const; // 0 = unlimited
  uint64_t incapsule_data_limit() const;
  bool ana_reporting() const;
  bool dsm() const;
  bool write_zeroes() const;
  // Bytes of the ANA log page with every group and namespace listed (the
  // size the Linux host reads).
  size_t ana_log_bytes() const;
};
IdController parse_id_controller(const uint8_t *in); // 4096 bytes

// What makes two controllers' namespaces the same namespace (Linux
// nvme_ns_ids_equal): every identifier present must match.
struct NsIds {
  std::array<uint8_t, 16> nguid{}, uuid{};
  std::array<uint8_t, 8> eui64{};
  bool any() const;
  bool operator==(const NsIds &o) const = default;
  std::string describe() const; // "nguid … uuid …"
};

struct IdNamespace {
  uint64_t nsze = 0, ncap = 0;
  uint8_t flbas = 0, nmic = 0;
  uint32_t lba_bytes = 0;
  uint16_t metadata_bytes = 0;
  uint32_t anagrpid = 0;
  NsIds ids; // EUI64/NGUID from this structure; descriptors refine them
};
IdNamespace parse_id_namespace(const uint8_t *in); // 4096 bytes

// Merge the CNS 03h descriptor list into `ids`. False, with the reason in
// `why`, when a descriptor has the wrong length for its type.
bool parse_ns_descriptors(const uint8_t *in, size_t len, NsIds &ids, std::string &why);

struct AnaLog {
  uint64_t chgcnt = 0;
  std::map<uint32_t, AnaState> groups;      // group id -> state
  std::map<uint32_t, uint32_t> ns_to_group; // nsid -> group id (as listed)
  // The state of `nsid` in group `grpid` (from Identify Namespace): the
  // listing wins, then the group; nullopt when neither is in the log.
  std::optional<AnaState> state_of(uint32_t nsid, uint32_t grpid) const;
};
// Nullopt, with the reason in `why`, when the page is malformed.
std::optional<AnaLog> parse_ana_log(const uint8_t *in, size_t len, std::string &why);

} // namespace mpnvme::host
