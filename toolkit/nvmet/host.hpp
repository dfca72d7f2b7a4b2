// SPDX-License-Identifier: GPL-2.0-only
// The kernel NVMe/TCP host side of mpnvme-nvmet: connect every path of a
// job through libnvme (nvmf_add_ctrl), remember exactly what was connected,
// and disconnect those controllers again.
#pragma once
#include <string>
#include <vector>

#include "lib/net/paths.hpp"

namespace mpnvme::toolkit {

struct ConnectRequest {
  std::string subnqn;
  std::vector<PathAddr> paths;
  std::string transport = "tcp";
  std::vector<std::string> host_traddr, host_iface; // per path; empty or "": not bound
  int ctrl_loss_tmo = 600, reconnect_delay = 10;    // seconds; ctrl_loss_tmo -1: forever
  // The job's fabrics options (connect_options.hpp); -1: the kernel's default.
  int queue_size = -1, nr_io_queues = -1, keep_alive_tmo = -1, fast_io_fail_tmo = -1, tos = -1, so_priority = -1;
  bool hdr_digest = false, data_digest = false, disable_sqflow = false;
  std::string iopolicy;        // applied to the subsystem afterwards when set
  std::string hostnqn, hostid; // empty: libnvme's default host
  // DH-HMAC-CHAP secrets as text (DHHC-1:...), passed to the kernel host.
  std::string dhchap_secret, dhchap_ctrl_secret;
  bool tls = false; // the PSKs are in the .nvme keyring already (insert_tls_psks)
};

struct ConnectResult {
  std::vector<std::string> controllers; // nvme0, nvme1
  std::string subsystem;                // nvme-subsys0
  std::string device;                   // /dev/nvme0n1
  std::string note;                     // what the user should know (multipath off)
};

extern std::string state_file; // /run/mpnvme-nvmet/connected

// Connects all paths or none (rolls back); throws std::runtime_error.
ConnectResult connect_job(const ConnectRequest &r);
// Disconnects what connect_job recorded; returns the controllers removed.
std::vector<std::string> disconnect_recorded();
// Disconnects every kernel controller of `subnqn` on one of `paths`
// (record or not: after a reboot, or when another tool connected them);
// returns the controllers removed.
std::vector<std::string> disconnect_paths(const std::string &subnqn, const std::vector<PathAddr> &paths);

} // namespace mpnvme::toolkit
