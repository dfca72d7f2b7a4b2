// SPDX-License-Identifier: GPL-2.0-only
#include "lib/config/host_access.hpp"

#include <algorithm>

#include "lib/config/target_config.hpp"

namespace mpnvme::target {

namespace {
bool named(const SubsystemConfig &s, const std::string &h) {
  return std::find(s.allowed_hosts.begin(), s.allowed_hosts.end(), h) != s.allowed_hosts.end();
}
} // namespace

std::set<std::string> keyed_hosts(const HostAuth &auth, const TlsKeys &tls) {
  std::set<std::string> keyed;
  for (const auto &[host, _] : auth)
    keyed.insert(host);
  for (const auto &[host, _] : tls)
    keyed.insert(host);
  return keyed;
}

bool subsystem_admits(const SubsystemConfig &s, const std::string &hostnqn, const std::set<std::string> &keyed) {
  if (s.allow_any_host_explicit) return s.allow_any_host || named(s, hostnqn);
  if (named(s, hostnqn)) return true;
  if (keyed.count(hostnqn)) return !s.denied_hosts.count(hostnqn);
  return s.allow_any_host && keyed.empty();
}

void resolve_host_access(SubsystemConfig &s, const std::set<std::string> &keyed) {
  if (s.allow_any_host_explicit || (s.allow_any_host && keyed.empty())) return;
  s.allow_any_host = false;
  for (const auto &h : keyed)
    if (!named(s, h)) s.allowed_hosts.push_back(h);
}

void close_to_keyless_hosts(SubsystemConfig &s, const std::set<std::string> &keyed) {
  if (!s.allow_any_host_explicit && !keyed.empty()) s.allow_any_host = false;
}

void name_host(SubsystemConfig &s, const std::string &hostnqn) {
  if (!s.allow_any_host_explicit) s.allow_any_host = false;
  s.denied_hosts.erase(hostnqn);
  if (!named(s, hostnqn)) s.allowed_hosts.push_back(hostnqn);
}

bool unname_host(SubsystemConfig &s, const std::string &hostnqn) {
  auto it = std::find(s.allowed_hosts.begin(), s.allowed_hosts.end(), hostnqn);
  if (it == s.allowed_hosts.end()) return false;
  s.allowed_hosts.erase(it);
  return true;
}

} // namespace mpnvme::target
