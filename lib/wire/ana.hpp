// SPDX-License-Identifier: GPL-2.0-only
// Asymmetric Namespace Access states, with the names nvmet uses in configfs
// (and nvmetcli JSON): the target serves them, the host obeys them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace mpnvme {

enum class AnaState : uint8_t { Optimized = 1, NonOptimized = 2, Inaccessible = 3, PersistentLoss = 4, Change = 0xf };
// optimized, non-optimized, inaccessible, persistent-loss, change;
// "invalid" for any other value (a byte from the wire).
const char *ana_state_name(AnaState s);
std::optional<AnaState> parse_ana_state(const std::string &s);
// Optimized or non-optimized: I/O may go there.
bool ana_usable(AnaState s);

} // namespace mpnvme
