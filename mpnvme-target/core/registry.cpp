// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/core/registry.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "lib/base/log.hpp"

namespace mpnvme::target {

const char *const kDiscoveryNqn = "nqn.2014-08.org.nvmexpress.discovery";

bool Subsystem::host_allowed(const std::string &hostnqn) const {
  std::lock_guard lk(access_mu);
  if (cfg.allow_any_host) return true;
  return std::find(cfg.allowed_hosts.begin(), cfg.allowed_hosts.end(), hostnqn) != cfg.allowed_hosts.end();
}

void Subsystem::allow_host(const std::string &hostnqn) {
  std::lock_guard lk(access_mu);
  if (!cfg.allow_any_host_explicit) cfg.allow_any_host = false;
  if (std::find(cfg.allowed_hosts.begin(), cfg.allowed_hosts.end(), hostnqn) == cfg.allowed_hosts.end())
    cfg.allowed_hosts.push_back(hostnqn);
}

bool Subsystem::deny_host(const std::string &hostnqn) {
  std::lock_guard lk(access_mu);
  auto it = std::find(cfg.allowed_hosts.begin(), cfg.allowed_hosts.end(), hostnqn);
  if (it == cfg.allowed_hosts.end()) return false;
  cfg.allowed_hosts.erase(it);
  return true;
}

std::vector<std::string> Subsystem::allowed_hosts(bool &any) const {
  std::lock_guard lk(access_mu);
  any = cfg.allow_any_host;
  return cfg.allowed_hosts;
}

PortState::PortState(PortConfig c) : cfg(std::move(c)) {
  for (auto &a : ana_)
    a.store(AnaState::Optimized, std::memory_order_relaxed);
  for (const auto &[grp, st] : cfg.ana)
    if (grp >= 1 && grp <= kMaxAnaGroups) {
      ana_[grp].store(st, std::memory_order_relaxed);
      named_[grp].store(true, std::memory_order_relaxed);
    }
}

AnaState PortState::ana(uint32_t grp) const {
  return grp >= 1 && grp <= kMaxAnaGroups ? ana_[grp].load(std::memory_order_acquire) : AnaState::Optimized;
}

void PortState::set_ana(uint32_t grp, AnaState s) {
  if (grp < 1 || grp > kMaxAnaGroups) throw std::invalid_argument(fmt::format("ANA group {}: not 1..{}", grp, kMaxAnaGroups));
  named_[grp].store(true, std::memory_order_relaxed);
  ana_[grp].store(s, std::memory_order_release);
  chgcnt_++;
}

std::map<uint32_t, AnaState> PortState::ana_groups() const {
  std::map<uint32_t, AnaState> out;
  for (uint32_t g = 1; g <= kMaxAnaGroups; g++)
    if (named_[g].load(std::memory_order_relaxed)) out[g] = ana(g);
  return out;
}

bool PortState::serves(const std::string &nqn) const {
  if (cfg.subsystems.empty() || nqn == kDiscoveryNqn) return true;
  for (const auto &s : cfg.subsystems)
    if (s == nqn) return true;
  return false;
}

TargetController::TargetController(uint16_t id, std::shared_ptr<Subsystem> s, PortState &p, std::string host,
                                   std::array<uint8_t, 16> hid, uint32_t kato)
    : cntlid(id), subsys_owner(std::move(s)), subsys(*subsys_owner), port(p), hostnqn(std::move(host)), hostid(hid),
      kato_ms(kato) {
  touch();
}

void TargetController::touch() {
  last_activity_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool TargetController::kato_expired(std::chrono::steady_clock::time_point now) const {
  if (!kato_ms) return false;
  const auto last = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(last_activity_ns.load()));
  return now - last > std::chrono::milliseconds(kato_ms);
}

namespace {

// A subsystem with its namespaces open (throws what open_backend throws).
std::shared_ptr<Subsystem> open_subsystem(const SubsystemConfig &sc) {
  auto s = std::make_shared<Subsystem>();
  s->cfg = sc;
  for (const auto &nc : sc.namespaces) {
    if (!nc.enable) continue;
    Namespace ns{nc, open_backend(nc)};
    log().info("subsystem {} namespace {}: {} ({} blocks of {} bytes)", sc.nqn, nc.nsid, nc.spec(), ns.backend->blocks(), nc.lba);
    s->namespaces.emplace(nc.nsid, std::move(ns));
  }
  return s;
}

} // namespace

Registry::Registry(const TargetConfig &cfg)
    : backoff_(std::chrono::milliseconds(cfg.auth_backoff_ms)), cfg_(cfg), host_auth_(cfg.host_auth) {
  for (const auto &sc : cfg.subsystems)
    subsystems_.emplace(sc.nqn, open_subsystem(sc));
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

std::shared_ptr<Subsystem> Registry::find_subsystem(const std::string &nqn) {
  std::lock_guard lk(config_mu_);
  auto it = subsystems_.find(nqn);
  return it == subsystems_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<Subsystem>> Registry::subsystems() {
  std::lock_guard lk(config_mu_);
  std::vector<std::shared_ptr<Subsystem>> out;
  for (const auto &[nqn, s] : subsystems_)
    if (!s->discovery) out.push_back(s);
  return out;
}

void Registry::add_subsystem(SubsystemConfig sc) {
  if (sc.nqn == kDiscoveryNqn) throw std::invalid_argument("the discovery subsystem is the target's own");
  if (find_subsystem(sc.nqn)) throw std::invalid_argument(fmt::format("subsystem {} exists", sc.nqn));
  auto s = open_subsystem(sc); // outside the lock: a file namespace may take a while to open
  std::lock_guard lk(config_mu_);
  if (!subsystems_.emplace(sc.nqn, std::move(s)).second) throw std::invalid_argument(fmt::format("subsystem {} exists", sc.nqn));
  log().info("subsystem {} added ({} namespace(s)) by the control socket", sc.nqn, sc.namespaces.size());
  discovery_changed();
}

void Registry::remove_subsystem(const std::string &nqn) {
  std::shared_ptr<Subsystem> gone;
  {
    std::lock_guard lk(config_mu_);
    auto it = subsystems_.find(nqn);
    if (it == subsystems_.end() || it->second->discovery) throw std::invalid_argument(fmt::format("no subsystem {}", nqn));
    gone = std::move(it->second);
    subsystems_.erase(it);
  }
  unsigned ended = 0;
  {
    std::lock_guard lk(mu_);
    for (auto &[key, weak] : controllers_)
      if (auto c = weak.lock(); c && &c->subsys == gone.get() && !c->dead.exchange(true)) ended++;
  }
  log().warn("subsystem {} removed by the control socket; {} controller(s) ended", nqn, ended);
  discovery_changed();
}

std::optional<dhchap::ControllerAuthConfig> Registry::host_auth(const std::string &hostnqn) {
  std::lock_guard lk(config_mu_);
  auto it = host_auth_.find(hostnqn);
  if (it == host_auth_.end()) return std::nullopt;
  return it->second;
}

void Registry::set_host_auth(const std::string &hostnqn, dhchap::ControllerAuthConfig a) {
  std::lock_guard lk(config_mu_);
  host_auth_[hostnqn] = std::move(a);
}

bool Registry::forget_host_auth(const std::string &hostnqn) {
  std::lock_guard lk(config_mu_);
  return host_auth_.erase(hostnqn) > 0;
}

PortState *Registry::port(uint16_t id) {
  for (auto &p : ports_)
    if (p->cfg.id == id) return p.get();
  return nullptr;
}

std::shared_ptr<TargetController> Registry::create_controller(const std::shared_ptr<Subsystem> &s, PortState &p,
                                                              const std::string &hostnqn, const std::array<uint8_t, 16> &hostid,
                                                              uint32_t kato_ms) {
  std::lock_guard lk(mu_);
  // cntlid 1..0xffef, skipping ids still in use.
  for (int tries = 0; tries < 0xffef; tries++) {
    const uint16_t id = next_cntlid_;
    next_cntlid_ = next_cntlid_ >= 0xffef ? 1 : static_cast<uint16_t>(next_cntlid_ + 1);
    auto key = std::make_pair(static_cast<const Subsystem *>(s.get()), id);
    auto it = controllers_.find(key);
    if (it != controllers_.end() && !it->second.expired()) continue;
    auto c = std::make_shared<TargetController>(id, s, p, hostnqn, hostid, kato_ms);
    controllers_[key] = c;
    // Removed while this host connected: the controller ends as the others did.
    if (!s->discovery && find_subsystem(s->cfg.nqn) != s) c->dead = true;
    return c;
  }
  return nullptr;
}

std::shared_ptr<TargetController> Registry::find_controller(Subsystem &s, uint16_t cntlid) {
  std::lock_guard lk(mu_);
  auto it = controllers_.find({&s, cntlid});
  return it == controllers_.end() ? nullptr : it->second.lock();
}

void Registry::remove_controller(TargetController &c) {
  std::lock_guard lk(mu_);
  controllers_.erase({&c.subsys, c.cntlid});
}

void Registry::notify(const std::function<bool(const TargetController &)> &which, uint32_t event) {
  {
    std::lock_guard lk(mu_);
    for (auto &[key, weak] : controllers_) {
      auto c = weak.lock();
      if (!c || !which(*c)) continue;
      std::lock_guard clk(c->mu);
      c->aen_events.push_back(event);
    }
  }
  wake();
}

void Registry::set_ana(uint16_t port_id, uint32_t grp, AnaState st) {
  PortState *p = port(port_id);
  if (!p) throw std::invalid_argument(fmt::format("no port {}", port_id));
  p->set_ana(grp, st);
  log().info("port {} ANA group {}: {}", port_id, grp, ana_state_name(st));
  notify([p](const TargetController &c) { return &c.port == p && !c.subsys.discovery; }, kAenAnaChange);
}

void Registry::discovery_changed() {
  discovery_genctr_++;
  notify([](const TargetController &c) { return c.subsys.discovery; }, kAenDiscoveryChange);
}

} // namespace mpnvme::target
