// SPDX-License-Identifier: GPL-2.0-only
// A namespace's fence between the right to write it and the bytes that
// land in it. A write is admitted before its data arrives (an R2T, a
// receive straight into RAM), and the right can change meanwhile on
// another thread: a reservation another host takes, a host denied, a
// subsystem removed. Each placement of bytes (one receive, one copy: never
// a wait for the peer) enters with the epoch its right was checked at and
// leaves after; a change of rights bumps the epoch, then waits for the
// placements in progress. Once revoke() returns, a placement admitted
// before it either has finished or must check its right again.
//
// Sequentially consistent atomics make this a Dekker handshake: either the
// revoker sees the placement's count, or the placement sees the new epoch.
#pragma once
#include <atomic>
#include <cstdint>
#include <thread>

namespace mpnvme::target {

class PlacementFence {
public:
  // The epoch a right checked now belongs to.
  uint64_t epoch() const { return epoch_.load(); }
  // Before placing bytes admitted at `ticket`; false: rights changed since
  // (check again, then enter with the epoch read before that check).
  bool enter(uint64_t ticket) {
    active_.fetch_add(1);
    if (epoch_.load() == ticket) return true;
    active_.fetch_sub(1);
    return false;
  }
  void leave() { active_.fetch_sub(1); }
  // Rights on the namespace changed (the new state is in place): returns
  // once no placement admitted under the old ones is in progress.
  void revoke() {
    epoch_.fetch_add(1);
    while (active_.load() != 0)
      std::this_thread::yield();
  }

private:
  std::atomic<uint64_t> epoch_{0};
  std::atomic<uint32_t> active_{0};
};

} // namespace mpnvme::target
