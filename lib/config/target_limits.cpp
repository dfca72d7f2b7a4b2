// SPDX-License-Identifier: GPL-2.0-only
#include "lib/config/target_limits.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "lib/config/jobfile.hpp"
#include "lib/config/target_config.hpp"

namespace mpnvme::target {

void check_subsystem_room(size_t held, const TargetLimits &limits) {
  if (held < limits.max_subsystems) return;
  throw LimitReached(fmt::format("the target holds {} subsystem(s), the most --max-subsystems allows", held));
}

void check_subsystem_limits(const SubsystemConfig &s, const TargetLimits &limits) {
  if (s.namespaces.size() > limits.max_namespaces)
    throw LimitReached(fmt::format("{}: {} namespaces, more than the {} --max-namespaces allows in a subsystem", s.nqn,
                                   s.namespaces.size(), limits.max_namespaces));
  if (s.max_controllers && (*s.max_controllers < 1 || *s.max_controllers > kMaxCntlid))
    throw std::invalid_argument(
        fmt::format("{}: max-controllers={} outside 1..{} (the controller IDs)", s.nqn, *s.max_controllers, kMaxCntlid));
  // nvmet takes a range of one ID (min == max) since it stopped refusing it.
  if (s.cntlid_min < 1 || s.cntlid_min > s.cntlid_max || s.cntlid_max > kMaxCntlid)
    throw std::invalid_argument(fmt::format("{}: cntlid_min {} and cntlid_max {}: controller IDs lie in 1..{}, the first "
                                            "not above the last",
                                            s.nqn, s.cntlid_min, s.cntlid_max, kMaxCntlid));
}

namespace {
uint32_t id_range(const SubsystemConfig &s) { return static_cast<uint32_t>(s.cntlid_max) - s.cntlid_min + 1; }
} // namespace

uint32_t controller_limit(const SubsystemConfig &s, const TargetLimits &limits) {
  return std::min(s.max_controllers.value_or(limits.max_controllers), id_range(s));
}

std::string controller_limit_option(const SubsystemConfig &s, const TargetLimits &limits) {
  if (id_range(s) < s.max_controllers.value_or(limits.max_controllers))
    return fmt::format("its controller ID range {}..{}", s.cntlid_min, s.cntlid_max);
  return s.max_controllers ? "its max-controllers=" : "--max-controllers";
}

std::optional<uint16_t> parse_cntlid(const std::string &text) {
  if (text.size() > 5) return std::nullopt;
  const std::optional<unsigned> n = parse_count(text, kMaxCntlid);
  return n ? std::optional<uint16_t>(static_cast<uint16_t>(*n)) : std::nullopt;
}

std::string bytes_text(uint64_t bytes) { return fmt::format("{} bytes ({:.1f} MiB)", bytes, bytes / 1048576.0); }

} // namespace mpnvme::target
