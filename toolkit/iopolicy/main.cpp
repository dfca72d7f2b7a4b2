// SPDX-License-Identifier: GPL-2.0-only
// mpnvme-iopolicy: show and set the native NVMe multipath I/O policy.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "lib/base/cli.hpp"
#include "toolkit/common/iopolicy.hpp"

using namespace mpnvme::toolkit;
using mpnvme::read_first_line;

namespace {

int fail(const std::string &msg) {
  fmt::print(stderr, "mpnvme-iopolicy: {}\n", msg);
  return 1;
}

void show(const std::vector<SubsystemInfo> &subs, bool json) {
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto &s : subs) {
      nlohmann::json paths = nlohmann::json::array();
      for (const auto &p : s.paths)
        paths.push_back({{"controller", p.controller},
                         {"transport", p.transport},
                         {"address", p.address},
                         {"state", p.state},
                         {"ana_state", p.ana_state},
                         {"path_device", p.path_dev},
                         {"reads", p.reads},
                         {"writes", p.writes}});
      j.push_back({{"name", s.name}, {"nqn", s.nqn}, {"iopolicy", s.iopolicy}, {"device", s.head_dev}, {"paths", paths}});
    }
    fmt::print("{}\n", j.dump(2));
    return;
  }
  if (subs.empty()) fmt::print("no NVMe subsystems\n");
  for (const auto &s : subs) {
    fmt::print("{} {} iopolicy={}{}\n", s.name, s.nqn, s.iopolicy.empty() ? "-" : s.iopolicy,
               s.head_dev.empty() ? "" : " device=/dev/" + s.head_dev);
    for (const auto &p : s.paths)
      fmt::print("  {} {} {} {}{} reads={} writes={}\n", p.controller, p.transport, p.address, p.state,
                 p.ana_state.empty() ? "" : " ana=" + p.ana_state, p.reads, p.writes);
  }
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"mpnvme-iopolicy: show or set the native NVMe multipath I/O policy (numa, round-robin, queue-depth)"};
  app.set_version_flag("--version", "mpnvme-iopolicy " MPNVME_VERSION);
  app.require_subcommand(0, 1);
  bool json = false;
  app.add_flag("--json", json, "machine-readable output for show");
  CLI::App *show_cmd = app.add_subcommand("show", "list subsystems, their iopolicy and paths (the default)");
  show_cmd->add_flag("--json", json, "machine-readable output");
  CLI::App *set_cmd = app.add_subcommand("set", "set the iopolicy");
  std::string policy, nqn, subsys;
  bool all = false, deflt = false;
  set_cmd->add_option("POLICY", policy, fmt::format("{}", fmt::join(mpnvme::kernel_iopolicy_names(), ", ")))->required();
  auto *o_nqn = set_cmd->add_option("--nqn", nqn, "the subsystem with this NQN");
  auto *o_sub = set_cmd->add_option("--subsys", subsys, "the subsystem with this sysfs name (nvme-subsysN)");
  auto *o_all = set_cmd->add_flag("--all", all, "every subsystem");
  auto *o_def = set_cmd->add_flag("--default", deflt, "the nvme_core default for subsystems created later");
  o_nqn->excludes(o_sub)->excludes(o_all)->excludes(o_def);
  o_sub->excludes(o_all)->excludes(o_def);
  o_all->excludes(o_def);
  if (const int rc = mpnvme::parse_command_line(app, argc, argv); rc >= 0) return rc;

  if (set_cmd->parsed()) { // the command line first, then the kernel
    const std::vector<std::string> known = mpnvme::kernel_iopolicy_names();
    if (std::find(known.begin(), known.end(), policy) == known.end())
      return fail(fmt::format("unknown policy '{}' (accepted: {})", policy, fmt::join(known, ", ")));
    if (!nqn.empty() + !subsys.empty() + all + deflt != 1)
      return fail("set needs one of --nqn NQN, --subsys NAME, --all, --default");
  }
  if (read_first_line("/sys/module/nvme_core/parameters/multipath").empty())
    return fail("nvme_core is not loaded: no NVMe subsystems and no iopolicy on this kernel");
  std::vector<SubsystemInfo> subs;
  try {
    subs = scan_topology();
  } catch (const std::exception &e) {
    return fail(e.what());
  }
  if (!set_cmd->parsed()) {
    show(subs, json);
    return 0;
  }
  if (!native_multipath_enabled())
    return fail("native NVMe multipath is disabled (nvme_core multipath=N): there is no per-subsystem iopolicy; "
                "boot with nvme_core.multipath=Y");
  try {
    if (deflt) {
      set_default_iopolicy(policy);
      fmt::print("nvme_core default iopolicy: {}\n", policy);
      return 0;
    }
    std::vector<const SubsystemInfo *> chosen;
    for (const auto &s : subs)
      if (all || s.nqn == nqn || s.name == subsys) chosen.push_back(&s);
    if (chosen.empty()) {
      std::string have;
      for (const auto &s : subs)
        have += fmt::format(" {} ({})", s.name, s.nqn);
      return fail(fmt::format("no NVMe subsystem {} (present:{})",
                              !nqn.empty()     ? "with NQN " + nqn
                              : subsys.empty() ? "at all"
                                               : subsys,
                              have.empty() ? " none" : have));
    }
    for (const SubsystemInfo *s : chosen) {
      set_subsystem_iopolicy(*s, policy);
      fmt::print("{} {} iopolicy={}\n", s->name, s->nqn, policy);
    }
  } catch (const std::exception &e) {
    return fail(e.what());
  }
  return 0;
}
