// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/core/registry.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "lib/base/log.hpp"
#include "lib/base/printable.hpp"
#include "lib/config/host_access.hpp"

namespace mpnvme::target {

// --- ConfigView: readers under the shared configuration lock -------------

ConfigView::ConfigView(Registry &r) : r_(r), lk_(r.config_mu_) {}

std::shared_ptr<Subsystem> ConfigView::subsystem(const std::string &nqn) const {
  auto it = r_.subsystems_.find(nqn);
  return it == r_.subsystems_.end() ? nullptr : it->second;
}

bool ConfigView::admits(const Subsystem &s, const std::string &hostnqn) const { return r_.admits_locked(s, hostnqn); }

bool ConfigView::open_to_any(const Subsystem &s) const {
  return s.discovery || (s.cfg.allow_any_host && (s.cfg.allow_any_host_explicit || r_.keyed_.empty()));
}

std::vector<std::string> ConfigView::admitted_hosts(const Subsystem &s) const {
  std::vector<std::string> out = s.cfg.allowed_hosts;
  if (!s.cfg.allow_any_host_explicit)
    for (const std::string &h : r_.keyed_)
      if (std::find(out.begin(), out.end(), h) == out.end() && !s.cfg.denied_hosts.count(h)) out.push_back(h);
  return out;
}

const TlsKeys &ConfigView::tls_keys() const { return r_.tls_keys_; }

std::optional<dhchap::ControllerAuthConfig> ConfigView::host_auth(const std::string &hostnqn) const {
  auto it = r_.host_auth_.find(hostnqn);
  if (it == r_.host_auth_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::shared_ptr<Subsystem>> ConfigView::subsystems() const {
  std::vector<std::shared_ptr<Subsystem>> out;
  for (const auto &[nqn, s] : r_.subsystems_)
    if (!s->discovery) out.push_back(s);
  return out;
}

std::vector<std::shared_ptr<Subsystem>> ConfigView::discoverable(const PortState &port, const std::string &hostnqn) const {
  return r_.discoverable_locked(port, hostnqn);
}

std::shared_ptr<TargetController> ConfigView::create_controller(const std::shared_ptr<Subsystem> &s, PortState &p,
                                                                const nvme::ConnectData &d, uint32_t kato_ms) const {
  const bool keyed = !s->discovery && r_.host_auth_.count(d.hostnqn);
  std::lock_guard lk(r_.ctrl_mu_);
  // Counted where the ids are: the entries of `s` in the ordered map.
  const auto first = r_.controllers_.lower_bound({s.get(), 0}), end = r_.controllers_.upper_bound({s.get(), 0xffff});
  if (static_cast<size_t>(std::distance(first, end)) >= controller_limit(*s, r_.cfg_.limits)) return nullptr;
  // A host identifier presented with two host NQNs: the hosts are told
  // apart by NQN where it matters (reservations), and the operator is told.
  for (const auto &[key, weak] : r_.controllers_)
    if (auto c = weak.lock(); c && key.first == s.get() && c->hostid == d.hostid && c->hostnqn != d.hostnqn) {
      log().warn("subsystem {}: host {} connects with the host identifier of host {} (controller {}); reservations "
                 "tell them apart by NQN",
                 s->cfg.nqn, printable(d.hostnqn), printable(c->hostnqn), c->cntlid);
      break;
    }
  // An id of the subsystem's range (1..0xffef unless its cntlid_min and
  // cntlid_max say), skipping ids still in use; the next Connect goes on
  // from here, so that a host that reconnects gets a new id, not the one
  // its old controller may still be giving up.
  const uint16_t lo = s->cfg.cntlid_min, hi = s->cfg.cntlid_max;
  const auto after = [lo, hi](uint16_t id) { return id >= hi ? lo : static_cast<uint16_t>(id + 1); };
  uint16_t id = r_.next_cntlid_ >= lo && r_.next_cntlid_ <= hi ? r_.next_cntlid_ : lo;
  for (uint32_t tries = 0; tries <= static_cast<uint32_t>(hi - lo); tries++, id = after(id)) {
    r_.next_cntlid_ = after(id);
    auto key = std::make_pair(static_cast<const Subsystem *>(s.get()), id);
    auto it = r_.controllers_.find(key);
    if (it != r_.controllers_.end() && !it->second.expired()) continue;
    auto c = std::make_shared<TargetController>(id, s, p, d.hostnqn, d.hostid, kato_ms, keyed);
    r_.controllers_[key] = c;
    return c;
  }
  return nullptr;
}

std::shared_ptr<TargetController> ConfigView::find_controller(const Subsystem &s, uint16_t cntlid) const {
  std::lock_guard lk(r_.ctrl_mu_);
  auto it = r_.controllers_.find({&s, cntlid});
  return it == r_.controllers_.end() ? nullptr : it->second.lock();
}

// --- Registry ---------------------------------------------------------------

Registry::Registry(const TargetConfig &cfg)
    : backoff_(std::chrono::milliseconds(cfg.auth_backoff_ms)), cfg_(cfg), ram_(cfg.limits.max_ram), host_auth_(cfg.host_auth),
      tls_keys_(cfg.tls_keys), keyed_(keyed_hosts(cfg.host_auth, cfg.tls_keys)) {
  for (const auto &sc : cfg.subsystems)
    subsystems_.emplace(sc.nqn, open_subsystem(sc, ram_));
  if (cfg.discovery) {
    auto disc = std::make_shared<Subsystem>();
    disc->cfg.nqn = kDiscoveryNqn;
    disc->cfg.model = "mpnvme-target discovery";
    disc->cfg.serial = "discovery";
    disc->discovery = true;
    subsystems_.emplace(kDiscoveryNqn, std::move(disc));
  }
  for (const auto &p : cfg.ports) {
    ports_.push_back(std::make_unique<PortState>(p));
    counters_[p.id];
  }
}

bool Registry::admits_locked(const Subsystem &s, const std::string &hostnqn) const {
  return s.discovery || subsystem_admits(s.cfg, hostnqn, keyed_);
}

std::vector<std::shared_ptr<Subsystem>> Registry::discoverable_locked(const PortState &port, const std::string &hostnqn) const {
  std::vector<std::shared_ptr<Subsystem>> out;
  for (const auto &[nqn, s] : subsystems_)
    if (!s->discovery && port.serves(nqn) && admits_locked(*s, hostnqn)) out.push_back(s);
  return out;
}

Subsystem &Registry::existing(const std::string &nqn) {
  auto it = subsystems_.find(nqn);
  if (it == subsystems_.end() || it->second->discovery) throw std::invalid_argument("no such subsystem");
  return *it->second;
}

std::vector<std::shared_ptr<TargetController>> Registry::live_controllers() {
  std::lock_guard lk(ctrl_mu_);
  std::vector<std::shared_ptr<TargetController>> out;
  for (const auto &[key, weak] : controllers_)
    if (auto c = weak.lock(); c && !c->dead) out.push_back(std::move(c));
  return out;
}

// Per live discovery controller, what its log lists now.
std::map<const TargetController *, std::vector<std::string>> Registry::discovery_lists() {
  std::map<const TargetController *, std::vector<std::string>> out;
  for (const auto &c : live_controllers()) {
    if (!c->subsys.discovery) continue;
    auto &names = out[c.get()];
    for (const auto &s : discoverable_locked(c->port, c->hostnqn))
      names.push_back(s->cfg.nqn);
  }
  return out;
}

// The rules applied to what lives: a controller whose subsystem is gone,
// whose host the subsystem no longer admits, or whose host now has a key
// it was never asked to prove, ends.
void Registry::end_unadmitted(Aftermath &after) {
  for (auto &c : live_controllers()) {
    if (c->subsys.discovery) continue;
    const auto it = subsystems_.find(c->subsys.cfg.nqn);
    const char *why = it == subsystems_.end() || it->second != c->subsys_owner ? "its subsystem was removed"
                      : !admits_locked(c->subsys, c->hostnqn)                  ? "the subsystem no longer admits its host"
                      : !c->keyed && host_auth_.count(c->hostnqn)              ? "its host has a key now, which it never proved"
                                                                               : nullptr;
    if (!why || c->dead.exchange(true)) continue;
    log().warn("controller {} of {} (host {}) ended by the control socket: {}", c->cntlid, c->subsys.cfg.nqn,
               printable(c->hostnqn), why);
    if (std::find(after.revoked.begin(), after.revoked.end(), c->subsys_owner) == after.revoked.end())
      after.revoked.push_back(c->subsys_owner);
    after.ended.push_back(std::move(c));
  }
}

void Registry::reconfigure(const std::function<void()> &edit) {
  Aftermath after;
  {
    std::unique_lock lk(config_mu_);
    const auto before = discovery_lists();
    edit();
    end_unadmitted(after);
    bool listed_changed = false;
    const auto now = discovery_lists();
    for (const auto &c : live_controllers()) {
      auto b = before.find(c.get()), n = now.find(c.get());
      if (b == before.end() || n == now.end() || b->second == n->second) continue;
      listed_changed = true;
      after.discovery_notices.push_back(c);
    }
    if (listed_changed) discovery_genctr_++;
  }
  // The rights are gone; now no write admitted under them may still land.
  for (const auto &s : after.revoked)
    for (auto &[id, ns] : s->namespaces)
      ns.fence->revoke();
  for (const auto &c : after.discovery_notices)
    c->post_event(kAenDiscoveryChange);
  wake();
}

size_t Registry::subsystem_count_locked() const {
  return static_cast<size_t>(
      std::count_if(subsystems_.begin(), subsystems_.end(), [](const auto &e) { return !e.second->discovery; }));
}

// The rules of start-up: finalize_subsystem's checks and identifiers, the
// limits, and the hosts it admits resolved against the keys there are now.
// A limit reached is the operator's to know: logged, and nothing changed.
void Registry::add_subsystem(SubsystemConfig sc) {
  if (sc.nqn == kDiscoveryNqn) throw std::invalid_argument("the discovery subsystem is the target's own");
  const std::string nqn = sc.nqn;
  try {
    insert_subsystem(sc);
  } catch (const LimitReached &e) {
    log().warn("subsystem {} not added by the control socket: {}", printable(nqn), printable(e.what(), 1024));
    throw;
  }
}

void Registry::insert_subsystem(SubsystemConfig &sc) {
  finalize_subsystem(sc, cfg_.limits);
  {
    ConfigView v = view(); // before anything is opened or mapped for it
    if (v.subsystem(sc.nqn)) throw std::invalid_argument("a subsystem of that NQN exists");
    check_subsystem_room(v.subsystems().size(), cfg_.limits);
  }
  auto s = open_subsystem(sc, ram_); // outside the lock: a file namespace may take a while to open
  const size_t namespaces = s->namespaces.size();
  reconfigure([&] {
    check_subsystem_room(subsystem_count_locked(), cfg_.limits); // another add may have come between
    close_to_keyless_hosts(s->cfg, keyed_);
    if (!subsystems_.emplace(sc.nqn, std::move(s)).second) throw std::invalid_argument("a subsystem of that NQN exists");
  });
  log().info("subsystem {} added ({} namespace(s)) by the control socket", printable(sc.nqn), namespaces);
}

void Registry::remove_subsystem(const std::string &nqn) {
  std::shared_ptr<Subsystem> gone;
  reconfigure([&] {
    existing(nqn);
    gone = std::move(subsystems_.at(nqn));
    subsystems_.erase(nqn);
  });
  log().warn("subsystem {} removed by the control socket", printable(nqn));
}

void Registry::allow_host(const std::string &subnqn, const std::string &hostnqn) {
  reconfigure([&] { name_host(existing(subnqn).cfg, hostnqn); });
  log().info("subsystem {}: host {} allowed by the control socket", printable(subnqn), printable(hostnqn));
}

void Registry::deny_host(const std::string &subnqn, const std::string &hostnqn) {
  reconfigure([&] {
    SubsystemConfig &cfg = existing(subnqn).cfg;
    // A keyed host is admitted by its key, named or not: deny it by name.
    const bool by_key = keyed_.count(hostnqn) && !cfg.allow_any_host_explicit;
    if (!unname_host(cfg, hostnqn) && !by_key) throw std::invalid_argument("that host is not on the subsystem's list");
    if (by_key) cfg.denied_hosts.insert(hostnqn);
  });
  log().info("subsystem {}: host {} denied by the control socket", printable(subnqn), printable(hostnqn));
}

void Registry::set_host_auth(const std::string &hostnqn, const HostAuthChange &change) {
  reconfigure([&] {
    auto it = host_auth_.find(hostnqn);
    host_auth_[hostnqn] = change.applied_to(it == host_auth_.end() ? nullptr : &it->second);
    keyed_ = keyed_hosts(host_auth_, tls_keys_);
    // As at start-up: a key closes the subsystems whose hosts were not said
    // exactly, and forgetting it later opens none of them again; the host
    // gets in by its key while it has one (close_to_keyless_hosts).
    for (auto &[nqn, s] : subsystems_)
      if (!s->discovery) close_to_keyless_hosts(s->cfg, keyed_);
  });
  generated_psks_.forget_host(hostnqn); // derived from the keys it had
  log().warn("host {}: DH-HMAC-CHAP keys set by the control socket", printable(hostnqn));
}

void Registry::forget_host_auth(const std::string &hostnqn) {
  reconfigure([&] {
    if (!host_auth_.erase(hostnqn)) throw std::invalid_argument("that host has no keys");
    keyed_ = keyed_hosts(host_auth_, tls_keys_);
  });
  generated_psks_.forget_host(hostnqn);
  log().warn("host {}: DH-HMAC-CHAP keys removed by the control socket", printable(hostnqn));
}

void Registry::set_host_tls_key(const std::string &hostnqn, std::optional<tls::ConfiguredPsk> key) {
  const bool set = key.has_value();
  reconfigure([&] {
    if (key)
      tls_keys_[hostnqn] = std::move(*key);
    else if (!tls_keys_.erase(hostnqn))
      throw std::invalid_argument("that host has no TLS key");
    keyed_ = keyed_hosts(host_auth_, tls_keys_);
    for (auto &[nqn, s] : subsystems_) // as set_host_auth: a key closes the door to keyless hosts
      if (!s->discovery) close_to_keyless_hosts(s->cfg, keyed_);
  });
  log().warn("host {}: TLS key {} by the control socket", printable(hostnqn), set ? "set" : "removed");
}

void Registry::set_port_tls(uint16_t port_id, TlsPort t) {
  PortState *p = port(port_id);
  if (!p) throw std::invalid_argument("no such port");
  p->set_tls(t);
  discovery_genctr_++; // the discovery log's TREQ and TSAS of the port changed
  log().warn("port {}: secure channel {} from now on (control socket)", port_id, tls_port_name(t));
}

PortState *Registry::port(uint16_t id) {
  for (auto &p : ports_)
    if (p->cfg.id == id) return p.get();
  return nullptr;
}

void Registry::remove_controller(TargetController &c) {
  std::lock_guard lk(ctrl_mu_);
  controllers_.erase({&c.subsys, c.cntlid});
}

void Registry::set_ana(uint16_t port_id, uint32_t grp, AnaState st) {
  PortState *p = port(port_id);
  if (!p) throw std::invalid_argument("no such port");
  p->set_ana(grp, st);
  log().info("port {} ANA group {}: {}", port_id, grp, ana_state_name(st));
  for (const auto &c : live_controllers())
    if (&c->port == p && !c->subsys.discovery) c->post_event(kAenAnaChange);
  wake();
}

} // namespace mpnvme::target
