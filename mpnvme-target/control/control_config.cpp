// SPDX-License-Identifier: GPL-2.0-only
// The control socket's configuration commands: subsystems with their
// namespaces, the hosts each admits and the hosts' DH-HMAC-CHAP keys, at
// run time, as nvmet's configfs changes them under a running kernel target
// (blktests drives a remote target through them: toolkit/blktests-control).
// A command carrying a key is never logged, and a refusal names the field,
// never the secret.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "lib/base/log.hpp"
#include "mpnvme-target/control/control.hpp"

namespace mpnvme::target {

namespace {

// subsystem add NQN [any-host] [serial=S] [model=M] [NAMESPACE...]
std::string add_subsystem(Registry &reg, std::istringstream &in) {
  SubsystemConfig sc;
  if (!(in >> sc.nqn)) return "error: usage: subsystem add NQN [any-host] [serial=S] [model=M] [NAMESPACE...]\n";
  uint32_t next_nsid = 1;
  for (std::string w; in >> w;) {
    if (w == "any-host") {
      sc.allow_any_host_explicit = true;
    } else if (w.rfind("serial=", 0) == 0) {
      sc.serial = w.substr(7);
    } else if (w.rfind("model=", 0) == 0) {
      sc.model = w.substr(6);
    } else {
      sc.namespaces.push_back(parse_namespace_spec(w, next_nsid, "subsystem add: namespace"));
      next_nsid = sc.namespaces.back().nsid + 1;
    }
  }
  finalize_subsystem(sc);
  reg.add_subsystem(std::move(sc));
  return "ok\n";
}

std::string subsystem_command(Registry &reg, std::istringstream &in) {
  std::string sub, nqn;
  in >> sub;
  if (sub == "add") return add_subsystem(reg, in);
  if (sub == "remove" && in >> nqn) {
    reg.remove_subsystem(nqn);
    return "ok\n";
  }
  return "error: usage: subsystem add NQN [any-host] [serial=S] [model=M] [NAMESPACE...] | subsystem remove NQN\n";
}

// "subsystems": one line each: NQN, namespaces, who may connect.
std::string list_subsystems(Registry &reg) {
  std::string out = "ok\n";
  for (const auto &s : reg.subsystems()) {
    std::string ns;
    for (const auto &[id, n] : s->namespaces)
      ns += fmt::format("{}{}={}", ns.empty() ? "" : ",", id, n.cfg.spec());
    bool any = false;
    const auto hosts = s->allowed_hosts(any);
    out += fmt::format("{} namespaces {} hosts {}\n", s->cfg.nqn, ns.empty() ? "none" : ns,
                       any             ? "any"
                       : hosts.empty() ? "none"
                                       : fmt::format("{}", fmt::join(hosts, ",")));
  }
  return out;
}

// host key HOSTNQN dhchap_key=SECRET|@FILE [dhchap_ctrl_key=...]
// [dhchap_hash=...] [dhchap_dhgroup=...]: nvmet's attribute names, read as
// the JSON configuration's hosts are.
std::string host_key(Registry &reg, const std::string &host, std::istringstream &in) {
  nlohmann::json entry = {{"nqn", host}};
  for (std::string w; in >> w;) {
    const size_t eq = w.find('=');
    const std::string name = w.substr(0, eq);
    if (eq == std::string::npos ||
        (name != "dhchap_key" && name != "dhchap_ctrl_key" && name != "dhchap_hash" && name != "dhchap_dhgroup"))
      return fmt::format("error: host key {}: '{}' is not one of dhchap_key=, dhchap_ctrl_key=, dhchap_hash=, "
                         "dhchap_dhgroup=\n",
                         host, name);
    entry[name] = w.substr(eq + 1);
  }
  if (!entry.contains("dhchap_key")) return fmt::format("error: host key {}: dhchap_key= is required\n", host);
  HostAuth parsed;
  add_json_hosts(parsed, nlohmann::json::array({entry}), "control: host key");
  reg.set_host_auth(host, std::move(parsed.at(host)));
  log().warn("host {}: DH-HMAC-CHAP keys set by the control socket", host);
  return "ok\n";
}

std::string host_command(Registry &reg, std::istringstream &in) {
  std::string sub, a, b;
  in >> sub >> a;
  const char *usage = "error: usage: host allow|deny SUBNQN HOSTNQN | host key HOSTNQN dhchap_key=... | host forget HOSTNQN\n";
  if (a.empty()) return usage;
  if (sub == "key") return host_key(reg, a, in);
  if (sub == "forget") {
    if (!reg.forget_host_auth(a)) return fmt::format("error: host {} has no keys\n", a);
    log().warn("host {}: DH-HMAC-CHAP keys removed by the control socket", a);
    return "ok\n";
  }
  if ((sub != "allow" && sub != "deny") || !(in >> b)) return usage;
  const auto s = reg.find_subsystem(a);
  if (!s || s->discovery) return fmt::format("error: no subsystem {}\n", a);
  if (sub == "allow") {
    s->allow_host(b);
    log().info("subsystem {}: host {} allowed by the control socket", a, b);
  } else if (!s->deny_host(b)) {
    return fmt::format("error: host {} is not on {}'s list\n", b, a);
  }
  reg.discovery_changed(); // which hosts see the subsystem
  return "ok\n";
}

} // namespace

std::optional<std::string> config_command(Registry &reg, const std::string &cmd, std::istringstream &in) {
  try {
    if (cmd == "subsystem") return subsystem_command(reg, in);
    if (cmd == "subsystems") return list_subsystems(reg);
    if (cmd == "host") return host_command(reg, in);
  } catch (const std::exception &e) { // refusals name the option or field, never a secret
    return fmt::format("error: {}\n", e.what());
  }
  return std::nullopt;
}

} // namespace mpnvme::target
