// SPDX-License-Identifier: GPL-2.0-only
// libFuzzer target: a namespace's reservations driven by four hosts (two
// of them sharing a host identifier under different NQNs) with every
// Register, Acquire and Release the input spells, keys from a small set so
// that they meet. After each command the state must hold together: the
// report's registrants and type match what permits() answers, a holder is
// a registrant, and a host NQN never acts on a registration another NQN
// made under the same identifier.
#include <cstdint>
#include <cstring>

#include "lib/wire/nvme.hpp"
#include "lib/wire/wire.hpp"
#include "mpnvme-target/core/reservations.hpp"

using namespace mpnvme;
using namespace mpnvme::target;

namespace {

const ResvHost kHosts[4] = {{HostId{1}, "nqn.a"}, {HostId{2}, "nqn.b"}, {HostId{3}, "nqn.c"}, {HostId{1}, "nqn.impostor"}};

// The registrants the report lists: their host identifiers and whether each holds.
void check(const Reservations &r) {
  const auto rep = r.report();
  const uint8_t rtype = rep[4];
  const uint16_t n = wire::get16(rep.data(), 5);
  if (rep.size() != 64 + 64 * size_t(n) || rtype > 6) __builtin_trap();
  unsigned holders = 0;
  for (uint16_t i = 0; i < n; i++)
    holders += rep[64 + 64 * i + 2];
  if (rtype == 0 && holders) __builtin_trap();                   // no reservation: nobody holds
  if (rtype != 0 && rtype < 5 && holders != 1) __builtin_trap(); // one holder of a single-holder type
  if (rtype >= 5 && holders != n) __builtin_trap();              // every registrant of an "all registrants" type
  if (rtype == 0)
    for (const ResvHost &h : kHosts)
      if (!r.permits(h, true)) __builtin_trap(); // without a reservation, all may write
}

// Host identifier 1's registration as the report shows it: present, key.
std::pair<bool, uint64_t> id1_entry(const Reservations &r) {
  const auto rep = r.report();
  for (uint16_t i = 0; i < wire::get16(rep.data(), 5); i++)
    if (rep[64 + 64 * i + 16] == 1) return {true, wire::get64(rep.data(), 64 + 64 * i + 8)};
  return {false, 0};
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reservations r;
  static const uint64_t kKeys[4] = {0, 1, 0xa, 0xffffffffffffffffull};
  const char *id1_owner = nullptr; // the NQN that registered host identifier 1
  for (size_t i = 0; i + 4 <= size; i += 4) {
    const ResvHost &h = kHosts[data[i] & 3];
    const uint8_t op = (data[i] >> 2) & 3;
    const uint32_t cdw10 = data[i + 1] | static_cast<uint32_t>(data[i + 2]) << 8 | (data[i + 3] & 0xc0u) << 24;
    const uint64_t k1 = kKeys[data[i + 3] & 3], k2 = kKeys[(data[i + 3] >> 2) & 3];
    const auto before = id1_entry(r);
    switch (op) {
    case 0: r.reg(h, cdw10, k1, k2); break;
    case 1: r.acquire(h, cdw10, k1, k2); break;
    case 2: r.release(h, cdw10, k1); break;
    default: (void)r.permits(h, cdw10 & 1); break;
    }
    const auto after = id1_entry(r);
    // The other NQN under identifier 1 changes nothing of the owner's.
    if (id1_owner && h.id == kHosts[0].id && h.nqn != id1_owner && before != after) __builtin_trap();
    if (!after.first)
      id1_owner = nullptr;
    else if (!before.first && h.id == kHosts[0].id)
      id1_owner = h.nqn.c_str();
    check(r);
  }
  return 0;
}
