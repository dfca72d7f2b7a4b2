// SPDX-License-Identifier: GPL-2.0-only
// One controller: the association of a host with a subsystem through a
// port, made by an admin queue's Connect and shared by the I/O queues that
// connect to it. Its registers, features and event queue are under its own
// lock (third in the lock order of docs/design.md).
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "lib/auth/dhchap_controller.hpp"
#include "mpnvme-target/core/subsystem.hpp"

namespace mpnvme::target {

// AER completion dword 0 for an ANA change notice (type Notice, info 0x03, log 0x0C).
constexpr uint32_t kAenAnaChange = 0x2 | (0x03 << 8) | (0x0c << 16);
// ... and for a discovery log change notice (type Notice, info 0xF0, log 0x70).
constexpr uint32_t kAenDiscoveryChange = 0x2 | (0xf0 << 8) | (0x70 << 16);
// A discovery controller connected with KATO 0 ends after this long without
// a command, as nvmet's (NVMET_DISC_KATO_MS): stale discovery sessions
// cannot pile up.
constexpr uint32_t kDiscoveryKatoMs = 120000;

class TargetController {
public:
  TargetController(uint16_t cntlid, std::shared_ptr<Subsystem> s, PortState &p, std::string hostnqn,
                   std::array<uint8_t, 16> hostid, uint32_t kato_ms, bool keyed);
  const uint16_t cntlid;
  // A subsystem removed at run time lives on until its last controller goes.
  const std::shared_ptr<Subsystem> subsys_owner;
  Subsystem &subsys;
  PortState &port;
  const std::string hostnqn;
  const std::array<uint8_t, 16> hostid;
  // The host had a DH-HMAC-CHAP key at Connect: every queue authenticates
  // before it is used. A key set later ends a controller made without one.
  const bool keyed;

  std::mutex mu; // cc, csts, features, queues, aer state
  uint32_t cc = 0;
  std::atomic<uint32_t> csts{0}; // written under mu, read by the admission gate without it
  uint32_t kato_ms;
  uint32_t aen_config = 0;
  std::set<uint16_t> io_qids;
  std::deque<uint32_t> aen_events; // events waiting for an AER (the admin queue parks those)

  // Ended: by the control socket (its host denied, its subsystem removed),
  // a keep-alive timeout or its admin queue going; its queues close.
  std::atomic<bool> dead{false};
  std::atomic<int64_t> last_activity_ns{0};
  dhchap::DhKeyCache dh_keys; // one DH key per group for all its queues' authentications
  void touch();
  bool kato_expired(std::chrono::steady_clock::time_point now) const;
  // Queue an asynchronous event for the admin queue to deliver.
  void post_event(uint32_t event);
};

} // namespace mpnvme::target
