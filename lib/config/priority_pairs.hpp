// SPDX-License-Identifier: GPL-2.0-only
// "Priority pairs": per-queue socket priority and TOS. The kernel offers one
// global so_priority per side; mpnvme accepts a bare number (every queue) or
// a comma-separated list of SELECTOR:VALUE pairs where SELECTOR is `admin`,
// `io` (every I/O queue), `N` or `N-M` (I/O queue ids). Later pairs override
// earlier ones.
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpnvme {

class PriorityPairs {
public:
  PriorityPairs() = default;
  // Throws std::invalid_argument naming `option`; `max_value` bounds values
  // (SO_PRIORITY: 0..2^31-1 but only 0..6 without CAP_NET_ADMIN; TOS: 0..255).
  static PriorityPairs parse(const std::string &text, const std::string &option, unsigned max_value);
  // Value for a queue: qid 0 is the admin queue. nullopt = leave the default.
  std::optional<unsigned> for_queue(unsigned qid) const;
  bool empty() const { return rules_.empty(); }
  // Whether any queue gets a non-zero value.
  bool any_nonzero() const;
  // The rules in order, e.g. "admin:0,1-4:6" ("" when empty).
  std::string describe() const;

private:
  struct Rule {
    bool admin;
    unsigned lo, hi; // I/O queue id range (inclusive) when !admin
    unsigned value;
    bool operator==(const Rule &) const = default;
  };
  std::vector<Rule> rules_;

public:
  bool operator==(const PriorityPairs &) const = default;
};

} // namespace mpnvme
