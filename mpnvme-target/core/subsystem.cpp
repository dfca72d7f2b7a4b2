// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/core/subsystem.hpp"

#include <cstdint>
#include <fmt/format.h>
#include <stdexcept>

#include "lib/base/log.hpp"

namespace mpnvme::target {

const char *const kDiscoveryNqn = "nqn.2014-08.org.nvmexpress.discovery";

std::shared_ptr<Subsystem> open_subsystem(const SubsystemConfig &sc, RamBudget &ram) {
  auto s = std::make_shared<Subsystem>();
  s->cfg = sc;
  // All of its RAM at once, before any is mapped: a refusal maps nothing.
  uint64_t ram_bytes = 0;
  for (const auto &nc : sc.namespaces)
    if (nc.enable && nc.backing == Backing::Ram) // saturating: sizes are the client's
      ram_bytes = nc.size > UINT64_MAX - ram_bytes ? UINT64_MAX : ram_bytes + nc.size;
  s->ram = ram.take(ram_bytes, sc.nqn);
  for (const auto &nc : sc.namespaces) {
    if (!nc.enable) continue;
    Namespace ns{nc, open_backend(nc)};
    log().info("subsystem {} namespace {}: {} ({} blocks of {} bytes)", sc.nqn, nc.nsid, nc.spec(), ns.backend->blocks(), nc.lba);
    s->namespaces.emplace(nc.nsid, std::move(ns));
  }
  return s;
}

PortState::PortState(PortConfig c) : cfg(std::move(c)), tls_(cfg.tls) {
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

uint32_t controller_limit(const Subsystem &s, const TargetLimits &limits) {
  return s.discovery ? kMaxCntlid : controller_limit(s.cfg, limits);
}

std::string controller_limit_option(const Subsystem &s, const TargetLimits &limits) {
  return s.discovery ? "its controller IDs" : controller_limit_option(s.cfg, limits);
}

} // namespace mpnvme::target
