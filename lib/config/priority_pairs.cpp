// SPDX-License-Identifier: GPL-2.0-only
#include "lib/config/priority_pairs.hpp"

#include <climits>
#include <fmt/format.h>

namespace mpnvme {

// Decimal, or hexadecimal with 0x (TOS values are usually written in hex).
static bool parse_uint(const std::string &s, unsigned long max, unsigned &out) {
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const std::string digits = hex ? s.substr(2) : s;
  if (digits.empty() || digits.size() > 10) return false;
  unsigned long v = 0;
  for (char c : digits) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (hex && c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (hex && c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return false;
    v = v * (hex ? 16 : 10) + static_cast<unsigned long>(d);
    if (v > max) return false;
  }
  out = static_cast<unsigned>(v);
  return true;
}

PriorityPairs PriorityPairs::parse(const std::string &text, const std::string &option, unsigned max_value) {
  PriorityPairs pp;
  if (text.empty()) return pp;
  auto fail = [&](const std::string &item, const std::string &why) {
    return std::invalid_argument(fmt::format(
        "{}: bad entry '{}': {} (accepted: a number 0..{} (decimal or 0x hex) for all queues, or SELECTOR:VALUE pairs "
        "separated by commas with SELECTOR admin, io, N or N-M, e.g. {}=admin:0,io:{})",
        option, item, why, max_value, option, std::min(max_value, 6u)));
  };
  unsigned bare;
  if (parse_uint(text, max_value, bare)) {
    pp.rules_.push_back({true, 0, 0, bare});
    pp.rules_.push_back({false, 1, UINT_MAX, bare});
    return pp;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const auto colon = item.find(':');
    if (colon == std::string::npos) throw fail(item, "missing ':VALUE'");
    const std::string sel = item.substr(0, colon), val = item.substr(colon + 1);
    unsigned value;
    if (!parse_uint(val, max_value, value)) throw fail(item, fmt::format("value must be a number from 0 to {}", max_value));
    if (sel == "admin") {
      pp.rules_.push_back({true, 0, 0, value});
    } else if (sel == "io") {
      pp.rules_.push_back({false, 1, UINT_MAX, value});
    } else {
      const auto dash = sel.find('-');
      unsigned lo, hi;
      if (dash == std::string::npos) {
        if (!parse_uint(sel, 65535, lo) || lo == 0)
          throw fail(item, "selector must be admin, io, N or N-M with I/O queue ids 1..65535");
        hi = lo;
      } else if (!parse_uint(sel.substr(0, dash), 65535, lo) || !parse_uint(sel.substr(dash + 1), 65535, hi) || lo == 0 ||
                 hi < lo) {
        throw fail(item, "range must be N-M with 1 <= N <= M <= 65535");
      }
      pp.rules_.push_back({false, lo, hi, value});
    }
  }
  return pp;
}

std::optional<unsigned> PriorityPairs::for_queue(unsigned qid) const {
  std::optional<unsigned> v;
  for (const Rule &r : rules_) { // later rules override earlier ones
    if (qid == 0 ? r.admin : (!r.admin && qid >= r.lo && qid <= r.hi)) v = r.value;
  }
  return v;
}

bool PriorityPairs::any_nonzero() const {
  for (const Rule &r : rules_)
    if (r.value) return true;
  return false;
}

std::string PriorityPairs::describe() const {
  std::string s;
  for (const Rule &r : rules_) {
    if (!s.empty()) s += ',';
    s += r.admin ? fmt::format("admin:{}", r.value) : fmt::format("{}-{}:{}", r.lo, r.hi, r.value);
  }
  return s;
}

} // namespace mpnvme
