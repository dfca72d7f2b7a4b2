// SPDX-License-Identifier: GPL-2.0-only
// How much mpnvme-target holds: subsystems, namespaces and controllers per
// subsystem, and the bytes of its RAM namespaces (connections are counted
// at accept: mpnvme-target/transport/connection_budget.hpp). One rule each
// for the configuration read at start-up and for the control socket's
// changes at run time, so that what refuses a start refuses a `subsystem
// add`, in the same words. Each refusal names the option that sets the
// limit; the man page's LIMITS section says why each default is what it is.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace mpnvme::target {

struct SubsystemConfig;

// Controller IDs are 1..0xFFEF (Linux's NVME_CNTLID_MAX; the ones above
// are reserved): the most controllers one subsystem can have at once.
constexpr uint32_t kMaxCntlid = 0xffef;
// Every namespace ID but 0 and 0xFFFFFFFF (all namespaces), as nvmet's
// configfs takes them. Identify Controller's NN is a subsystem's highest.
constexpr uint32_t kMaxNsid = 0xfffffffe;

struct TargetLimits {
  // --max-subsystems. The discovery log lists each subsystem on every port
  // that serves it, 1 KiB an entry, built whole for each read.
  uint32_t max_subsystems = 1024;
  // --max-namespaces, per subsystem: nvmet's NVMET_MAX_NAMESPACES, and what
  // one Identify active namespace list holds.
  uint32_t max_namespaces = 1024;
  // --max-controllers, per subsystem unless its max-controllers= says
  // otherwise: by default the whole controller ID space, as nvmet, whose
  // ID allocator running out is this limit's refusal too.
  uint32_t max_controllers = kMaxCntlid;
  // --max-ram: the bytes all RAM namespaces may have together. The program
  // sets it from the machine's memory; unlimited for what builds a target
  // without one (fuzzers, unit tests).
  uint64_t max_ram = std::numeric_limits<uint64_t>::max();
};

// A limit reached (not a malformed request): the target logs these at warn
// when the control socket meets one.
class LimitReached : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

// Room for one more subsystem beside `held`? Throws LimitReached.
void check_subsystem_room(size_t held, const TargetLimits &limits);
// A subsystem's namespace count (LimitReached), its own max-controllers=
// (std::invalid_argument outside 1..kMaxCntlid) and its controller ID range
// (std::invalid_argument unless 1 <= min <= max <= kMaxCntlid, as nvmet).
void check_subsystem_limits(const SubsystemConfig &s, const TargetLimits &limits);
// The controllers `s` may have at once, and where that number comes from
// ("--max-controllers", "its max-controllers=" or "its controller ID
// range", whichever allows fewest).
uint32_t controller_limit(const SubsystemConfig &s, const TargetLimits &limits);
std::string controller_limit_option(const SubsystemConfig &s, const TargetLimits &limits);
// A controller ID or count as the configuration gives it: decimal digits
// only, at most 5 of them, 1..kMaxCntlid (nvmet reads "%hu"); nullopt
// otherwise, for the caller to name the option or field.
std::optional<uint16_t> parse_cntlid(const std::string &text);
// "1073741824 bytes (1024.0 MiB)": a byte count as refusals give it.
std::string bytes_text(uint64_t bytes);

} // namespace mpnvme::target
