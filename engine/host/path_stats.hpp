// SPDX-License-Identifier: GPL-2.0-only
// What one job saw on one path: commands, bytes, queue depth, failovers,
// reconnects, time down and completion latency percentiles. Fixed size, no
// allocation per I/O: latencies go into a log-linear histogram.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace mpnvme::host {

// Log-linear histogram of nanoseconds: 32 buckets per power of two, so a
// percentile is within about 3 % of the true value.
class LatencyHistogram {
public:
  void add(uint64_t ns);
  uint64_t count() const { return count_; }
  // The value at quantile q (0..1), 0 when empty.
  uint64_t quantile(double q) const;

private:
  static constexpr unsigned kSubBits = 5, kSub = 1u << kSubBits, kPowers = 40; // up to 2^44 ns (~4.9 h)
  std::array<uint64_t, kSub * kPowers> buckets_{};
  uint64_t count_ = 0;
};

struct PathStats {
  std::string path;      // ADDR:PORT
  std::string transport; // "mptcp", "tcp" or "mptcp (fell back to tcp)"
  uint64_t commands = 0, bytes_read = 0, bytes_written = 0;
  unsigned inflight_max = 0;
  uint64_t failovers = 0;  // commands moved from this path to another try
  uint64_t reconnects = 0; // I/O queue connections after the first
  uint64_t down_ns = 0;    // time this path was unusable during the job
  unsigned subflows = 0;   // MPTCP subflows of the I/O queue at job end (0: none)
  std::string tls_mode;    // "user-tls", "ktls"; empty without a secure channel
  std::string tls_cipher;  // "TLS_AES_128_GCM_SHA256"
  LatencyHistogram latency;
};

} // namespace mpnvme::host
