// SPDX-License-Identifier: GPL-2.0-only
// What to tell a user whose MPTCP connection never grew past its first
// subflow although more paths exist (which path manager setting stops the
// joins, named as the ip-mptcp(8) command that changes it), or whose MPTCP
// connection fell back to TCP.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lib/net/sock.hpp"

namespace mpnvme::host {

// Why an MPTCP connection in state `st` has no additional subflow, and the
// setting to change; the host's side of the path manager as MPTCP_INFO
// reports it.
std::string one_subflow_advice(const MptcpState &st);

// Addresses of `family` on interfaces that are up, other than loopback and
// IPv6 link-local: the paths this host could open subflows from.
unsigned usable_local_addresses(int family);

// Why a connection that asked for MPTCP got TCP, in words for the log,
// given the namespace's MPTcpExt Blackhole counter (netstat_counter).
std::string fallback_advice(std::optional<uint64_t> blackholes);

} // namespace mpnvme::host
