// SPDX-License-Identifier: GPL-2.0-only
#include "toolkit/nvmet/host.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>
#include <unistd.h>

#include "toolkit/common/iopolicy.hpp"
#include "toolkit/common/mptcp_sockets.hpp"
#include "toolkit/common/topology.hpp"

extern "C" {
#include <nvme/fabrics.h>
#include <nvme/tree.h>
#include <nvme/util.h>
}

namespace mpnvme::toolkit {

std::string state_file = "/run/mpnvme-nvmet/connected";

static void delete_controller(const std::string &name) {
  std::ofstream f("/sys/class/nvme/" + name + "/delete_controller");
  f << "1";
}

// The request's fabrics options as libnvme passes them to /dev/nvme-fabrics.
static nvme_fabrics_config fabrics_config(const ConnectRequest &r) {
  nvme_fabrics_config cfg;
  nvmf_default_config(&cfg); // always from the defaults: a zeroed config means ctrl_loss_tmo=0
  cfg.ctrl_loss_tmo = r.ctrl_loss_tmo;
  cfg.reconnect_delay = r.reconnect_delay;
  if (r.queue_size > 0) cfg.queue_size = r.queue_size;
  if (r.nr_io_queues > 0) cfg.nr_io_queues = r.nr_io_queues;
  if (r.keep_alive_tmo >= 0) cfg.keep_alive_tmo = r.keep_alive_tmo;
  cfg.fast_io_fail_tmo = r.fast_io_fail_tmo;
  cfg.tos = r.tos;
  cfg.hdr_digest = r.hdr_digest;
  cfg.data_digest = r.data_digest;
  cfg.disable_sqflow = r.disable_sqflow;
  cfg.tls = r.tls; // the kernel finds the PSK in .nvme by host and subsystem (tlshd does the handshake)
  return cfg;
}

ConnectResult connect_job(const ConnectRequest &r) {
  if (geteuid() != 0) throw std::runtime_error("connecting the kernel host needs root");
  if (access("/dev/nvme-fabrics", W_OK) != 0)
    throw std::runtime_error("/dev/nvme-fabrics: missing: load the nvme-tcp module (modprobe nvme-tcp)");
  std::unique_ptr<nvme_root, decltype(&nvme_free_tree)> root(nvme_create_root(nullptr, 0), nvme_free_tree);
  if (!root) throw std::runtime_error("libnvme: cannot create the topology root");
  nvme_host_t h = r.hostnqn.empty()
                      ? nvme_default_host(root.get())
                      : nvme_lookup_host(root.get(), r.hostnqn.c_str(), r.hostid.empty() ? nullptr : r.hostid.c_str());
  if (!h) throw std::runtime_error("libnvme: cannot create the host object");
  // nvme-tcp's socket priority is one module parameter for every
  // controller connected from now on.
  if (r.so_priority >= 0) {
    std::ofstream prio("/sys/module/nvme_tcp/parameters/so_priority");
    if (!(prio << r.so_priority << std::flush))
      throw std::runtime_error("/sys/module/nvme_tcp/parameters/so_priority: cannot set the job's sk_priority");
  }
  ConnectResult res;
  // The path's local binding, or none.
  const auto bound = [](const std::vector<std::string> &v, size_t i) {
    return i < v.size() && !v[i].empty() ? v[i].c_str() : nullptr;
  };
  try {
    for (size_t i = 0; i < r.paths.size(); i++) {
      const PathAddr &p = r.paths[i];
      nvme_ctrl_t c = nvme_create_ctrl(root.get(), r.subnqn.c_str(), r.transport.c_str(), p.addr.c_str(), bound(r.host_traddr, i),
                                       bound(r.host_iface, i), p.service.c_str());
      if (!c) throw std::runtime_error(fmt::format("{}: libnvme could not create a controller object", p.display()));
      if (!r.dhchap_secret.empty()) nvme_ctrl_set_dhchap_host_key(c, r.dhchap_secret.c_str());
      if (!r.dhchap_ctrl_secret.empty()) nvme_ctrl_set_dhchap_key(c, r.dhchap_ctrl_secret.c_str());
      nvme_fabrics_config cfg = fabrics_config(r);
      if (nvmf_add_ctrl(h, c, &cfg) < 0) {
        const int err = errno;
        std::string why = nvme_errno_to_string(err);
        if (r.transport == "mptcp" && (err == EINVAL || err == ENVME_CONNECT_INVAL || err == ENVME_CONNECT_INVAL_TR))
          why += " (this kernel's NVMe host has no mptcp transport, which needs the NVMe-over-MPTCP series, or it "
                 "refused an option)";
        throw std::runtime_error(fmt::format("connect {} to {} over {}: {}", r.subnqn, p.display(), r.transport, why));
      }
      res.controllers.push_back(nvme_ctrl_get_name(c));
    }
  } catch (...) {
    for (const auto &name : res.controllers)
      delete_controller(name);
    throw;
  }
  // The multipath head appears once the namespace is scanned.
  for (int i = 0; i < 100 && res.device.empty(); i++) {
    for (const auto &s : scan_topology()) {
      if (s.nqn != r.subnqn || s.head_dev.empty()) continue;
      res.subsystem = s.name;
      res.device = "/dev/" + s.head_dev;
      if (r.iopolicy.empty()) continue;
      if (native_multipath_enabled())
        set_subsystem_iopolicy(s, r.iopolicy);
      else
        res.note =
            fmt::format("native NVMe multipath is off: iopolicy={} not applied, every path has its own device", r.iopolicy);
    }
    if (res.device.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::filesystem::create_directories(std::filesystem::path(state_file).parent_path());
  std::ofstream st(state_file, std::ios::app);
  for (const auto &name : res.controllers)
    st << name << ' ' << r.subnqn << '\n';
  if (res.device.empty()) throw std::runtime_error(fmt::format("connected {}, but no namespace appeared within 5 s", r.subnqn));
  return res;
}

std::vector<std::string> disconnect_recorded() {
  if (geteuid() != 0) throw std::runtime_error("disconnecting the kernel host needs root");
  std::ifstream in(state_file);
  std::vector<std::string> removed;
  std::string name, nqn;
  while (in >> name >> nqn) {
    // Only if the controller is still the one we connected (names get reused).
    if (read_first_line("/sys/class/nvme/" + name + "/subsysnqn") != nqn) continue;
    delete_controller(name);
    removed.push_back(name);
  }
  std::error_code ec;
  std::filesystem::remove(state_file, ec);
  return removed;
}

std::vector<std::string> disconnect_paths(const std::string &subnqn, const std::vector<PathAddr> &paths) {
  if (geteuid() != 0) throw std::runtime_error("disconnecting the kernel host needs root");
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto &e : std::filesystem::directory_iterator("/sys/class/nvme", ec)) {
    const std::string dir = e.path().string(), name = e.path().filename().string();
    if (read_first_line(dir + "/subsysnqn") != subnqn) continue;
    const std::string tr = read_first_line(dir + "/transport");
    if (tr != "tcp" && tr != "mptcp") continue;
    const std::string address = read_first_line(dir + "/address");
    const std::string traddr = address_field(address, "traddr"), trsvcid = address_field(address, "trsvcid");
    const bool ours =
        std::any_of(paths.begin(), paths.end(), [&](const PathAddr &p) { return p.addr == traddr && p.service == trsvcid; });
    if (!ours) continue;
    delete_controller(name);
    removed.push_back(name);
  }
  return removed;
}

} // namespace mpnvme::toolkit
