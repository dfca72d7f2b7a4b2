// SPDX-License-Identifier: GPL-2.0-only
// Which kernel NVMe/TCP controllers run over MPTCP. The NVMe-over-MPTCP
// series reuses nvme-tcp's controller operations, so a controller's sysfs
// `transport` reads "tcp" either way; its connections are what tell. The
// MPTCP sockets of this network namespace come from sock_diag (as `ss -M`).
#pragma once
#include <string>
#include <vector>

namespace mpnvme::toolkit {

struct MptcpPeer {
  std::string remote_addr, local_addr; // numeric, as sysfs writes them
  unsigned remote_port = 0;
};

// The established MPTCP connections of this network namespace; empty when
// the kernel has no MPTCP diagnostics (mptcp_diag) or no MPTCP at all.
std::vector<MptcpPeer> mptcp_connections();

// The transport of a controller whose sysfs says `transport` and whose
// sysfs `address` is "traddr=A,trsvcid=P[,src_addr=S]": "mptcp" when an
// MPTCP connection of this namespace goes to A:P (from S when given).
std::string controller_transport(const std::string &transport, const std::string &address, const std::vector<MptcpPeer> &mptcp);

// "traddr=10.1.1.1,trsvcid=4420,src_addr=10.1.1.2" -> the value of `key`.
std::string address_field(const std::string &address, const std::string &key);

} // namespace mpnvme::toolkit
