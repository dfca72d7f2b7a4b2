// SPDX-License-Identifier: GPL-2.0-only
#include "lib/config/target_auth_config.hpp"

#include <fmt/format.h>

#include "lib/base/log.hpp"
#include <stdexcept>

namespace mpnvme::target {

namespace {

using namespace dhchap;

// SECRET or @FILE; `what` names the source in messages.
Secret secret_or_file(const std::string &v, const std::string &what) {
  if (!v.empty() && v[0] == '@') return read_secret_file(v.substr(1), what);
  return parse_secret(v, what);
}

} // namespace

std::pair<std::string, std::string> host_value(const std::string &arg, const char *option) {
  const size_t eq = arg.find('=');
  if (eq == 0 || eq == std::string::npos || eq + 1 == arg.size())
    throw std::invalid_argument(fmt::format("{}: expected HOSTNQN=SECRET or HOSTNQN=@FILE", option));
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

void add_cli_auth(HostAuth &auth, const AuthOptions &o) {
  const auto hashes = parse_hash_list(o.hashes, "--dhchap-hash");
  const auto groups = parse_dhgroup_list(o.groups, "--dhchap-dhgroup");
  for (const std::string &k : o.keys) {
    auto [host, v] = host_value(k, "--dhchap-key");
    ControllerAuthConfig &a = auth[host];
    a.host_key = secret_or_file(v, fmt::format("--dhchap-key for {}", host));
    a.hashes = hashes;
    a.groups = groups;
  }
  for (const std::string &k : o.ctrl_keys) {
    auto [host, v] = host_value(k, "--dhchap-ctrl-key");
    auto it = auth.find(host);
    if (it == auth.end())
      throw std::invalid_argument(fmt::format("--dhchap-ctrl-key for {}: needs a --dhchap-key for that host", host));
    it->second.ctrl_key = secret_or_file(v, fmt::format("--dhchap-ctrl-key for {}", host));
  }
}

bool is_host_attribute(const std::string &name) {
  for (const char *a : kHostAttributes)
    if (name == a) return true;
  return false;
}

std::optional<ControllerAuthConfig> host_auth_from_attributes(const std::map<std::string, std::string> &attrs,
                                                              const std::string &where) {
  const auto get = [&](const char *k) {
    auto it = attrs.find(k);
    return it == attrs.end() ? std::string() : it->second;
  };
  if (get("dhchap_key").empty()) {
    if (!get("dhchap_ctrl_key").empty()) throw std::runtime_error(where + ".dhchap_ctrl_key: needs dhchap_key");
    return std::nullopt; // a host without a key: on an allow-list, not authenticated
  }
  ControllerAuthConfig a;
  a.host_key = secret_or_file(get("dhchap_key"), where + ".dhchap_key");
  if (!get("dhchap_ctrl_key").empty()) a.ctrl_key = secret_or_file(get("dhchap_ctrl_key"), where + ".dhchap_ctrl_key");
  a.hashes = parse_hash_list(get("dhchap_hash"), where + ".dhchap_hash");
  a.groups = parse_dhgroup_list(get("dhchap_dhgroup"), where + ".dhchap_dhgroup");
  return a;
}

HostAuthChange host_auth_change_from_attributes(const std::map<std::string, std::string> &attrs, const std::string &where) {
  HostAuthChange c;
  for (const auto &[name, value] : attrs) {
    const std::string at = where + "." + name;
    if (name == "dhchap_key") {
      c.host_key = secret_or_file(value, at);
    } else if (name == "dhchap_ctrl_key") {
      c.ctrl_key_named = true;
      if (!value.empty()) c.ctrl_key = secret_or_file(value, at);
    } else if (name == "dhchap_hash" || name == "dhchap_dhgroup") {
      // nvmet refuses an empty write to these; the defaults come back only
      // by forgetting the host.
      if (value.empty()) throw std::invalid_argument(fmt::format("{}: empty: name at least one", at));
      if (name == "dhchap_hash")
        c.hashes = parse_hash_list(value, at);
      else
        c.groups = parse_dhgroup_list(value, at);
    }
  }
  return c;
}

dhchap::ControllerAuthConfig HostAuthChange::applied_to(const dhchap::ControllerAuthConfig *current) const {
  if (!current && !host_key) throw std::invalid_argument("the host has no key yet: dhchap_key= is required");
  dhchap::ControllerAuthConfig a = current ? *current : dhchap::ControllerAuthConfig{};
  if (host_key) a.host_key = *host_key;
  if (ctrl_key_named) a.ctrl_key = ctrl_key;
  if (hashes) a.hashes = *hashes;
  if (groups) a.groups = *groups;
  return a;
}

void add_json_hosts(HostAuth &auth, const nlohmann::json &hosts, const std::string &where) {
  for (size_t i = 0; i < hosts.size(); i++) {
    const nlohmann::json &h = hosts[i];
    const std::string at = fmt::format("{}: hosts[{}]", where, i);
    if (!h.is_object() || !h.contains("nqn") || !h["nqn"].is_string()) throw std::runtime_error(at + ".nqn: required");
    std::map<std::string, std::string> attrs;
    for (const char *k : kHostAttributes)
      if (h.contains(k) && h[k].is_string()) attrs[k] = h[k].get<std::string>();
    if (auto a = host_auth_from_attributes(attrs, at)) auth[h["nqn"].get<std::string>()] = std::move(*a);
  }
}

} // namespace mpnvme::target
