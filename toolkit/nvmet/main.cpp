// SPDX-License-Identifier: GPL-2.0-only
// mpnvme-nvmet: the Linux kernel's NVMe target and host for the engine's
// job files: create exactly what a job expects on nvmet (configfs), save and
// restore nvmetcli JSON, connect the kernel host to a job's paths.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "cli.hpp"
#include "configfs.hpp"
#include "host.hpp"
#include "iopolicy.hpp"
#include "jobfile.hpp"
#include "nvmet.hpp"
#include "priority_pairs.hpp"

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

// transport= absent means the engine's default (mptcp), which falls back to
// TCP against a TCP port: nvmet gets tcp then. An explicit transport=mptcp
// needs a kernel with the mptcp transport.
std::string kernel_transport(const std::string &job_value, const std::string &override) {
  if (!override.empty()) return override;
  return job_value == "mptcp" ? "mptcp" : "tcp";
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"mpnvme-nvmet: kernel NVMe target (nvmet) and host for mpnvme job files"};
  app.set_version_flag("--version", "mpnvme-nvmet " MPNVME_VERSION);
  app.require_subcommand(1);
  std::string job, trtype, ram_dir = "/dev/shm/mpnvme-nvmet", file, host_traddr, host_iface;
  std::vector<std::string> devices, hosts, ana;
  std::optional<uint32_t> inline_size;
  int ctrl_loss_tmo = 600, reconnect_delay = 10;

  auto *apply_cmd = app.add_subcommand("apply", "create on nvmet what a job file expects (idempotent)");
  apply_cmd->add_option("-j,--job", job, "fio job file of the engine")->required()->check(CLI::ExistingFile);
  apply_cmd->add_option("--device", devices, "back a namespace with a device or file: NSID=PATH (default: a RAM file)");
  apply_cmd->add_option("--trtype", trtype, "port transport (default: tcp, or mptcp when the job says transport=mptcp)")
      ->check(CLI::IsMember({"tcp", "mptcp"}));
  apply_cmd->add_option("--inline-data-size", inline_size, "param_inline_data_size of new ports");
  apply_cmd->add_option("--allow-host", hosts, "allowed host NQN (default: any host)");
  apply_cmd->add_option("--ana", ana, "ANA state of group 1 on the port of a path: PATH:STATE (PATH 1-based)");
  apply_cmd->add_option("--ram-dir", ram_dir, "where RAM namespace files go")->capture_default_str();
  auto *save_cmd = app.add_subcommand("save", "print (or write) the nvmet configuration as nvmetcli JSON");
  save_cmd->add_option("FILE", file, "output file (default: standard output)");
  auto *restore_cmd = app.add_subcommand("restore", "replace the nvmet configuration with an nvmetcli JSON file");
  restore_cmd->add_option("FILE", file, "nvmetcli JSON")->required()->check(CLI::ExistingFile);
  auto *clear_cmd = app.add_subcommand("clear", "remove every nvmet port, subsystem, namespace and host");
  bool remove_ram = false;
  clear_cmd->add_flag("--remove-ram-files", remove_ram, "also delete the RAM namespace files apply created (in --ram-dir)");
  clear_cmd->add_option("--ram-dir", ram_dir, "where apply put RAM namespace files")->capture_default_str();
  auto *connect_cmd = app.add_subcommand("connect", "connect the kernel host to every path of a job");
  connect_cmd->add_option("-j,--job", job, "fio job file of the engine")->required()->check(CLI::ExistingFile);
  connect_cmd->add_option("--trtype", trtype, "host transport (default as for apply)")->check(CLI::IsMember({"tcp", "mptcp"}));
  connect_cmd->add_option("--host-traddr", host_traddr, "local address to connect from");
  connect_cmd->add_option("--host-iface", host_iface, "local interface to connect through");
  connect_cmd->add_option("--ctrl-loss-tmo", ctrl_loss_tmo, "seconds before a lost controller is removed")->capture_default_str();
  connect_cmd->add_option("--reconnect-delay", reconnect_delay, "seconds between reconnect attempts")->capture_default_str();
  auto *disconnect_cmd =
      app.add_subcommand("disconnect", "disconnect the controllers that connect created, or those of a job's paths");
  disconnect_cmd->add_option("-j,--job", job, "disconnect every kernel controller of this job's subsystem and paths")
      ->check(CLI::ExistingFile);
  if (const int rc = mpnvme::parse_command_line(app, argc, argv); rc >= 0) return rc;
  if (const char *r = std::getenv("MPNVME_NVMET_ROOT")) nvmet_root = r; // tests against a prepared tree

  try {
    if (apply_cmd->parsed() || connect_cmd->parsed()) {
      const auto jobs = read_jobfile(job);
      const target::TargetConfig cfg = [&] {
        target::TargetConfig c = target::config_from_jobs(jobs, job);
        target::finalize(c);
        return c;
      }();
      const std::string tr = kernel_transport(job_option(jobs, "transport", job), trtype);
      if (apply_cmd->parsed()) {
        ApplyOptions o;
        o.trtype = tr;
        o.ram_dir = ram_dir;
        o.inline_data_size = inline_size;
        o.allowed_hosts = hosts;
        for (const auto &d : devices) {
          const auto eq = d.find('=');
          if (eq == std::string::npos || eq == 0) return fail(fmt::format("--device {}: expected NSID=PATH", d));
          o.devices[static_cast<uint32_t>(std::stoul(d.substr(0, eq)))] = d.substr(eq + 1);
        }
        for (const auto &a : ana) {
          const auto c = a.find(':');
          if (c == std::string::npos || !parse_ana_state(a.substr(c + 1)))
            return fail(fmt::format(
                "--ana {}: expected PATH:STATE with STATE optimized, non-optimized, inaccessible, persistent-loss or change", a));
          o.ana[std::stoul(a.substr(0, c))] = a.substr(c + 1);
        }
        if (const std::string prio = job_option(jobs, "sk_priority", job); !prio.empty()) {
          // The target side of the job's priority pair: nvmet_tcp's global so_priority.
          o.so_priority = PriorityPairs::parse(prio, "sk_priority", 0x7fffffff).for_queue(1);
        }
        for (const auto &p : apply(cfg, o))
          fmt::print("port {} {} {} -> {}\n", p.id, tr, p.address, cfg.subsystems.front().nqn);
        for (const auto &s : cfg.subsystems)
          for (const auto &n : s.namespaces)
            fmt::print("namespace {} {}: {}\n", s.nqn, n.nsid,
                       o.devices.count(n.nsid) ? o.devices.at(n.nsid) : fmt::format("RAM {} bytes", n.size));
      } else {
        ConnectRequest r;
        r.subnqn = cfg.subsystems.front().nqn;
        for (const auto &p : cfg.ports)
          r.paths.push_back(p.addr);
        r.transport = tr;
        r.host_traddr = host_traddr;
        r.host_iface = host_iface;
        r.ctrl_loss_tmo = ctrl_loss_tmo;
        r.reconnect_delay = reconnect_delay;
        r.iopolicy = job_option(jobs, "iopolicy", job);
        if (!r.iopolicy.empty() && std::find(kIoPolicies.begin(), kIoPolicies.end(), r.iopolicy) == kIoPolicies.end())
          return fail(fmt::format("{}: iopolicy={} (accepted: numa, round-robin, queue-depth)", job, r.iopolicy));
        const ConnectResult res = connect_job(r);
        for (const auto &c : res.controllers)
          fmt::print("controller {}\n", c);
        fmt::print("subsystem {}{}\n", res.subsystem, r.iopolicy.empty() || !res.note.empty() ? "" : " iopolicy=" + r.iopolicy);
        fmt::print("device {}\n", res.device);
        if (!res.note.empty()) fmt::print(stderr, "mpnvme-nvmet: {}\n", res.note);
      }
    } else if (save_cmd->parsed()) {
      const std::string text = save().dump(2) + "\n";
      if (file.empty()) {
        std::cout << text;
      } else {
        std::ofstream f(file);
        if (!(f << text)) return fail(fmt::format("{}: cannot write", file));
      }
    } else if (restore_cmd->parsed()) {
      std::ifstream f(file);
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(f);
      } catch (const nlohmann::json::exception &e) {
        return fail(fmt::format("{}: not JSON: {}", file, e.what()));
      }
      restore(j);
    } else if (clear_cmd->parsed()) {
      clear(remove_ram ? ram_dir : "");
    } else if (!job.empty()) {
      const target::TargetConfig cfg = target::config_from_jobs(read_jobfile(job), job);
      std::vector<PathAddr> paths;
      for (const auto &p : cfg.ports)
        paths.push_back(p.addr);
      for (const auto &c : disconnect_paths(cfg.subsystems.front().nqn, paths))
        fmt::print("disconnected {}\n", c);
    } else {
      for (const auto &c : disconnect_recorded())
        fmt::print("disconnected {}\n", c);
    }
  } catch (const std::exception &e) {
    return fail(e.what());
  }
  return 0;
}
