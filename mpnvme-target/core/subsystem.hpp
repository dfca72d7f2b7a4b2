// SPDX-License-Identifier: GPL-2.0-only
// What the target serves: subsystems with their namespaces, and ports with
// their run-time ANA states and counters. A subsystem's namespaces are fixed
// once it serves (the I/O path reads them without a lock); which hosts it
// admits is configuration, read and changed under the registry's lock.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "lib/config/target_config.hpp"
#include "lib/config/target_limits.hpp"
#include "mpnvme-target/backend/backend.hpp"
#include "mpnvme-target/core/placement_fence.hpp"
#include "mpnvme-target/core/ram_budget.hpp"
#include "mpnvme-target/core/reservations.hpp"

namespace mpnvme::target {

extern const char *const kDiscoveryNqn;

struct Namespace {
  NamespaceConfig cfg;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Reservations> reservations = std::make_unique<Reservations>();
  // Every byte a host writes passes it (core/placement.hpp).
  std::unique_ptr<PlacementFence> fence = std::make_unique<PlacementFence>();
};

struct Subsystem {
  // cfg.allow_any_host, allow_any_host_explicit and allowed_hosts are
  // configuration: under Registry's configuration lock.
  SubsystemConfig cfg;
  bool discovery = false;
  std::map<uint32_t, Namespace> namespaces;
  RamGrant ram; // what its RAM namespaces took of --max-ram, until it goes
};

// A subsystem with its namespaces open, the bytes of its RAM namespaces
// taken from `ram` first; throws what RamBudget::take and open_backend throw.
std::shared_ptr<Subsystem> open_subsystem(const SubsystemConfig &sc, RamBudget &ram);

class PortState {
public:
  explicit PortState(PortConfig c);
  const PortConfig cfg; // ANA states below are the run-time copy
  // Lock-free: read on every I/O command. Groups outside 1..kMaxAnaGroups
  // (refused by the configuration) read as optimized.
  AnaState ana(uint32_t grp) const;
  void set_ana(uint32_t grp, AnaState s);
  uint64_t ana_change_count() const { return chgcnt_; }
  // The groups configured or changed at run time, with their states.
  std::map<uint32_t, AnaState> ana_groups() const;
  bool serves(const std::string &nqn) const;
  // The secure channel the port asks for now: cfg.tls at start, changed by
  // the control socket's `port tls` (a connection keeps what it met).
  TlsPort tls() const { return tls_.load(std::memory_order_relaxed); }
  void set_tls(TlsPort t) { tls_.store(t, std::memory_order_relaxed); }
  // Fault injection: a disabled port drops its connections and refuses new
  // ones (the listener stays bound, so hosts see resets, not timeouts).
  std::atomic<bool> disabled{false};

private:
  std::array<std::atomic<AnaState>, kMaxAnaGroups + 1> ana_; // by group id
  std::array<std::atomic<bool>, kMaxAnaGroups + 1> named_{}; // configured or set
  std::atomic<uint64_t> chgcnt_{0};
  std::atomic<TlsPort> tls_;
};

// The controllers `s` may hold at once, and the option that says so. The
// discovery subsystem's are not capped: a host keeping a few open would
// lock every other host out of discovery (nvmet gives it an ID range of
// its own). Its controllers end with their keep-alive, and the connection
// limits bound them.
uint32_t controller_limit(const Subsystem &s, const TargetLimits &limits);
std::string controller_limit_option(const Subsystem &s, const TargetLimits &limits);

// Counters of one port (path), summed over its connections.
struct PortCounters {
  std::atomic<uint64_t> connections{0}, commands{0}, rx_bytes{0}, tx_bytes{0}, errors{0};
};

} // namespace mpnvme::target
