// SPDX-License-Identifier: GPL-2.0-only
// Which hosts a subsystem admits: one rule for the configuration read at
// start-up and for every change made at run time, so that a key closes the
// door however the subsystem or the key arrived.
//
//  - Hosts said exactly (--allow-any-host, JSON's attr.allow_any_host,
//    nvmet's own attribute) are taken as written.
//  - Otherwise a subsystem admits the hosts named for it and, once any host
//    has a key (DH-HMAC-CHAP or TLS), the hosts with a key that were not
//    denied there; it is open to any host only while it names none and no
//    host has a key. Naming a host closes it, and denying the last named
//    one leaves it closed.
#pragma once
#include <set>
#include <string>

#include "lib/config/target_auth_config.hpp"
#include "lib/config/target_tls_config.hpp"

namespace mpnvme::target {

struct SubsystemConfig;

// The hosts with a key of either kind.
std::set<std::string> keyed_hosts(const HostAuth &auth, const TlsKeys &tls);
bool subsystem_admits(const SubsystemConfig &s, const std::string &hostnqn, const std::set<std::string> &keyed);
// The rule written out as a list, for what needs one (nvmet's configfs,
// the start-up listing): allow_any_host set only when any host is admitted.
void resolve_host_access(SubsystemConfig &s, const std::set<std::string> &keyed);
// The rule at run time: once a host has a key, a subsystem whose hosts
// were not said exactly is closed to keyless hosts for good, but the keyed
// hosts are admitted by their key (subsystem_admits), not named: a key
// forgotten later takes its host's way in with it.
void close_to_keyless_hosts(SubsystemConfig &s, const std::set<std::string> &keyed);
// Admit `hostnqn` by name (again: no change); the first host named closes
// a subsystem that was open to any host, unless that was said exactly.
void name_host(SubsystemConfig &s, const std::string &hostnqn);
// Take a named host off the list; false when it was not on it.
bool unname_host(SubsystemConfig &s, const std::string &hostnqn);
// (name_host also lifts a denial: SubsystemConfig::denied_hosts.)

} // namespace mpnvme::target
