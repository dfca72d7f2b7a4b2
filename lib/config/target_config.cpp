// SPDX-License-Identifier: GPL-2.0-only
#include "lib/config/target_config.hpp"

#include <algorithm>

#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "lib/base/json_error.hpp"
#include "lib/base/printable.hpp"
#include "lib/config/host_access.hpp"
#include "lib/config/host_identity.hpp"
#include "lib/config/job_engine_options.hpp"
#include "lib/wire/crc32c.hpp"

namespace mpnvme::target {

AnaState PortConfig::ana_state(uint32_t grp) const {
  auto it = ana.find(grp);
  return it == ana.end() ? AnaState::Optimized : it->second;
}

std::string NamespaceConfig::spec() const {
  switch (backing) {
  case Backing::Ram: return fmt::format("ram:{}", size);
  case Backing::Null: return fmt::format("null:{}", size);
  case Backing::File: return fmt::format("file:{}", path);
  }
  return "?";
}

NamespaceConfig parse_namespace_spec(const std::string &spec, uint32_t default_nsid, const std::string &option) {
  NamespaceConfig ns;
  ns.nsid = default_nsid;
  auto fail = [&](const std::string &why) {
    return std::invalid_argument(fmt::format("{} '{}': {} (accepted: ram:SIZE, null:SIZE, file:PATH or a path, "
                                             "optionally followed by ,lba=512|4096, ,nsid=N and ,uuid=UUID)",
                                             option, spec, why));
  };
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    parts.push_back(spec.substr(start, comma - start));
    start = comma + 1;
  }
  const std::string &main = parts[0];
  if (main.rfind("ram:", 0) == 0 || main.rfind("null:", 0) == 0) {
    ns.backing = main[0] == 'r' ? Backing::Ram : Backing::Null;
    ns.size = parse_size(main.substr(main.find(':') + 1), option);
    if (!ns.size) throw fail("size must be above 0");
  } else if (main.rfind("file:", 0) == 0) {
    ns.backing = Backing::File;
    ns.path = main.substr(5);
  } else if (!main.empty() && main[0] == '/') {
    ns.backing = Backing::File;
    ns.path = main;
  } else {
    throw fail("unknown backing");
  }
  if (ns.backing == Backing::File && ns.path.empty()) throw fail("empty path");
  std::set<std::string> said; // each attribute once: a second would silently win
  for (size_t i = 1; i < parts.size(); i++) {
    const std::string &p = parts[i];
    if (const size_t eq = p.find('='); eq != std::string::npos && !said.insert(p.substr(0, eq)).second)
      throw fail(fmt::format("{} given twice", p.substr(0, eq)));
    if (p.rfind("lba=", 0) == 0) {
      const std::string v = p.substr(4);
      if (v != "512" && v != "4096") throw fail("lba must be 512 or 4096");
      ns.lba = static_cast<uint32_t>(std::stoul(v));
    } else if (p.rfind("nsid=", 0) == 0) {
      const std::string v = p.substr(5);
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 10 || std::stoull(v) == 0 ||
          std::stoull(v) > kMaxNsid)
        throw fail(fmt::format("nsid must be a number from 1 to {}", kMaxNsid));
      ns.nsid = static_cast<uint32_t>(std::stoull(v));
    } else if (p.rfind("uuid=", 0) == 0) {
      if (!parse_uuid(p.substr(5), ns.uuid)) throw fail(fmt::format("uuid '{}' is not a UUID", p.substr(5)));
    } else {
      throw fail(fmt::format("unknown attribute '{}'", p));
    }
  }
  if (ns.size % ns.lba) throw fail(fmt::format("size is not a multiple of the LBA size {}", ns.lba));
  return ns;
}

namespace {
using nlohmann::json;

std::string jstr(const json &j, const char *key, const std::string &where, const std::string &def = "") {
  if (!j.contains(key)) return def;
  const json &v = j.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  throw std::runtime_error(fmt::format("{}.{}: expected a string", where, key));
}

PathAddr port_addr(const json &addr, const std::string &where) {
  const std::string fam = jstr(addr, "adrfam", where + ".addr", "ipv4");
  if (fam != "ipv4" && fam != "ipv6")
    throw std::runtime_error(fmt::format("{}.addr.adrfam: '{}' (accepted: ipv4, ipv6)", where, fam));
  PathAddr p;
  p.addr = jstr(addr, "traddr", where + ".addr");
  p.service = jstr(addr, "trsvcid", where + ".addr", kNvmeTcpPort);
  p.ipv6 = fam == "ipv6";
  if (p.addr.empty()) throw std::runtime_error(fmt::format("{}.addr.traddr: required", where));
  if (!valid_port(p.service)) throw std::runtime_error(fmt::format("{}.addr.trsvcid: '{}' is not a port", where, p.service));
  return p;
}

// A namespace's "nsid", 1..kMaxNsid (`fallback` when absent).
uint32_t json_nsid(const json &n, size_t fallback, const std::string &where) {
  if (!n.contains("nsid")) return static_cast<uint32_t>(fallback);
  const json &v = n.at("nsid");
  if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 || v.get<uint64_t>() > kMaxNsid)
    throw std::runtime_error(fmt::format("{}.nsid: {} (accepted: 1..{})", where, v.dump(), kMaxNsid));
  return static_cast<uint32_t>(v.get<uint64_t>());
}

std::optional<unsigned> jopt_uint(const json &param, const char *key, unsigned max, const std::string &where) {
  const std::string v = jstr(param, key, where);
  if (v.empty()) return std::nullopt;
  char *end = nullptr;
  const unsigned long n = std::strtoul(v.c_str(), &end, 0);
  if (*end || n > max) throw std::runtime_error(fmt::format("{}.{}: '{}' (accepted: 0..{})", where, key, printable(v), max));
  return static_cast<unsigned>(n);
}

// attr.cntlid_min and attr.cntlid_max: decimal, as nvmet's "%hu" reads
// them (a leading 0 is not octal, 0x is refused), 1..kMaxCntlid; absent:
// `def`. finalize_subsystem checks the pair.
uint16_t json_cntlid(const json &attr, const char *key, uint16_t def, const std::string &where) {
  if (!attr.contains(key)) return def;
  const std::string v = jstr(attr, key, where);
  if (const auto n = parse_cntlid(v)) return *n;
  throw std::runtime_error(fmt::format("{}.{}: '{}' (accepted: a controller ID, 1..{})", where, key, printable(v), kMaxCntlid));
}

// One subsystem of nvmetcli's JSON: its attributes and namespaces.
SubsystemConfig json_subsystem(const json &s, const std::string &where) {
  SubsystemConfig sc;
  sc.nqn = jstr(s, "nqn", where);
  if (sc.nqn.empty()) throw std::runtime_error(where + ".nqn: required");
  const json attr = s.value("attr", json::object());
  sc.allow_any_host = jstr(attr, "allow_any_host", where + ".attr", "1") == "1";
  sc.allow_any_host_explicit = attr.contains("allow_any_host");
  sc.serial = jstr(attr, "serial", where + ".attr");
  sc.model = jstr(attr, "model", where + ".attr", sc.model);
  sc.cntlid_min = json_cntlid(attr, "cntlid_min", sc.cntlid_min, where + ".attr");
  sc.cntlid_max = json_cntlid(attr, "cntlid_max", sc.cntlid_max, where + ".attr");
  for (const json &h : s.value("allowed_hosts", json::array()))
    sc.allowed_hosts.push_back(h.get<std::string>());
  const json nss = s.value("namespaces", json::array());
  for (size_t k = 0; k < nss.size(); k++) {
    const json &n = nss[k];
    const std::string nw = fmt::format("{}.namespaces[{}]", where, k);
    const json dev = n.value("device", json::object());
    const std::string p = jstr(dev, "path", nw + ".device");
    if (p.empty()) throw std::runtime_error(nw + ".device.path: required");
    NamespaceConfig ns = parse_namespace_spec(p, json_nsid(n, k + 1, nw), nw + ".device.path");
    ns.enable = n.value("enable", 1) != 0;
    ns.anagrpid = n.value("ana_grpid", 1u);
    if (const std::string u = jstr(dev, "uuid", nw + ".device"); !u.empty() && !parse_uuid(u, ns.uuid))
      throw std::runtime_error(fmt::format("{}.device.uuid: '{}' is not a UUID", nw, u));
    if (const std::string g = jstr(dev, "nguid", nw + ".device"); !g.empty() && !parse_uuid(g, ns.nguid))
      throw std::runtime_error(fmt::format("{}.device.nguid: '{}' is not 32 hex digits (dashes allowed)", nw, g));
    sc.namespaces.push_back(ns);
  }
  return sc;
}

} // namespace

TargetConfig load_json_config(const std::string &path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read", path));
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception &e) {
    throw std::runtime_error(fmt::format("{}: not JSON: {}", path, json_error(e)));
  }
  TargetConfig c;
  for (size_t i = 0; j.contains("subsystems") && i < j["subsystems"].size(); i++)
    c.subsystems.push_back(json_subsystem(j["subsystems"][i], fmt::format("{}: subsystems[{}]", path, i)));
  if (j.contains("hosts")) {
    add_json_hosts(c.host_auth, j["hosts"], path);
    add_json_tls_keys(c.tls_keys, j["hosts"], path);
  }
  for (size_t i = 0; j.contains("ports") && i < j["ports"].size(); i++) {
    const json &p = j["ports"][i];
    const std::string where = fmt::format("{}: ports[{}]", path, i);
    PortConfig pc;
    pc.id = static_cast<uint16_t>(p.value("portid", i + 1));
    const json addr = p.value("addr", json::object());
    pc.addr = port_addr(addr, where);
    const std::string tr = jstr(addr, "trtype", where + ".addr", "mptcp");
    if (tr == "tcp")
      pc.transport = Transport::Tcp;
    else if (tr == "mptcp")
      pc.transport = Transport::Mptcp;
    else
      throw std::runtime_error(fmt::format("{}.addr.trtype: '{}' (accepted: tcp, mptcp)", where, tr));
    pc.tls = tls_port_from_json(jstr(addr, "tsas", where + ".addr"), jstr(addr, "treq", where + ".addr"), where);
    const json param = p.value("param", json::object());
    if (auto v = jopt_uint(param, "inline_data_size", 1u << 20, where + ".param")) pc.inline_data_size = *v;
    pc.sk_priority = jopt_uint(param, "so_priority", 0x7fffffff, where + ".param");
    pc.tos = jopt_uint(param, "tos", 255, where + ".param");
    for (const json &g : p.value("ana_groups", json::array())) {
      const uint32_t grp = g.value("grpid", 1u);
      const std::string st = jstr(g.value("ana", json::object()), "state", where + ".ana_groups");
      auto a = parse_ana_state(st);
      if (!a)
        throw std::runtime_error(fmt::format(
            "{}.ana_groups[grpid {}].ana.state: '{}' (accepted: optimized, non-optimized, inaccessible, persistent-loss, change)",
            where, grp, st));
      pc.ana[grp] = *a;
    }
    for (const json &s : p.value("subsystems", json::array()))
      pc.subsystems.push_back(s.get<std::string>());
    c.ports.push_back(pc);
  }
  return c;
}

// A job with a DH-HMAC-CHAP secret: its host must authenticate, with the
// job's keys, hashes and groups, and no other host is let in.
static void require_job_auth(TargetConfig &c, SubsystemConfig &sub, const EngineOptions &engine) {
  if (!engine.auth.secret) return;
  dhchap::ControllerAuthConfig &a = c.host_auth[engine.host.hostnqn];
  a.host_key = *engine.auth.secret;
  a.ctrl_key = engine.auth.ctrl_secret;
  a.hashes = engine.auth.hashes;
  a.groups = engine.auth.groups;
  sub.allow_any_host = false;
  if (std::find(sub.allowed_hosts.begin(), sub.allowed_hosts.end(), engine.host.hostnqn) == sub.allowed_hosts.end())
    sub.allowed_hosts.push_back(engine.host.hostnqn);
}

// A job with tls=1: its paths require TLS, its host brings the job's key,
// and no other host is let in.
static void require_job_tls(TargetConfig &c, SubsystemConfig &sub, const EngineOptions &engine) {
  if (!engine.tls.enabled) return;
  c.tls_keys[engine.host.hostnqn] = *engine.tls.key;
  c.tls_compat = c.tls_compat || engine.tls.compat;
  sub.allow_any_host = false;
  if (std::find(sub.allowed_hosts.begin(), sub.allowed_hosts.end(), engine.host.hostnqn) == sub.allowed_hosts.end())
    sub.allowed_hosts.push_back(engine.host.hostnqn);
}

TargetConfig config_from_jobfile(const std::string &path) { return config_from_jobs(read_jobfile(path), path); }

TargetConfig config_from_jobs(const std::vector<JobSection> &jobs, const std::string &path) {
  TargetConfig c;
  std::set<std::string> seen_ports;
  for (const JobSection &job : jobs) {
    const std::string where = fmt::format("{} [{}]", path, job.name);
    const EngineOptions engine = job_engine_options(job, where);
    // Without size= the engine sizes the job from the namespace, so the
    // namespace decides: kJobNamespaceBytes unless another job of the file
    // needs more.
    const auto size = job.get("size");
    const uint64_t bytes = size ? parse_size(*size, where + ": size") : 0;
    const uint64_t offset = job.get("offset") ? parse_size(*job.get("offset"), where + ": offset") : 0;

    SubsystemConfig *sub = nullptr;
    for (auto &s : c.subsystems)
      if (s.nqn == engine.subnqn) sub = &s;
    if (!sub) {
      sub = &c.subsystems.emplace_back();
      sub->nqn = engine.subnqn;
    }
    require_job_auth(c, *sub, engine);
    require_job_tls(c, *sub, engine);
    NamespaceConfig *ns = nullptr;
    for (auto &n : sub->namespaces)
      if (n.nsid == engine.nsid) ns = &n;
    if (!ns) {
      NamespaceConfig n;
      n.nsid = engine.nsid;
      sub->namespaces.push_back(n);
      ns = &sub->namespaces.back();
    }
    // numjobs with offset_increment spread over more than size: cover it all.
    uint64_t need = offset + bytes;
    if (auto nj = job.get("numjobs"); nj && job.get("offset_increment")) {
      const auto jobs = parse_count(*nj, 999999);
      if (!jobs) throw std::runtime_error(fmt::format("{}: numjobs={}: not a job count", where, *nj));
      need = offset + parse_size(*job.get("offset_increment"), where + ": offset_increment") * (*jobs - 1) + bytes;
    }
    if (!size) need = std::max(need, kJobNamespaceBytes);
    ns->size = std::max(ns->size, (need + 4095) / 4096 * 4096);
    // tls=1 requires TLS of the port; concat=1 needs TLS and plaintext
    // both (its first admin queue is plaintext).
    const TlsPort wants = engine.tls.enabled ? TlsPort::Required : engine.tls.concat ? TlsPort::Optional : TlsPort::None;
    for (const PathAddr &pa : engine.paths) {
      if (!seen_ports.insert(pa.display()).second) {
        for (PortConfig &pc : c.ports) {
          if (pc.addr.display() != pa.display() || wants == TlsPort::None || pc.tls == wants) continue;
          if (pc.tls != TlsPort::None) // one job asks for tls=1, another for concat=1
            throw std::invalid_argument(fmt::format("{}: port {} serves a job with tls=1, which requires TLS, and one with "
                                                    "concat=1, whose first admin queue is plaintext: give them different ports",
                                                    where, pa.display()));
          pc.tls = wants; // a port one TLS job uses requires TLS of every job
        }
        continue;
      }
      PortConfig pc;
      pc.id = static_cast<uint16_t>(c.ports.size() + 1);
      pc.addr = pa;
      pc.transport = engine.transport;
      pc.tls = wants;
      c.ports.push_back(pc);
    }
  }
  return c;
}

void finalize_subsystem(SubsystemConfig &s, const TargetLimits &limits) {
  if (s.nqn.size() > 223) throw std::invalid_argument(fmt::format("subsystem NQN longer than 223 bytes: {}", printable(s.nqn)));
  // No control character or space: an NQN is logged, listed one a line by
  // the control socket, and typed by an operator.
  if (!clean_utf8_name(s.nqn))
    throw std::invalid_argument(
        fmt::format("subsystem NQN '{}': not UTF-8, or control characters or spaces (an NQN is UTF-8 without them, and "
                    "without bidirectional controls)",
                    printable(s.nqn)));
  // A key where a name belongs is refused before it is stored, listed or
  // logged as one, and the refusal does not repeat it.
  if (looks_like_secret(s.nqn)) throw std::invalid_argument("a key given where the subsystem NQN belongs");
  for (const std::string &host : s.allowed_hosts)
    if (looks_like_secret(host)) throw std::invalid_argument(fmt::format("{}: a key given where a host NQN belongs", s.nqn));
  // As nvmet: Identify's SN (20 bytes) and MN (40) are printable ASCII,
  // which hosts print as they are.
  const auto ascii = [](const std::string &t) {
    return std::all_of(t.begin(), t.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
  };
  if (s.serial.size() > 20 || !ascii(s.serial))
    throw std::invalid_argument(
        fmt::format("{}: serial '{}': at most 20 printable ASCII characters", s.nqn, printable(s.serial)));
  if (s.model.size() > 40 || !ascii(s.model))
    throw std::invalid_argument(fmt::format("{}: model '{}': at most 40 printable ASCII characters", s.nqn, printable(s.model)));
  check_subsystem_limits(s, limits);
  if (s.serial.empty()) s.serial = fmt::format("{:08x}", crc32c(s.nqn.data(), s.nqn.size()));
  std::set<uint32_t> ids;
  for (auto &n : s.namespaces) {
    // Numbered after a namespace at the top (",nsid=" then one without).
    if (n.nsid == 0 || n.nsid > kMaxNsid)
      throw std::invalid_argument(fmt::format("{}: nsid {} outside 1..{}", s.nqn, n.nsid, kMaxNsid));
    if (!ids.insert(n.nsid).second) throw std::invalid_argument(fmt::format("{}: nsid {} configured twice", s.nqn, n.nsid));
    if (n.anagrpid < 1 || n.anagrpid > kMaxAnaGroups)
      throw std::invalid_argument(
          fmt::format("{}: nsid {}: ANA group {} outside 1..{}", s.nqn, n.nsid, n.anagrpid, kMaxAnaGroups));
    // Stable identifiers from subsystem and nsid: Linux multipath matches
    // a namespace across controllers by them.
    const std::string seed = fmt::format("{}/{}", s.nqn, n.nsid);
    std::array<uint8_t, 16> id{};
    for (int k = 0; k < 4; k++) {
      const uint32_t h = crc32c(seed.data(), seed.size()) ^ (0x9e3779b9u * static_cast<uint32_t>(k + 1));
      const uint32_t v = crc32c(&h, sizeof h);
      std::memcpy(id.data() + 4 * k, &v, 4);
    }
    if (n.nguid == std::array<uint8_t, 16>{}) n.nguid = id;
    if (n.uuid == std::array<uint8_t, 16>{}) {
      n.uuid = id;
      n.uuid[6] = static_cast<uint8_t>((n.uuid[6] & 0x0f) | 0x40); // version 4 layout
      n.uuid[8] = static_cast<uint8_t>((n.uuid[8] & 0x3f) | 0x80);
    }
  }
}

void finalize(TargetConfig &c) {
  if (c.subsystems.empty()) throw std::invalid_argument("no subsystem configured (--subnqn with --ns, --config or --job)");
  // The host rule (lib/config/host_access.hpp) as lists: a key on the
  // command line names a host and closes the subsystems whose hosts were
  // not said exactly to the others.
  const std::set<std::string> keyed = keyed_hosts(c.host_auth, c.tls_keys);
  for (auto &s : c.subsystems)
    resolve_host_access(s, keyed);
  if (c.ports.empty()) throw std::invalid_argument("no port configured (--listen, --config or --job)");
  // A TLS port serves hosts with a configured PSK, or hosts whose
  // DH-HMAC-CHAP key generates one (secure channel concatenation).
  for (const PortConfig &p : c.ports)
    if (p.tls != TlsPort::None && c.tls_keys.empty() && c.host_auth.empty())
      throw std::invalid_argument(fmt::format("port {} ({}) speaks TLS, but no host has a TLS key (--tls-key HOSTNQN=KEY) or "
                                              "a DH-HMAC-CHAP key for secure channel concatenation (--dhchap-key)",
                                              p.id, p.addr.display()));
  std::set<std::string> nqns;
  for (auto &s : c.subsystems) {
    if (!nqns.insert(s.nqn).second) throw std::invalid_argument(fmt::format("subsystem {} configured twice", s.nqn));
    check_subsystem_room(nqns.size() - 1, c.limits); // as `subsystem add` at run time
    finalize_subsystem(s, c.limits);
  }
  std::set<uint16_t> ids;
  for (auto &p : c.ports) {
    if (!ids.insert(p.id).second) throw std::invalid_argument(fmt::format("port id {} configured twice", p.id));
    for (const auto &[grp, st] : p.ana)
      if (grp < 1 || grp > kMaxAnaGroups)
        throw std::invalid_argument(fmt::format("port {}: ANA group {} outside 1..{}", p.id, grp, kMaxAnaGroups));
    for (auto &n : p.subsystems)
      if (!nqns.count(n)) throw std::invalid_argument(fmt::format("port {} serves unknown subsystem {}", p.id, n));
  }
  if (c.threads == 0 || c.threads > 64) throw std::invalid_argument("--threads: 1..64");
}

} // namespace mpnvme::target
