// SPDX-License-Identifier: GPL-2.0-only
// What all event loops and the control socket share: subsystems with the
// hosts they admit, the hosts' DH-HMAC-CHAP keys, ports, and the live
// controllers.
//
// Lock order (docs/design.md, "Locks"): the configuration lock, then the
// controllers' lock, then one controller's lock; a reservation's, the
// backoff table's, the refusal window's, the generated PSKs' and an event
// loop's inbox lock are leaves. Nothing is
// called back, no reactor woken and no placement revoked while one is held:
// a change collects what it leaves to do and does it after unlocking.
#pragma once
#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "lib/auth/dhchap_controller.hpp"
#include "lib/config/target_config.hpp"
#include "lib/wire/nvme.hpp"
#include "mpnvme-target/core/auth_backoff.hpp"
#include "mpnvme-target/core/controller.hpp"
#include "mpnvme-target/core/generated_psks.hpp"
#include "mpnvme-target/core/refusal_window.hpp"
#include "mpnvme-target/core/subsystem.hpp"

namespace mpnvme::target {

class Registry;

// The configuration as one reader sees it, under the shared configuration
// lock for as long as the view lives. A Connect checks and makes its
// controller through one view, so no change can come between the two.
class ConfigView {
public:
  std::shared_ptr<Subsystem> subsystem(const std::string &nqn) const; // null: none
  // Whether `s` admits `hostnqn` now (lib/config/host_access.hpp's rule).
  bool admits(const Subsystem &s, const std::string &hostnqn) const;
  // Whether `s` admits any host at all now.
  bool open_to_any(const Subsystem &s) const;
  // The hosts `s` admits now when it is not open to any: those it names
  // and, where its hosts were not said exactly, those with a key.
  std::vector<std::string> admitted_hosts(const Subsystem &s) const;
  // What `hostnqn` must prove (a copy); none when it needs no authentication.
  std::optional<dhchap::ControllerAuthConfig> host_auth(const std::string &hostnqn) const;
  // The hosts' configured TLS PSKs (--tls-key, then the control socket's
  // host tls-key), while the view lives.
  const TlsKeys &tls_keys() const;
  // Every serving subsystem but discovery, in NQN order; and those the
  // discovery log lists for `hostnqn` on `port`.
  std::vector<std::shared_ptr<Subsystem>> subsystems() const;
  std::vector<std::shared_ptr<Subsystem>> discoverable(const PortState &port, const std::string &hostnqn) const;
  // A new controller of `s` for the host; nullptr when `s` has as many as
  // controller_limit() allows (Connect then answers Controller Busy).
  std::shared_ptr<TargetController> create_controller(const std::shared_ptr<Subsystem> &s, PortState &p,
                                                      const nvme::ConnectData &d, uint32_t kato_ms) const;
  std::shared_ptr<TargetController> find_controller(const Subsystem &s, uint16_t cntlid) const;

private:
  friend class Registry;
  explicit ConfigView(Registry &r);
  Registry &r_;
  std::shared_lock<std::shared_mutex> lk_;
};

class Registry {
public:
  explicit Registry(const TargetConfig &cfg);
  // As started: the limits and ports, which never change (a port's ANA
  // states and secure channel are PortState's). What changes at run time
  // (subsystems, hosts, keys) is read through view().
  const TargetConfig &config() const { return cfg_; }
  // What RAM namespaces hold of --max-ram.
  const RamBudget &ram() const { return ram_; }
  ConfigView view() { return ConfigView(*this); }
  std::shared_ptr<Subsystem> find_subsystem(const std::string &nqn) { return view().subsystem(nqn); }
  std::vector<std::shared_ptr<Subsystem>> subsystems() { return view().subsystems(); }

  // Run-time configuration (the control socket), under the rules start-up
  // applies. Each change ends the live controllers the rules no longer
  // admit (their writes in flight are revoked before it returns) and
  // notifies the discovery controllers whose log it changed. Each throws
  // std::invalid_argument naming what it refuses.
  void add_subsystem(SubsystemConfig sc);
  void remove_subsystem(const std::string &nqn);
  void allow_host(const std::string &subnqn, const std::string &hostnqn);
  void deny_host(const std::string &subnqn, const std::string &hostnqn);
  // The host's keys, hashes and groups after `change` (its current ones
  // where it names none).
  void set_host_auth(const std::string &hostnqn, const HostAuthChange &change);
  void forget_host_auth(const std::string &hostnqn);
  // The host's configured TLS PSK from now on (none: it has none); its
  // controllers the rules no longer admit end.
  void set_host_tls_key(const std::string &hostnqn, std::optional<tls::ConfiguredPsk> key);
  // A port's secure channel from now on; connections already made keep theirs.
  void set_port_tls(uint16_t port_id, TlsPort t);
  // Change an ANA group's state on a port and queue an ANA change notice for
  // every controller on that port.
  void set_ana(uint16_t port_id, uint32_t grp, AnaState st);

  PortState *port(uint16_t id);
  std::vector<std::unique_ptr<PortState>> &ports() { return ports_; }
  PortCounters &counters(uint16_t port_id) { return counters_.at(port_id); }
  void remove_controller(TargetController &c);
  void set_waker(std::function<void()> w) { wake_ = std::move(w); }
  void wake() {
    if (wake_) wake_();
  }
  // The discovery log's generation counter: it counts changes of what the
  // log lists.
  uint64_t discovery_genctr() const { return discovery_genctr_; }
  // A failed authentication from `peer`; accept asks backoff().
  void auth_failed(const std::string &peer) { backoff_.failed(AuthBackoff::address(peer), AuthBackoff::Clock::now()); }
  AuthBackoff &backoff() { return backoff_; }
  // Controller Busy refusals, logged once per interval and subsystem.
  RefusalWindow &busy_refusals() { return busy_refusals_; }
  // TLS PSKs from secure channel concatenation, for the TLS server.
  GeneratedPsks &generated_psks() { return generated_psks_; }

private:
  friend class ConfigView;
  // What a change leaves to do once the locks are dropped.
  struct Aftermath {
    std::vector<std::shared_ptr<TargetController>> ended;
    std::vector<std::shared_ptr<TargetController>> discovery_notices;
    std::vector<std::shared_ptr<Subsystem>> revoked; // their namespaces' writes in flight
  };
  // Run `edit` under the configuration lock, then apply the rules to what
  // lives and notify; `what` says in the log who changed what.
  void reconfigure(const std::function<void()> &edit);
  void end_unadmitted(Aftermath &after);                                          // locked: config, takes controllers
  std::map<const TargetController *, std::vector<std::string>> discovery_lists(); // locked: config, takes controllers
  std::vector<std::shared_ptr<TargetController>> live_controllers();              // takes controllers
  std::vector<std::shared_ptr<Subsystem>> discoverable_locked(const PortState &port, const std::string &hostnqn) const;
  bool admits_locked(const Subsystem &s, const std::string &hostnqn) const;
  Subsystem &existing(const std::string &nqn); // locked: config; throws
  size_t subsystem_count_locked() const;       // locked: config; discovery not counted
  void insert_subsystem(SubsystemConfig &sc);  // add_subsystem's work

  AuthBackoff backoff_;
  RefusalWindow busy_refusals_;
  GeneratedPsks generated_psks_;
  TargetConfig cfg_;
  RamBudget ram_; // before the subsystems that take from it
  // 1. The configuration: subsystems_ (their host lists too), host_auth_, keyed_.
  mutable std::shared_mutex config_mu_;
  std::map<std::string, std::shared_ptr<Subsystem>> subsystems_;
  HostAuth host_auth_;
  TlsKeys tls_keys_;
  std::set<std::string> keyed_; // hosts with a DH-HMAC-CHAP or TLS key
  std::vector<std::unique_ptr<PortState>> ports_;
  std::map<uint16_t, PortCounters> counters_;
  // 2. The controllers.
  mutable std::mutex ctrl_mu_;
  std::map<std::pair<const Subsystem *, uint16_t>, std::weak_ptr<TargetController>> controllers_;
  uint16_t next_cntlid_ = 1;
  std::function<void()> wake_;
  std::atomic<uint64_t> discovery_genctr_{1};
};

} // namespace mpnvme::target
