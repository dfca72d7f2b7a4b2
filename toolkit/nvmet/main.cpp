// SPDX-License-Identifier: GPL-2.0-only
// mpnvme-nvmet: the Linux kernel's NVMe target and host for the engine's
// job files: create exactly what a job expects on nvmet (configfs), save and
// restore nvmetcli JSON, connect the kernel host to a job's paths.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/cli.hpp"
#include "lib/base/json_error.hpp"
#include "lib/config/job_engine_options.hpp"
#include "toolkit/common/iopolicy.hpp"
#include "toolkit/nvmet/configfs.hpp"
#include "toolkit/nvmet/connect_options.hpp"
#include "toolkit/nvmet/host.hpp"
#include "toolkit/nvmet/nvmet.hpp"
#include "toolkit/nvmet/tls_keyring.hpp"

using namespace mpnvme;
using namespace mpnvme::toolkit;

namespace {

int fail(const std::string &msg) {
  fmt::print(stderr, "mpnvme-nvmet: {}\n", msg);
  return 1;
}

// A job-level option the same in every job of the file (or absent).
std::string job_option(const std::vector<JobSection> &jobs, const std::string &key, const std::string &path) {
  std::string v;
  for (const auto &j : jobs) {
    const std::string x = j.get(key).value_or("");
    if (!v.empty() && !x.empty() && x != v)
      throw std::runtime_error(fmt::format("{}: jobs disagree on {}= ('{}' and '{}')", path, key, v, x));
    if (!x.empty()) v = x;
  }
  return v;
}

// The engine options of the file as nvmet and the kernel host apply them:
// the first job's, with the options that hold for the whole subsystem
// (transport, iopolicy, sk_priority) the same in every job.
EngineOptions file_options(const std::vector<JobSection> &jobs, const std::string &path) {
  JobSection merged = jobs.front();
  for (const char *key : {"transport", "iopolicy", "sk_priority"}) {
    const std::string v = job_option(jobs, key, path);
    if (v.empty())
      merged.options.erase(key);
    else
      merged.options[key] = v;
  }
  return job_engine_options(merged, path);
}

// transport= absent means the engine's default (mptcp), which falls back to
// TCP against a TCP port: nvmet gets tcp then. An explicit transport=mptcp
// needs a kernel with the mptcp transport.
std::string kernel_transport(const std::string &job_value, const std::string &override) {
  if (!override.empty()) return override;
  return job_value == "mptcp" ? "mptcp" : "tcp";
}

// Everything the command line sets; one subcommand runs.
struct Cli {
  std::string job, trtype, ram_dir = "/dev/shm/mpnvme-nvmet", file, host_traddr, host_iface;
  std::vector<std::string> devices, hosts, ana;
  std::optional<uint32_t> inline_size;
  std::optional<int> ctrl_loss_tmo, reconnect_delay; // override the job's
  bool remove_ram = false;
  CLI::App *apply = nullptr, *save = nullptr, *restore = nullptr, *clear = nullptr, *connect = nullptr, *disconnect = nullptr;
};

void add_subcommands(CLI::App &app, Cli &o) {
  o.apply = app.add_subcommand("apply", "create on nvmet what a job file expects (idempotent)");
  o.apply->add_option("-j,--job", o.job, "fio job file of the engine")->required()->check(CLI::ExistingFile);
  o.apply->add_option("--device", o.devices, "back a namespace with a device or file: NSID=PATH (default: a RAM file)");
  o.apply->add_option("--trtype", o.trtype, "port transport (default: tcp, or mptcp when the job says transport=mptcp)")
      ->check(CLI::IsMember({"tcp", "mptcp"}));
  o.apply->add_option("--inline-data-size", o.inline_size, "param_inline_data_size of new ports");
  o.apply->add_option("--allow-host", o.hosts, "allowed host NQN (default: any host)");
  o.apply->add_option("--ana", o.ana, "ANA state of group 1 on the port of a path: PATH:STATE (PATH 1-based)");
  o.apply->add_option("--ram-dir", o.ram_dir, "where RAM namespace files go")->capture_default_str();
  o.save = app.add_subcommand("save", "print (or write) the nvmet configuration as nvmetcli JSON");
  o.save->add_option("FILE", o.file, "output file (default: standard output)");
  o.restore = app.add_subcommand("restore", "replace the nvmet configuration with an nvmetcli JSON file");
  o.restore->add_option("FILE", o.file, "nvmetcli JSON")->required()->check(CLI::ExistingFile);
  o.clear = app.add_subcommand("clear", "remove every nvmet port, subsystem, namespace and host");
  o.clear->add_flag("--remove-ram-files", o.remove_ram, "also delete the RAM namespace files apply created (in --ram-dir)");
  o.clear->add_option("--ram-dir", o.ram_dir, "where apply put RAM namespace files")->capture_default_str();
  o.connect = app.add_subcommand("connect", "connect the kernel host to every path of a job");
  o.connect->add_option("-j,--job", o.job, "fio job file of the engine")->required()->check(CLI::ExistingFile);
  o.connect->add_option("--trtype", o.trtype, "host transport (default as for apply)")->check(CLI::IsMember({"tcp", "mptcp"}));
  o.connect->add_option("--host-traddr", o.host_traddr, "local address to connect from");
  o.connect->add_option("--host-iface", o.host_iface, "local interface to connect through");
  o.connect->add_option("--ctrl-loss-tmo", o.ctrl_loss_tmo,
                        "seconds before a lost controller is removed, -1 never (default: the job's ctrl_loss_tmo)");
  o.connect->add_option("--reconnect-delay", o.reconnect_delay,
                        "seconds between reconnect attempts (default: the job's reconnect_delay)");
  o.disconnect = app.add_subcommand("disconnect", "disconnect the controllers that connect created, or those of a job's paths");
  o.disconnect->add_option("-j,--job", o.job, "disconnect every kernel controller of this job's subsystem and paths")
      ->check(CLI::ExistingFile);
}

// A namespace id as the user typed it (--device NSID=PATH).
uint32_t parse_nsid(const std::string &text, const std::string &option) {
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos || std::stoull(text) == 0 ||
      std::stoull(text) >= 0xffffffffull)
    throw std::invalid_argument(fmt::format("{}: '{}' is not a namespace id (1..4294967294)", option, text));
  return static_cast<uint32_t>(std::stoull(text));
}

int cmd_apply(const Cli &o, const std::vector<JobSection> &jobs, const target::TargetConfig &cfg, const std::string &tr) {
  ApplyOptions a;
  a.trtype = tr;
  a.ram_dir = o.ram_dir;
  a.inline_data_size = o.inline_size;
  a.allowed_hosts = o.hosts;
  for (const auto &d : o.devices) {
    const auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0) return fail(fmt::format("--device {}: expected NSID=PATH", d));
    a.devices[parse_nsid(d.substr(0, eq), "--device " + d)] = d.substr(eq + 1);
  }
  for (const auto &x : o.ana) {
    const auto c = x.find(':');
    if (c == std::string::npos || !parse_ana_state(x.substr(c + 1)) || c == 0 ||
        x.substr(0, c).find_first_not_of("0123456789") != std::string::npos)
      return fail(fmt::format(
          "--ana {}: expected PATH:STATE with STATE optimized, non-optimized, inaccessible, persistent-loss or change", x));
    a.ana[std::stoul(x.substr(0, c))] = x.substr(c + 1);
  }
  // The target side of the job's priority pair: nvmet_tcp's global so_priority.
  if (!job_option(jobs, "sk_priority", o.job).empty()) a.so_priority = file_options(jobs, o.job).sk_priority.for_queue(1);
  for (const auto &p : apply(cfg, a))
    fmt::print("port {} {} {} -> {}\n", p.id, tr, p.address, cfg.subsystems.front().nqn);
  for (const auto &s : cfg.subsystems)
    for (const auto &n : s.namespaces)
      fmt::print("namespace {} {}: {}\n", s.nqn, n.nsid,
                 a.devices.count(n.nsid) ? a.devices.at(n.nsid) : fmt::format("RAM {} bytes", n.size));
  return 0;
}

// The job's host identity, DH-HMAC-CHAP secrets and TLS PSKs, for the
// kernel host: the same host NQN the target side was told about.
void add_job_auth(ConnectRequest &r, const EngineOptions &e) {
  if (!e.auth.secret && !e.tls.enabled) return;
  r.hostnqn = e.host.hostnqn; // the identity the keys belong to, also when the job names none
  r.hostid = format_uuid(e.host.hostid);
  if (e.tls.enabled) {
    insert_tls_psks(*e.tls.key, e.host.hostnqn, r.subnqn, e.tls.compat);
    r.tls = true;
  }
  if (!e.auth.secret) return;
  r.dhchap_secret = dhchap::format_secret(*e.auth.secret);
  if (e.auth.ctrl_secret) r.dhchap_ctrl_secret = dhchap::format_secret(*e.auth.ctrl_secret);
}

int cmd_connect(const Cli &o, const std::vector<JobSection> &jobs, const target::TargetConfig &cfg, const std::string &tr) {
  ConnectRequest r;
  r.subnqn = cfg.subsystems.front().nqn;
  for (const auto &p : cfg.ports)
    r.paths.push_back(p.addr);
  r.transport = tr;
  const EngineOptions job = file_options(jobs, o.job); // once: a secret file is read (and warned about) here
  const std::vector<std::string> notes = connect_options_from_job(r, job, jobs, o.job);
  // The command line's binding wins over the job's, for every path.
  if (!o.host_traddr.empty()) r.host_traddr.assign(r.paths.size(), o.host_traddr);
  if (!o.host_iface.empty()) r.host_iface.assign(r.paths.size(), o.host_iface);
  if (o.ctrl_loss_tmo) r.ctrl_loss_tmo = *o.ctrl_loss_tmo;
  if (o.reconnect_delay) r.reconnect_delay = *o.reconnect_delay;
  add_job_auth(r, job);
  if (!job_option(jobs, "iopolicy", o.job).empty()) {
    const IoPolicy policy = job.iopolicy;
    r.iopolicy = iopolicy_name(policy);
    if (!kernel_has_iopolicy(policy))
      return fail(
          fmt::format("{}: iopolicy={} (the kernel accepts: {})", o.job, r.iopolicy, fmt::join(kernel_iopolicy_names(), ", ")));
  }
  for (const auto &n : notes)
    fmt::print(stderr, "mpnvme-nvmet: {}\n", n);
  const ConnectResult res = connect_job(r);
  for (const auto &c : res.controllers)
    fmt::print("controller {}\n", c);
  fmt::print("subsystem {}{}\n", res.subsystem, r.iopolicy.empty() || !res.note.empty() ? "" : " iopolicy=" + r.iopolicy);
  fmt::print("device {}\n", res.device);
  if (!res.note.empty()) fmt::print(stderr, "mpnvme-nvmet: {}\n", res.note);
  return 0;
}

int cmd_save(const Cli &o) {
  const std::string text = save().dump(2) + "\n";
  if (o.file.empty()) {
    std::cout << text;
    return 0;
  }
  // The configuration may hold DH-HMAC-CHAP keys: only its owner reads it.
  const int fd = ::open(o.file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || fchmod(fd, 0600) < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return fail(fmt::format("{}: cannot write: {}", o.file, strerror(err)));
  }
  ::close(fd);
  return 0;
}

int cmd_restore(const Cli &o) {
  std::ifstream f(o.file);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception &e) {
    return fail(fmt::format("{}: not JSON: {}", o.file, mpnvme::json_error(e)));
  }
  restore(j);
  return 0;
}

int cmd_disconnect(const Cli &o) {
  if (o.job.empty()) {
    for (const auto &c : disconnect_recorded())
      fmt::print("disconnected {}\n", c);
    return 0;
  }
  const target::TargetConfig cfg = target::config_from_jobs(read_jobfile(o.job), o.job);
  std::vector<PathAddr> paths;
  for (const auto &p : cfg.ports)
    paths.push_back(p.addr);
  for (const auto &c : disconnect_paths(cfg.subsystems.front().nqn, paths))
    fmt::print("disconnected {}\n", c);
  return 0;
}

int run(const Cli &o) {
  if (o.apply->parsed() || o.connect->parsed()) {
    const auto jobs = read_jobfile(o.job);
    target::TargetConfig cfg = target::config_from_jobs(jobs, o.job);
    target::finalize(cfg);
    const std::string tr = kernel_transport(job_option(jobs, "transport", o.job), o.trtype);
    return o.apply->parsed() ? cmd_apply(o, jobs, cfg, tr) : cmd_connect(o, jobs, cfg, tr);
  }
  if (o.save->parsed()) return cmd_save(o);
  if (o.restore->parsed()) return cmd_restore(o);
  if (o.clear->parsed()) {
    clear(o.remove_ram ? o.ram_dir : "");
    return 0;
  }
  return cmd_disconnect(o);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"mpnvme-nvmet: kernel NVMe target (nvmet) and host for mpnvme job files"};
  app.set_version_flag("--version", "mpnvme-nvmet " MPNVME_VERSION);
  app.require_subcommand(1);
  Cli o;
  add_subcommands(app, o);
  if (const int rc = mpnvme::parse_command_line(app, argc, argv); rc >= 0) return rc;
  if (const char *r = std::getenv("MPNVME_NVMET_ROOT")) nvmet_root = r; // tests against a prepared tree
  try {
    return run(o);
  } catch (const std::exception &e) {
    return fail(e.what());
  }
}
