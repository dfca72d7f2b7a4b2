// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/path_stats.hpp"

#include <bit>

namespace mpnvme::host {

void LatencyHistogram::add(uint64_t ns) {
  unsigned idx;
  if (ns < kSub) {
    idx = static_cast<unsigned>(ns);
  } else {
    const unsigned power = static_cast<unsigned>(std::bit_width(ns)) - 1; // >= kSubBits
    const unsigned sub = static_cast<unsigned>(ns >> (power - kSubBits)) & (kSub - 1);
    idx = std::min((power - kSubBits + 1) * kSub + sub, kSub * kPowers - 1);
  }
  buckets_[idx]++;
  count_++;
}

uint64_t LatencyHistogram::quantile(double q) const {
  if (!count_) return 0;
  const auto rank = static_cast<uint64_t>(q * static_cast<double>(count_ - 1)) + 1;
  uint64_t seen = 0;
  for (unsigned i = 0; i < buckets_.size(); i++) {
    seen += buckets_[i];
    if (seen < rank) continue;
    if (i < kSub) return i;
    const unsigned power = i / kSub + kSubBits - 1, sub = i % kSub;
    const uint64_t lo = (static_cast<uint64_t>(kSub) + sub) << (power - kSubBits);
    return lo + (uint64_t{1} << (power - kSubBits)) / 2; // the bucket's middle
  }
  return 0;
}

} // namespace mpnvme::host
