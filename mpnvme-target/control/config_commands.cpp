// SPDX-License-Identifier: GPL-2.0-only
// The control socket's configuration commands: subsystems with their
// namespaces, the hosts each admits and the hosts' DH-HMAC-CHAP keys, at
// run time, as nvmet's configfs changes them under a running kernel target
// (blktests drives a remote target through them: toolkit/blktests). They
// go through the rules start-up applies (lib/config/host_access.hpp,
// finalize_subsystem), and each change takes effect on what is connected
// (Registry). A key is never logged, and no reply repeats a given word.
#include <climits>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <set>
#include <stdexcept>

#include "lib/base/log.hpp"
#include "lib/base/printable.hpp"
#include "lib/config/host_access.hpp"
#include "lib/tls/tls_psk.hpp"
#include "mpnvme-target/control/command_table.hpp"

namespace mpnvme::target {

namespace {

// A file or block device path must lie in a directory named at start: the
// socket admits hosts to data, and its client should not pick which.
void check_namespace_path(const NamespaceConfig &n, const ControlLimits &limits, size_t place) {
  if (n.backing != Backing::File) return;
  if (limits.namespace_dirs.empty())
    throw std::invalid_argument(fmt::format("argument {}: file and block namespaces need --control-ns-dir at start", place));
  char real[PATH_MAX];
  if (!realpath(n.path.c_str(), real)) throw std::invalid_argument(fmt::format("argument {}: the path does not resolve", place));
  const std::string path = real;
  for (const std::string &dir : limits.namespace_dirs) {
    char d[PATH_MAX];
    if (!realpath(dir.c_str(), d)) continue;
    const std::string base = std::string(d) == "/" ? "/" : std::string(d) + "/";
    if (path.rfind(base, 0) == 0) return;
  }
  throw std::invalid_argument(fmt::format("argument {}: the path is outside every --control-ns-dir", place));
}

// A host NQN as the NVMe base specification bounds it (223 bytes), in
// printable characters; '=' is refused as the sign of an attribute (a key)
// given where the NQN belongs, so that it is never stored, listed or
// logged as a host.
std::string host_nqn(const std::string &nqn, size_t place) {
  if (nqn.empty()) throw std::invalid_argument(fmt::format("argument {}: the host's NQN is missing", place));
  const bool printable = std::all_of(nqn.begin(), nqn.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u != 0x7f && u != '=';
  });
  if (nqn.size() > 223 || !printable)
    throw std::invalid_argument(fmt::format(
        "argument {}: a host NQN is at most 223 bytes, printable, without '=' (was an attribute given in its place?)", place));
  if (nqn == kDiscoveryNqn) throw std::invalid_argument(fmt::format("argument {}: the discovery NQN names no host", place));
  if (looks_like_secret(nqn))
    throw std::invalid_argument(fmt::format("argument {}: a key given where a host NQN belongs", place));
  return nqn;
}
std::string host_nqn(Args &a) {
  std::string w = a.next();
  return host_nqn(w, a.place());
}

// max-controllers=N: 1..kMaxCntlid (finalize_subsystem checks the range again,
// as for any configuration).
uint32_t max_controllers(const std::string &v, size_t place) {
  if (const auto n = parse_cntlid(v)) return *n;
  throw std::invalid_argument(fmt::format("argument {}: max-controllers= takes 1..{}", place, kMaxCntlid));
}

// cntlid_min=N, cntlid_max=N (nvmet's names): a controller ID;
// finalize_subsystem checks the pair.
uint16_t cntlid(const std::string &v, const char *name, size_t place) {
  if (const auto n = parse_cntlid(v)) return *n;
  throw std::invalid_argument(fmt::format("argument {}: {}= takes a controller ID, 1..{}", place, name, kMaxCntlid));
}

// An attribute given twice is refused: a second value silently winning
// over the first is what an operator's typo looks like. host= repeats.
void once(std::set<std::string> &said, const std::string &w, size_t place) {
  static const std::set<std::string> kOnce{"any-host", "serial", "model", "max-controllers", "cntlid_min", "cntlid_max"};
  const std::string name = w.substr(0, w.find('='));
  if (kOnce.count(name) && !said.insert(name).second)
    throw std::invalid_argument(fmt::format("argument {}: {} given twice", place, name));
}

// subsystem add NQN [any-host] [host=HOSTNQN]... [serial=S] [model=M] [max-controllers=N]
//   [cntlid_min=N] [cntlid_max=N] [NAMESPACE...]
std::string subsystem_add(Registry &reg, const ControlLimits &limits, Args &a) {
  SubsystemConfig sc;
  sc.nqn = a.next();
  if (sc.nqn.empty()) throw std::invalid_argument("argument 3: the subsystem's NQN is missing");
  uint32_t next_nsid = 1;
  std::set<std::string> said;
  while (a.more()) {
    const std::string w = a.next();
    once(said, w, a.place());
    if (w == "any-host") {
      sc.allow_any_host = sc.allow_any_host_explicit = true;
    } else if (w.rfind("host=", 0) == 0) {
      name_host(sc, host_nqn(w.substr(5), a.place())); // created closed: no moment open to any host
    } else if (w.rfind("serial=", 0) == 0) {
      sc.serial = w.substr(7);
    } else if (w.rfind("model=", 0) == 0) {
      sc.model = w.substr(6);
    } else if (w.rfind("max-controllers=", 0) == 0) {
      sc.max_controllers = max_controllers(w.substr(16), a.place());
    } else if (w.rfind("cntlid_min=", 0) == 0) {
      sc.cntlid_min = cntlid(w.substr(11), "cntlid_min", a.place());
    } else if (w.rfind("cntlid_max=", 0) == 0) {
      sc.cntlid_max = cntlid(w.substr(11), "cntlid_max", a.place());
    } else {
      sc.namespaces.push_back(parse_namespace_spec(w, next_nsid, fmt::format("argument {} (a namespace)", a.place())));
      check_namespace_path(sc.namespaces.back(), limits, a.place());
      next_nsid = sc.namespaces.back().nsid + 1;
    }
  }
  if (sc.allow_any_host_explicit && !sc.allowed_hosts.empty())
    throw std::invalid_argument("any-host and host= exclude each other");
  reg.add_subsystem(std::move(sc));
  return "ok\n";
}

std::string subsystem_remove(Registry &reg, const ControlLimits &, Args &a) {
  const std::string nqn = a.next();
  if (nqn.empty()) throw std::invalid_argument("argument 3: the subsystem's NQN is missing");
  reg.remove_subsystem(nqn);
  return "ok\n";
}

// "subsystems": one line each: NQN, namespaces, who may connect, then
// the controller limits that differ from the target's.
std::string subsystems(Registry &reg, const ControlLimits &, Args &) {
  std::string out = "ok\n";
  ConfigView view = reg.view();
  for (const auto &s : view.subsystems()) {
    std::string ns;
    for (const auto &[id, n] : s->namespaces)
      ns += fmt::format("{}{}={}", ns.empty() ? "" : ",", id, n.cfg.spec());
    const SubsystemConfig &c = s->cfg;
    const std::vector<std::string> hosts = view.admitted_hosts(*s);
    std::string limits;
    if (c.max_controllers) limits += fmt::format(" max-controllers={}", *c.max_controllers);
    if (c.cntlid_min != 1 || c.cntlid_max != kMaxCntlid)
      limits += fmt::format(" cntlid_min={} cntlid_max={}", c.cntlid_min, c.cntlid_max);
    out += fmt::format("{} namespaces {} hosts {}{}\n", c.nqn, ns.empty() ? "none" : ns,
                       view.open_to_any(*s) ? "any"
                       : hosts.empty()      ? "none"
                                            : fmt::format("{}", fmt::join(hosts, ",")),
                       limits);
  }
  return out;
}

std::string host_allow(Registry &reg, const ControlLimits &, Args &a) {
  const std::string sub = a.next(), host = host_nqn(a);
  reg.allow_host(sub, host);
  return "ok\n";
}

std::string host_deny(Registry &reg, const ControlLimits &, Args &a) {
  const std::string sub = a.next(), host = host_nqn(a);
  reg.deny_host(sub, host);
  return "ok\n";
}

// host key HOSTNQN [dhchap_key=SECRET|@FILE] [dhchap_ctrl_key=...]
// [dhchap_hash=...] [dhchap_dhgroup=...]: nvmet's attribute names, read by
// the one parser the JSON configuration's hosts go through. Each replaces
// the host's current attribute, as a write to nvmet's configfs does.
std::string host_key(Registry &reg, const ControlLimits &, Args &a) {
  const std::string host = host_nqn(a);
  std::map<std::string, std::string> attrs;
  while (a.more()) {
    const std::string w = a.next();
    const size_t eq = w.find('=');
    if (eq == std::string::npos || !is_host_attribute(w.substr(0, eq)))
      throw std::invalid_argument(
          fmt::format("argument {} is not one of {}=VALUE", a.place(), fmt::join(kHostAttributes, "=, ")));
    if (!attrs.emplace(w.substr(0, eq), w.substr(eq + 1)).second)
      throw std::invalid_argument(fmt::format("argument {}: {}= is given twice", a.place(), w.substr(0, eq)));
  }
  if (attrs.empty()) throw std::invalid_argument("argument 4: an attribute to set is missing");
  reg.set_host_auth(host, host_auth_change_from_attributes(attrs, "host key"));
  return "ok\n";
}

// host tls-key HOSTNQN KEY|@FILE|-: the configured PSK (NVMeTLSkey-1:...),
// a file only its owner reads, or none.
std::string host_tls_key(Registry &reg, const ControlLimits &, Args &a) {
  const std::string host = host_nqn(a);
  const std::string v = a.next();
  if (v.empty()) throw std::invalid_argument("argument 4: the key (NVMeTLSkey-1:..., @FILE, or - for none) is missing");
  if (v == "-") {
    reg.set_host_tls_key(host, std::nullopt);
  } else {
    const std::string what = fmt::format("host tls-key {}", printable(host));
    reg.set_host_tls_key(host, v[0] == '@' ? tls::read_psk_file(v.substr(1), what) : tls::parse_psk(v, what));
  }
  return "ok\n";
}

std::string host_forget(Registry &reg, const ControlLimits &, Args &a) {
  const std::string host = host_nqn(a);
  reg.forget_host_auth(host);
  return "ok\n";
}

} // namespace

const std::vector<ControlCommand> &config_commands() {
  static const std::vector<ControlCommand> table = {
      {"subsystem add",
       "NQN [any-host | host=HOSTNQN...] [serial=S] [model=M] [max-controllers=N] [cntlid_min=N] [cntlid_max=N] "
       "[NAMESPACE...]",
       "serve a subsystem, closed to all but the named hosts (and, once any host has a key, the keyed ones) from its "
       "first moment; NAMESPACE as --ns takes it, files and block devices only under --control-ns-dir; within "
       "--max-subsystems, --max-namespaces and --max-ram; max-controllers= in place of --max-controllers; "
       "cntlid_min= and cntlid_max= the controller IDs it hands out (nvmet's attributes); each attribute once",
       subsystem_add},
      {"subsystem remove", "NQN", "stop serving a subsystem: its controllers end, their writes in flight are revoked",
       subsystem_remove},
      {"subsystems", "", "each subsystem with its namespaces and the hosts it admits", subsystems},
      {"host allow", "SUBNQN HOSTNQN", "admit a host to a subsystem (the first named closes it to the others)", host_allow},
      {"host deny", "SUBNQN HOSTNQN",
       "take a host off a subsystem's list, and a host with a key out of what its key admits it to there (until host "
       "allow names it again): its controllers there end",
       host_deny},
      {"host key", "HOSTNQN [dhchap_key=SECRET|@FILE] [dhchap_ctrl_key=[SECRET|@FILE]] [dhchap_hash=H] [dhchap_dhgroup=G]",
       "the host must authenticate from now on; its controllers made without a key end; each attribute replaces the "
       "host's current one (dhchap_key= is needed for a host without keys; an empty dhchap_ctrl_key removes it)",
       host_key},
      {"host forget", "HOSTNQN", "the host needs no authentication any more", host_forget},
      {"host tls-key", "HOSTNQN NVMeTLSkey-1:...|@FILE|-",
       "the host's configured TLS PSK from now on (- for none); a key closes the door to keyless hosts as a "
       "DH-HMAC-CHAP key does",
       host_tls_key},
  };
  return table;
}

} // namespace mpnvme::target
