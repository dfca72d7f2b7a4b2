// SPDX-License-Identifier: GPL-2.0-only
#include "lib/wire/ana.hpp"

namespace mpnvme {

const char *ana_state_name(AnaState s) {
  switch (s) {
  case AnaState::Optimized: return "optimized";
  case AnaState::NonOptimized: return "non-optimized";
  case AnaState::Inaccessible: return "inaccessible";
  case AnaState::PersistentLoss: return "persistent-loss";
  case AnaState::Change: return "change";
  }
  return "invalid";
}

std::optional<AnaState> parse_ana_state(const std::string &s) {
  for (AnaState a :
       {AnaState::Optimized, AnaState::NonOptimized, AnaState::Inaccessible, AnaState::PersistentLoss, AnaState::Change})
    if (s == ana_state_name(a)) return a;
  return std::nullopt;
}

bool ana_usable(AnaState s) { return s == AnaState::Optimized || s == AnaState::NonOptimized; }

} // namespace mpnvme
