// SPDX-License-Identifier: GPL-2.0-only
// The raw-transport control of a bench cell (mpnvme-floor sink / stream).
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "lib/net/paths.hpp"
#include "lib/net/sock.hpp"

namespace mpnvme::floor {

// Serve every address until killed: each connection says which way the
// data goes (its first byte), then the sink sends or receives until the
// peer closes. Prints "mpnvme-floor: sink ready" on stderr once listening.
[[noreturn]] void sink(const std::vector<PathAddr> &at, Transport transport, size_t chunk);

// One connection per address, each in its own thread, streaming toward
// the host (`read`) or the sink; the bytes moved after `ramp_s`, over
// `seconds`, and the subflows each connection had (MPTCP_INFO); with
// `interval_ms`, also the rate of every interval of that time.
nlohmann::json stream(const std::vector<PathAddr> &to, Transport transport, bool read, double ramp_s, double seconds,
                      size_t chunk, unsigned interval_ms = 0);

} // namespace mpnvme::floor
