// SPDX-License-Identifier: GPL-2.0-only
// NUMA distances for the numa I/O policy: from the node the job runs on to
// the node of the network interface a path leaves through (sysfs). Unknown
// (virtual interfaces, one-node machines) counts as local, so the policy
// then takes the first usable path, as the kernel does on one node.
#pragma once
#include <string>

namespace mpnvme::host {

constexpr int kLocalDistance = 10; // the kernel's LOCAL_DISTANCE

// The node of the CPU the calling thread runs on, -1 when unknown.
int current_numa_node();
// The interface a connected socket's local address belongs to, "" if none.
std::string interface_of_socket(int fd);
// The node of a network interface's device, -1 when it has none.
int interface_numa_node(const std::string &ifname);
// Distance between two nodes from sysfs; kLocalDistance when either is
// unknown.
int numa_distance(int from, int to);

} // namespace mpnvme::host
