// SPDX-License-Identifier: GPL-2.0-only
#include "toolkit/common/topology.hpp"

#include "lib/base/first_line.hpp"
#include "toolkit/common/mptcp_sockets.hpp"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <sys/utsname.h>

// libnvme 1.3 headers have no C++ linkage guards.
extern "C" {
#include <nvme/tree.h>
}

namespace mpnvme::toolkit {

bool native_multipath_enabled() { return read_first_line("/sys/module/nvme_core/parameters/multipath") == "Y"; }

std::string kernel_release() {
  utsname u{};
  uname(&u);
  return u.release;
}

static std::string str(const char *s) { return s ? s : ""; }

// "reads completed" and "writes completed" of a block device stat file.
static void read_stat(const std::string &dir, PathInfo &p) {
  std::ifstream f(dir + "/stat");
  uint64_t v[5] = {};
  for (auto &x : v)
    f >> x;
  p.reads = v[0];
  p.writes = v[4];
}

std::vector<SubsystemInfo> scan_topology() {
  std::unique_ptr<nvme_root, decltype(&nvme_free_tree)> root(nvme_create_root(nullptr, 0), nvme_free_tree);
  if (!root) throw std::runtime_error("libnvme: cannot create the topology root");
  if (nvme_scan_topology(root.get(), nullptr, nullptr) < 0)
    throw std::runtime_error("libnvme: scanning the NVMe topology failed");
  std::vector<SubsystemInfo> out;
  const std::vector<MptcpPeer> mptcp = mptcp_connections();
  nvme_host_t h;
  nvme_subsystem_t s;
  nvme_for_each_host(root.get(), h) {
    nvme_for_each_subsystem(h, s) {
      SubsystemInfo si;
      si.name = str(nvme_subsystem_get_name(s));
      si.nqn = str(nvme_subsystem_get_nqn(s));
      si.sysfs_dir = str(nvme_subsystem_get_sysfs_dir(s));
      // libnvme 1.3 has no iopolicy getter: the subsystem attribute it is.
      if (char *pol = nvme_get_subsys_attr(s, "iopolicy")) {
        si.iopolicy = pol;
        std::free(pol);
      }
      nvme_ns_t n;
      nvme_subsystem_for_each_ns(s, n) {
        if (si.head_dev.empty()) si.head_dev = str(nvme_ns_get_name(n));
      }
      nvme_ctrl_t c;
      // Without native multipath there is no head: each controller has its
      // own namespace device; report the first.
      if (si.head_dev.empty()) {
        nvme_subsystem_for_each_ctrl(s, c) {
          nvme_ns_t cn;
          nvme_ctrl_for_each_ns(c, cn) {
            if (si.head_dev.empty()) si.head_dev = str(nvme_ns_get_name(cn));
          }
        }
      }
      nvme_subsystem_for_each_ctrl(s, c) {
        PathInfo p;
        p.controller = str(nvme_ctrl_get_name(c));
        p.address = str(nvme_ctrl_get_address(c));
        p.transport = controller_transport(str(nvme_ctrl_get_transport(c)), p.address, mptcp);
        p.state = str(nvme_ctrl_get_state(c));
        nvme_path_t path;
        nvme_ctrl_for_each_path(c, path) {
          p.ana_state = str(nvme_path_get_ana_state(path));
          p.path_dev = str(nvme_path_get_name(path));
          read_stat(str(nvme_path_get_sysfs_dir(path)), p);
          break; // one namespace per path is what the tools report
        }
        si.paths.push_back(p);
      }
      out.push_back(si);
    }
  }
  return out;
}

} // namespace mpnvme::toolkit
