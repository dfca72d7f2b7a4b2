// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/core/generated_psks.hpp"

namespace mpnvme::target {

uint64_t GeneratedPsks::epoch(const std::string &hostnqn) const {
  std::lock_guard lk(mu_);
  return epoch_locked(hostnqn);
}

uint64_t GeneratedPsks::epoch_locked(const std::string &hostnqn) const {
  const auto it = epochs_.find(hostnqn);
  return it == epochs_.end() ? 0 : it->second;
}

bool GeneratedPsks::insert(const tls::OfferedPsk &o, uint64_t epoch) {
  const std::string identity = tls::to_string(o.identity);
  std::lock_guard lk(mu_);
  if (epoch_locked(o.identity.hostnqn) != epoch) return false;
  if (!by_identity_.insert_or_assign(identity, tls::ServerPsk{o.psk, o.identity.hash}).second) return true; // the same key again
  auto &order = newest_[{o.identity.hostnqn, o.identity.subnqn}];
  order.push_back(identity);
  if (order.size() > kPerPair) {
    by_identity_.erase(order.front());
    order.pop_front();
  }
  return true;
}

void GeneratedPsks::erase(const std::string &identity) {
  std::lock_guard lk(mu_);
  if (!by_identity_.erase(identity)) return;
  for (auto &[pair, order] : newest_)
    std::erase(order, identity);
}

std::optional<tls::ServerPsk> GeneratedPsks::find(const std::string &identity) const {
  std::lock_guard lk(mu_);
  const auto it = by_identity_.find(identity);
  if (it == by_identity_.end()) return std::nullopt;
  return it->second;
}

void GeneratedPsks::forget_host(const std::string &hostnqn) {
  std::lock_guard lk(mu_);
  ++epochs_[hostnqn];
  for (auto it = newest_.begin(); it != newest_.end();) {
    if (it->first.first != hostnqn) {
      ++it;
      continue;
    }
    for (const std::string &identity : it->second)
      by_identity_.erase(identity);
    it = newest_.erase(it);
  }
}

size_t GeneratedPsks::size() const {
  std::lock_guard lk(mu_);
  return by_identity_.size();
}

} // namespace mpnvme::target
