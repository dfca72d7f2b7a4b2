// SPDX-License-Identifier: GPL-2.0-only
#include "toolkit/nvmet/nvmet.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <stdexcept>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "lib/auth/dhchap_secret.hpp"
#include "lib/config/host_identity.hpp"
#include "toolkit/nvmet/configfs.hpp"
#include "toolkit/nvmet/tls_keyring.hpp"

namespace mpnvme::toolkit {
namespace fs = std::filesystem;
using nlohmann::json;

// configfs at /sys/kernel/config, mounted here when it is not: `ip netns
// exec` (how a target is put into a lab's namespace) mounts a fresh /sys
// in a mount namespace of its own, without configfs on it.
static void mount_configfs() {
  constexpr long kConfigfsMagic = 0x62656570;
  struct statfs st {};
  if (!exists("/sys/kernel/config"))
    throw std::runtime_error("/sys/kernel/config: missing: this kernel has no configfs (CONFIG_CONFIGFS_FS)");
  if (statfs("/sys/kernel/config", &st) == 0 && st.f_type == kConfigfsMagic) return;
  if (mount("configfs", "/sys/kernel/config", "configfs", 0, nullptr) != 0)
    throw std::runtime_error(
        fmt::format("/sys/kernel/config: configfs is not mounted and mounting it failed: {}", strerror(errno)));
}

void require_nvmet() {
  if (geteuid() != 0) throw std::runtime_error("configuring the kernel target needs root");
  if (nvmet_root.rfind("/sys/kernel/config", 0) == 0) mount_configfs();
  if (!exists(nvmet_root)) throw std::runtime_error(fmt::format("{}: missing: load the nvmet and nvmet-tcp modules", nvmet_root));
}

static std::string sub_path(const std::string &nqn) { return nvmet_root + "/subsystems/" + nqn; }
static std::string port_path(const std::string &id) { return nvmet_root + "/ports/" + id; }

// A RAM-backed file for a namespace: tmpfs has no O_DIRECT, hence buffered_io.
static std::string ram_file(Journal &j, const std::string &dir, const std::string &nqn, uint32_t nsid, uint64_t size) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("--ram-dir {}: {}", dir, ec.message()));
  std::string name = nqn;
  for (char &c : name)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  const std::string path = fmt::format("{}/{}-ns{}.img", dir, name, nsid);
  const bool existed = exists(path);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) configfs_error(path, "create", errno);
  struct stat st {};
  fstat(fd, &st);
  if (static_cast<uint64_t>(st.st_size) < size && ftruncate(fd, static_cast<off_t>(size)) < 0) {
    const int err = errno;
    ::close(fd);
    configfs_error(path, fmt::format("size to {} bytes", size), err);
  }
  ::close(fd);
  if (!existed) j.on_undo([path] { ::unlink(path.c_str()); });
  return path;
}

static void apply_namespace(Journal &j, const std::string &nqn, const target::NamespaceConfig &n, const ApplyOptions &o) {
  const std::string ns = fmt::format("{}/namespaces/{}", sub_path(nqn), n.nsid);
  auto dev = o.devices.find(n.nsid);
  const bool ram = dev == o.devices.end();
  const std::string path = ram ? ram_file(j, o.ram_dir, nqn, n.nsid, n.size) : dev->second;
  j.mkdir(ns);
  if (read_attr(ns + "/device_path") == path && read_attr(ns + "/enable") == "1") return; // already as wanted
  if (read_attr(ns + "/enable") == "1") j.write(ns + "/enable", "0");
  j.write(ns + "/device_path", path);
  if (exists(ns + "/buffered_io")) j.write(ns + "/buffered_io", ram ? "1" : "0");
  j.write(ns + "/enable", "1");
}

static std::string find_port(const std::string &trtype, const PathAddr &a) {
  for (const std::string &id : list_dir(nvmet_root + "/ports")) {
    const std::string p = port_path(id);
    if (read_attr(p + "/addr_trtype") == trtype && read_attr(p + "/addr_traddr") == a.addr &&
        read_attr(p + "/addr_trsvcid") == a.service)
      return id;
  }
  return "";
}

static std::string next_port_id() {
  unsigned max = 0;
  for (const std::string &id : list_dir(nvmet_root + "/ports"))
    max = std::max(max, static_cast<unsigned>(std::stoul(id)));
  return std::to_string(max + 1);
}

// The attributes nvmet reads DH-HMAC-CHAP from: the keys as text, one hash
// and one group (the first the job allows: nvmet offers no list).
static const char *const kAuthAttrs[] = {"dhchap_key", "dhchap_ctrl_key", "dhchap_hash", "dhchap_dhgroup"};

static void apply_host_auth(Journal &j, const std::string &host, const dhchap::ControllerAuthConfig &a) {
  const std::string hp = nvmet_root + "/hosts/" + host;
  if (!exists(hp + "/dhchap_key"))
    throw std::runtime_error(fmt::format("{}: no dhchap_key attribute: this kernel's nvmet has no in-band authentication "
                                         "(CONFIG_NVME_TARGET_AUTH)",
                                         hp));
  j.write(hp + "/dhchap_key", dhchap::format_secret(a.host_key), true);
  if (a.ctrl_key) j.write(hp + "/dhchap_ctrl_key", dhchap::format_secret(*a.ctrl_key), true);
  j.write(hp + "/dhchap_hash", dhchap::hash_name(a.hashes.front()));
  j.write(hp + "/dhchap_dhgroup", dhchap::dhgroup_name(a.groups.front()));
}

// A port's secure channel: TLS 1.3 (addr_tsas), required or not
// (addr_treq); nvmet hands the handshakes to tlshd.
static void apply_port_tls(Journal &j, const std::string &p, target::TlsPort t) {
  if (!exists(p + "/addr_tsas"))
    throw std::runtime_error(
        fmt::format("{}: no addr_tsas attribute: this kernel's nvmet has no TLS (CONFIG_NVME_TARGET_TCP_TLS)", p));
  if (read_attr(p + "/addr_tsas") != "tls1.3") j.write(p + "/addr_tsas", "tls1.3");
  const std::string treq = t == target::TlsPort::Required ? "required" : "not required";
  if (read_attr(p + "/addr_treq") != treq) j.write(p + "/addr_treq", treq);
}

// The hosts' TLS PSKs for every subsystem, in the .nvme keyring (keys are
// not configfs objects: they stay when the configuration is removed, as
// nvme-cli's do).
static void insert_host_psks(const target::TargetConfig &cfg) {
  for (const auto &[host, key] : cfg.tls_keys)
    for (const auto &s : cfg.subsystems)
      insert_tls_psks(key, host, s.nqn, cfg.tls_compat);
}

// The hosts a subsystem admits: --host, and a job's host when the job
// authenticates; empty: any host.
static std::vector<std::string> admitted(const target::SubsystemConfig &s, const ApplyOptions &o) {
  std::vector<std::string> hosts = o.allowed_hosts;
  if (!s.allow_any_host)
    for (const auto &h : s.allowed_hosts)
      if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
  return hosts;
}

std::vector<AppliedPort> apply(const target::TargetConfig &cfg, const ApplyOptions &o) {
  require_nvmet();
  Journal j;
  std::vector<AppliedPort> ports;
  for (const auto &s : cfg.subsystems)
    for (const auto &h : admitted(s, o))
      j.mkdir(nvmet_root + "/hosts/" + h);
  for (const auto &[host, a] : cfg.host_auth)
    apply_host_auth(j, host, a);
  for (const auto &s : cfg.subsystems) {
    const std::string sp = sub_path(s.nqn);
    j.mkdir(sp);
    const std::vector<std::string> hosts = admitted(s, o);
    if (hosts.empty()) {
      j.write(sp + "/attr_allow_any_host", "1");
    } else {
      j.write(sp + "/attr_allow_any_host", "0");
      for (const auto &h : hosts)
        j.symlink(nvmet_root + "/hosts/" + h, sp + "/allowed_hosts/" + h);
    }
    for (const auto &n : s.namespaces)
      apply_namespace(j, s.nqn, n, o);
  }
  if (o.so_priority) j.write("/sys/module/nvmet_tcp/parameters/so_priority", std::to_string(*o.so_priority));
  for (size_t i = 0; i < cfg.ports.size(); i++) {
    const PathAddr &a = cfg.ports[i].addr;
    std::string id = find_port(o.trtype, a);
    const std::string p = port_path(id.empty() ? (id = next_port_id()) : id);
    if (!exists(p)) {
      j.mkdir(p);
      j.write(p + "/addr_trtype", o.trtype);
      j.write(p + "/addr_adrfam", a.ipv6 ? "ipv6" : "ipv4");
      j.write(p + "/addr_traddr", a.addr);
      j.write(p + "/addr_trsvcid", a.service);
    }
    if (cfg.ports[i].tls != target::TlsPort::None) apply_port_tls(j, p, cfg.ports[i].tls);
    if (o.inline_data_size && read_attr(p + "/param_inline_data_size") != std::to_string(*o.inline_data_size))
      j.write(p + "/param_inline_data_size", std::to_string(*o.inline_data_size));
    if (auto it = o.ana.find(i + 1); it != o.ana.end()) j.write(p + "/ana_groups/1/ana_state", it->second);
    // Linking a subsystem enables the port: the last step.
    for (const auto &s : cfg.subsystems)
      j.symlink(sub_path(s.nqn), p + "/subsystems/" + s.nqn);
    ports.push_back({id, a.display()});
  }
  insert_host_psks(cfg);
  j.commit();
  return ports;
}

json save() {
  require_nvmet();
  json out = {{"hosts", json::array()}, {"ports", json::array()}, {"subsystems", json::array()}};
  for (const auto &h : list_dir(nvmet_root + "/hosts")) {
    json host = {{"nqn", h}};
    // A host's hash and group matter (and are saved) only with its key.
    if (!read_attr(nvmet_root + "/hosts/" + h + "/dhchap_key").empty())
      for (const char *attr : kAuthAttrs)
        if (const std::string v = read_attr(nvmet_root + "/hosts/" + h + "/" + attr); !v.empty()) host[attr] = v;
    out["hosts"].push_back(host);
  }
  for (const auto &nqn : list_dir(nvmet_root + "/subsystems")) {
    const std::string sp = sub_path(nqn);
    json s = {{"nqn", nqn}, {"attr", json::object()}, {"namespaces", json::array()}, {"allowed_hosts", json::array()}};
    for (const auto &f : list_dir(sp))
      if (f.rfind("attr_", 0) == 0 && f != "attr_qid_max") s["attr"][f.substr(5)] = read_attr(sp + "/" + f);
    for (const auto &h : list_dir(sp + "/allowed_hosts"))
      s["allowed_hosts"].push_back(h);
    for (const auto &id : list_dir(sp + "/namespaces")) {
      const std::string np = sp + "/namespaces/" + id;
      json n = {{"nsid", std::stoul(id)},
                {"enable", read_attr(np + "/enable") == "1" ? 1 : 0},
                {"device",
                 {{"path", read_attr(np + "/device_path")},
                  {"uuid", read_attr(np + "/device_uuid")},
                  {"nguid", read_attr(np + "/device_nguid")}}}};
      if (exists(np + "/ana_grpid")) n["ana_grpid"] = std::stoul(read_attr(np + "/ana_grpid"));
      if (read_attr(np + "/buffered_io") == "1") n["buffered_io"] = 1;
      s["namespaces"].push_back(n);
    }
    out["subsystems"].push_back(s);
  }
  for (const auto &id : list_dir(nvmet_root + "/ports")) {
    const std::string p = port_path(id);
    json port = {{"portid", std::stoul(id)},    {"addr", json::object()},      {"param", json::object()},
                 {"subsystems", json::array()}, {"ana_groups", json::array()}, {"referrals", json::array()}};
    for (const auto &f : list_dir(p)) {
      if (f.rfind("addr_", 0) == 0) port["addr"][f.substr(5)] = read_attr(p + "/" + f);
      if (f.rfind("param_", 0) == 0) port["param"][f.substr(6)] = read_attr(p + "/" + f);
    }
    for (const auto &s : list_dir(p + "/subsystems"))
      port["subsystems"].push_back(s);
    for (const auto &g : list_dir(p + "/ana_groups"))
      port["ana_groups"].push_back(
          {{"grpid", std::stoul(g)}, {"ana", {{"state", read_attr(p + "/ana_groups/" + g + "/ana_state")}}}});
    out["ports"].push_back(port);
  }
  return out;
}

void clear(const std::string &ram_dir) {
  require_nvmet();
  for (const auto &id : list_dir(nvmet_root + "/ports")) {
    const std::string p = port_path(id);
    for (const auto &s : list_dir(p + "/subsystems"))
      remove_link(p + "/subsystems/" + s, true);
    for (const auto &r : list_dir(p + "/referrals"))
      remove_dir(p + "/referrals/" + r, true);
    for (const auto &g : list_dir(p + "/ana_groups"))
      if (g != "1") remove_dir(p + "/ana_groups/" + g, true);
    remove_dir(p, true);
  }
  for (const auto &nqn : list_dir(nvmet_root + "/subsystems")) {
    const std::string sp = sub_path(nqn);
    for (const auto &id : list_dir(sp + "/namespaces")) {
      const std::string np = sp + "/namespaces/" + id;
      if (read_attr(np + "/enable") == "1") write_attr(np + "/enable", "0");
      remove_dir(np, true);
    }
    for (const auto &h : list_dir(sp + "/allowed_hosts"))
      remove_link(sp + "/allowed_hosts/" + h, true);
    remove_dir(sp, true);
  }
  for (const auto &h : list_dir(nvmet_root + "/hosts"))
    remove_dir(nvmet_root + "/hosts/" + h, true);
  std::error_code ec;
  if (!ram_dir.empty() && fs::is_directory(ram_dir, ec))
    for (const auto &e : fs::directory_iterator(ram_dir, ec))
      if (e.path().extension() == ".img") fs::remove(e.path(), ec);
}

static std::string jstr(const json &j, const char *key) {
  if (!j.contains(key)) return "";
  const json &v = j[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

void restore(const json &in) {
  require_nvmet();
  clear(""); // objects only: RAM files may back the configuration being restored
  Journal j;
  for (const auto &h : in.value("hosts", json::array())) {
    const std::string hp = nvmet_root + "/hosts/" + jstr(h, "nqn");
    j.mkdir(hp);
    for (const char *attr : kAuthAttrs)
      if (!jstr(h, attr).empty()) j.write(hp + "/" + attr, jstr(h, attr), std::string(attr).find("key") != std::string::npos);
  }
  for (const auto &s : in.value("subsystems", json::array())) {
    const std::string nqn = jstr(s, "nqn");
    if (nqn.empty()) throw std::runtime_error("subsystems[]: nqn missing");
    const std::string sp = sub_path(nqn);
    j.mkdir(sp);
    // Named copies: ranging over .items() of a temporary would dangle.
    const json attrs = s.value("attr", json::object());
    for (auto &[k, v] : attrs.items()) {
      if (k == "version" || k == "qid_max" || k == "cntlid_min" || k == "cntlid_max" || k == "firmware" || k == "ieee_oui")
        continue;
      if (exists(sp + "/attr_" + k)) j.write(sp + "/attr_" + k, v.is_string() ? v.get<std::string>() : v.dump());
    }
    for (const auto &h : s.value("allowed_hosts", json::array()))
      j.symlink(nvmet_root + "/hosts/" + h.get<std::string>(), sp + "/allowed_hosts/" + h.get<std::string>());
    for (const auto &n : s.value("namespaces", json::array())) {
      const std::string np = fmt::format("{}/namespaces/{}", sp, n.value("nsid", 1));
      j.mkdir(np);
      const json dev = n.value("device", json::object());
      j.write(np + "/device_path", jstr(dev, "path"));
      if (!jstr(dev, "uuid").empty()) j.write(np + "/device_uuid", jstr(dev, "uuid"));
      if (!jstr(dev, "nguid").empty()) j.write(np + "/device_nguid", jstr(dev, "nguid"));
      if (n.contains("ana_grpid") && exists(np + "/ana_grpid"))
        j.write(np + "/ana_grpid", std::to_string(n["ana_grpid"].get<unsigned>()));
      if (n.value("buffered_io", 0) && exists(np + "/buffered_io")) j.write(np + "/buffered_io", "1");
      if (n.value("enable", 1)) j.write(np + "/enable", "1");
    }
  }
  for (const auto &p : in.value("ports", json::array())) {
    const std::string pp = port_path(std::to_string(p.value("portid", 1)));
    j.mkdir(pp);
    const json addr = p.value("addr", json::object()), param = p.value("param", json::object());
    // The transport type first (the security type needs TCP), the
    // security type before its requirement (nvmet resets addr_treq when
    // addr_tsas changes), the rest in any order. A kernel without
    // addr_tsas can take "none" by leaving it out; a TLS port it cannot
    // take fails the restore (it would come up in plaintext).
    static const char *const kFirst[] = {"trtype", "adrfam", "traddr", "trsvcid", "tsas", "treq"};
    for (const char *k : kFirst) {
      if (!addr.contains(k)) continue;
      const std::string v = addr[k].get<std::string>();
      if (std::string(k) == "tsas" && v == "none" && !exists(pp + "/addr_tsas")) continue;
      j.write(pp + "/addr_" + k, v);
    }
    for (auto &[k, v] : addr.items())
      if (std::find(std::begin(kFirst), std::end(kFirst), k) == std::end(kFirst))
        j.write(pp + "/addr_" + k, v.get<std::string>());
    for (auto &[k, v] : param.items())
      if (exists(pp + "/param_" + k)) j.write(pp + "/param_" + k, v.is_string() ? v.get<std::string>() : v.dump());
    for (const auto &g : p.value("ana_groups", json::array())) {
      const std::string gp = fmt::format("{}/ana_groups/{}", pp, g.value("grpid", 1));
      j.mkdir(gp);
      j.write(gp + "/ana_state", jstr(g.value("ana", json::object()), "state"));
    }
    for (const auto &s : p.value("subsystems", json::array()))
      j.symlink(sub_path(s.get<std::string>()), pp + "/subsystems/" + s.get<std::string>());
  }
  j.commit();
}

} // namespace mpnvme::toolkit
