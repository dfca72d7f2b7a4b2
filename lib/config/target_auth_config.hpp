// SPDX-License-Identifier: GPL-2.0-only
// mpnvme-target's DH-HMAC-CHAP configuration: which hosts must
// authenticate, with which keys, hashes and groups. From the command line
// (--dhchap-key HOSTNQN=SECRET|@FILE ...), from the JSON configuration's
// hosts (nvmet's attribute names) and from a job's dhchap_* options.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/auth/dhchap_controller.hpp"

namespace mpnvme::target {

using HostAuth = std::map<std::string, dhchap::ControllerAuthConfig>; // host NQN -> what it must prove

struct AuthOptions {
  std::vector<std::string> keys, ctrl_keys; // HOSTNQN=SECRET or HOSTNQN=@FILE
  std::string hashes, groups;               // allowed lists, comma-separated ("" = all)
};

// HOSTNQN=VALUE (the per-host key options), split; throws naming `option`.
std::pair<std::string, std::string> host_value(const std::string &arg, const char *option);

// The command line's: each key names its host; a controller key needs
// that host's key. Throws std::invalid_argument naming the option, never
// showing a secret.
void add_cli_auth(HostAuth &auth, const AuthOptions &o);
// nvmet's host attributes, as the JSON configuration's hosts and the
// control socket's "host key" name them.
inline constexpr const char *kHostAttributes[] = {"dhchap_key", "dhchap_ctrl_key", "dhchap_hash", "dhchap_dhgroup"};
bool is_host_attribute(const std::string &name);
// One host's attributes by name, values as given (SECRET or @FILE, hash and
// group lists): what it must prove, or nothing for a host without a key.
// The one parser of them; throws naming `where` and the attribute, never a
// secret.
std::optional<dhchap::ControllerAuthConfig> host_auth_from_attributes(const std::map<std::string, std::string> &attrs,
                                                                      const std::string &where);
// A change of one host's attributes, as the control socket's "host key"
// gives it: each attribute named replaces the host's current one, as
// writing one of nvmet's configfs attributes does, and the others stay;
// an empty dhchap_ctrl_key removes the controller key.
struct HostAuthChange {
  std::optional<dhchap::Secret> host_key;
  bool ctrl_key_named = false;
  std::optional<dhchap::Secret> ctrl_key;
  std::optional<std::vector<dhchap::Hash>> hashes;
  std::optional<std::vector<dhchap::DhGroup>> groups;
  // The host's attributes after the change; `current` is null for a host
  // without keys, which needs dhchap_key. Throws std::invalid_argument.
  dhchap::ControllerAuthConfig applied_to(const dhchap::ControllerAuthConfig *current) const;
};
// The same attributes as host_auth_from_attributes, as a change: only those
// named. Throws naming `where` and the attribute, never a secret.
HostAuthChange host_auth_change_from_attributes(const std::map<std::string, std::string> &attrs, const std::string &where);
// JSON "hosts": [{"nqn": ..., "dhchap_key": ..., "dhchap_ctrl_key": ...,
// "dhchap_hash": ..., "dhchap_dhgroup": ...}]; `where` names the file.
void add_json_hosts(HostAuth &auth, const nlohmann::json &hosts, const std::string &where);

} // namespace mpnvme::target
