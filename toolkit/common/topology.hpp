// SPDX-License-Identifier: GPL-2.0-only
// The host's NVMe topology as libnvme scans it from sysfs: subsystems, their
// controllers (paths) and per-path I/O counters. Shared by mpnvme-iopolicy
// and mpnvme-nvmet.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/first_line.hpp"

namespace mpnvme::toolkit {

struct PathInfo {
  std::string controller;         // nvme0
  std::string transport;          // tcp, mptcp (its connection is MPTCP: mptcp_sockets.hpp), rdma, ...
  std::string address;            // traddr=...,trsvcid=...
  std::string state;              // live, connecting, ...
  std::string ana_state;          // optimized, ... (empty without ANA)
  std::string path_dev;           // nvme0c0n1 (hidden per-path disk), empty if none
  uint64_t reads = 0, writes = 0; // completed I/Os of the path disk
};

struct SubsystemInfo {
  std::string name; // nvme-subsys0
  std::string nqn;
  std::string iopolicy;
  std::string sysfs_dir;
  std::string head_dev; // nvme0n1: the multipath block device
  std::vector<PathInfo> paths;
};

// Throws std::runtime_error when libnvme cannot scan.
std::vector<SubsystemInfo> scan_topology();

// Module-level facts that explain refusals.
bool native_multipath_enabled(); // /sys/module/nvme_core/parameters/multipath
std::string kernel_release();

} // namespace mpnvme::toolkit
