// SPDX-License-Identifier: GPL-2.0-only
// A JSON file's error as the user sees it. nlohmann's parse errors quote
// the text they last read ("last read: '...'"), which in a configuration
// that holds keys can be part of a key: those are reported by position
// only. Its other errors name types, not values.
#pragma once
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>

namespace mpnvme {

inline std::string json_error(const nlohmann::json::exception &e) {
  if (const auto *p = dynamic_cast<const nlohmann::json::parse_error *>(&e))
    return fmt::format("syntax error at byte {}", p->byte);
  return e.what();
}

} // namespace mpnvme
