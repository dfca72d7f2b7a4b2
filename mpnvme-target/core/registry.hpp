// SPDX-License-Identifier: GPL-2.0-only
// What the target serves, shared by all reactor threads: subsystems and
// their namespaces, ports with run-time ANA state, and the live controllers.
// Control-path state is under mutexes; the I/O path only reads immutable
// namespace data and atomics (a port's ANA states are one atomic per
// group, so the per-command ANA check takes no lock).
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/auth/dhchap_controller.hpp"
#include "lib/config/target_config.hpp"
#include "mpnvme-target/core/auth_backoff.hpp"
#include "mpnvme-target/backend/backend.hpp"
#include "mpnvme-target/core/reservations.hpp"

namespace mpnvme::target {

extern const char *const kDiscoveryNqn;

struct Namespace {
  NamespaceConfig cfg;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Reservations> reservations = std::make_unique<Reservations>();
};

// A subsystem's namespaces are fixed once it serves (the I/O path reads
// them without a lock); which hosts it admits can change at run time.
struct Subsystem {
  SubsystemConfig cfg; // cfg.allow_any_host and cfg.allowed_hosts under access_mu
  bool discovery = false;
  std::map<uint32_t, Namespace> namespaces;
  bool host_allowed(const std::string &hostnqn) const;
  // Admit `hostnqn` (again: no change); the first host named closes a
  // subsystem that was open to any host, unless that was said explicitly.
  void allow_host(const std::string &hostnqn);
  bool deny_host(const std::string &hostnqn); // false: it was not named
  std::vector<std::string> allowed_hosts(bool &any) const;
  mutable std::mutex access_mu;
};

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
  // Fault injection: a disabled port drops its connections and refuses new
  // ones (the listener stays bound, so hosts see resets, not timeouts).
  std::atomic<bool> disabled{false};

private:
  std::array<std::atomic<AnaState>, kMaxAnaGroups + 1> ana_; // by group id
  std::array<std::atomic<bool>, kMaxAnaGroups + 1> named_{}; // configured or set
  std::atomic<uint64_t> chgcnt_{0};
};

// Counters of one port (path), summed over its connections.
struct PortCounters {
  std::atomic<uint64_t> connections{0}, commands{0}, rx_bytes{0}, tx_bytes{0}, errors{0};
};

// AER completion dword 0 for an ANA change notice (type Notice, info 0x03, log 0x0C).
constexpr uint32_t kAenAnaChange = 0x2 | (0x03 << 8) | (0x0c << 16);
// ... and for a discovery log change notice (type Notice, info 0xF0, log 0x70).
constexpr uint32_t kAenDiscoveryChange = 0x2 | (0xf0 << 8) | (0x70 << 16);

class TargetController {
public:
  TargetController(uint16_t cntlid, std::shared_ptr<Subsystem> s, PortState &p, std::string hostnqn,
                   std::array<uint8_t, 16> hostid, uint32_t kato_ms);
  const uint16_t cntlid;
  // A subsystem removed at run time lives on until its last controller goes.
  const std::shared_ptr<Subsystem> subsys_owner;
  Subsystem &subsys;
  PortState &port;
  const std::string hostnqn;
  const std::array<uint8_t, 16> hostid;

  std::mutex mu; // cc, csts, features, queues, aer state
  uint32_t cc = 0, csts = 0;
  uint32_t kato_ms;
  uint32_t aen_config = 0;
  std::set<uint16_t> io_qids;
  std::deque<uint16_t> aer_cids;   // outstanding Async Event Requests
  std::deque<uint32_t> aen_events; // events waiting for an AER

  std::atomic<bool> dead{false};
  std::atomic<int64_t> last_activity_ns{0};
  dhchap::DhKeyCache dh_keys; // one DH key per group for all its queues' authentications
  void touch();
  bool kato_expired(std::chrono::steady_clock::time_point now) const;
};

class Registry {
public:
  explicit Registry(const TargetConfig &cfg);
  const TargetConfig &config() const { return cfg_; }

  std::shared_ptr<Subsystem> find_subsystem(const std::string &nqn);
  // Every subsystem serving now but discovery, in NQN order.
  std::vector<std::shared_ptr<Subsystem>> subsystems();
  // Run-time configuration (the control socket). add_subsystem takes a
  // finalized configuration, opens its namespaces and throws
  // std::invalid_argument naming what it refuses; remove_subsystem ends
  // its controllers (their hosts see the connections close).
  void add_subsystem(SubsystemConfig sc);
  void remove_subsystem(const std::string &nqn);
  // What HOSTNQN must prove (a copy: keys change at run time); none when
  // the host needs no authentication.
  std::optional<dhchap::ControllerAuthConfig> host_auth(const std::string &hostnqn);
  void set_host_auth(const std::string &hostnqn, dhchap::ControllerAuthConfig a);
  bool forget_host_auth(const std::string &hostnqn);
  PortState *port(uint16_t id);
  std::vector<std::unique_ptr<PortState>> &ports() { return ports_; }
  PortCounters &counters(uint16_t port_id) { return counters_.at(port_id); }

  std::shared_ptr<TargetController> create_controller(const std::shared_ptr<Subsystem> &s, PortState &p,
                                                      const std::string &hostnqn, const std::array<uint8_t, 16> &hostid,
                                                      uint32_t kato_ms);
  std::shared_ptr<TargetController> find_controller(Subsystem &s, uint16_t cntlid);
  void remove_controller(TargetController &c);
  // Change an ANA group's state on a port and queue an ANA change notice for
  // every controller on that port; `wake` nudges the reactors to deliver.
  void set_ana(uint16_t port_id, uint32_t grp, AnaState st);
  void set_waker(std::function<void()> w) { wake_ = std::move(w); }
  void wake() {
    if (wake_) wake_();
  }
  // The discovery log's generation counter; discovery_changed() counts a
  // change of what it lists (a subsystem added or removed, a host allowed
  // or denied) and queues a change notice for every discovery controller.
  uint64_t discovery_genctr() const { return discovery_genctr_; }
  void discovery_changed();
  // A failed authentication from `peer` (auth.cpp); accept asks backoff().
  void auth_failed(const std::string &peer) { backoff_.failed(AuthBackoff::address(peer), AuthBackoff::Clock::now()); }
  AuthBackoff &backoff() { return backoff_; }

private:
  // Queue `event` for every controller `which` picks, and wake the reactors.
  void notify(const std::function<bool(const TargetController &)> &which, uint32_t event);
  AuthBackoff backoff_;
  TargetConfig cfg_;     // as started; subsystems and keys as they are now: below
  std::mutex config_mu_; // subsystems_ and host_auth_
  std::map<std::string, std::shared_ptr<Subsystem>> subsystems_;
  HostAuth host_auth_;
  std::vector<std::unique_ptr<PortState>> ports_;
  std::map<uint16_t, PortCounters> counters_;
  std::mutex mu_;
  std::map<std::pair<const Subsystem *, uint16_t>, std::weak_ptr<TargetController>> controllers_;
  uint16_t next_cntlid_ = 1;
  std::function<void()> wake_;
  std::atomic<uint64_t> discovery_genctr_{1};
};

} // namespace mpnvme::target
