// SPDX-License-Identifier: GPL-2.0-only
// One counter of the calling thread's network namespace, as nstat shows it
// (/proc/self/net/netstat, e.g. MPTcpExt Blackhole): to say why a socket
// behaved as it did with the kernel's own count, not a guess.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string_view>

namespace mpnvme {

// The value of `name` in /proc/self/net/netstat's `group` ("MPTcpExt",
// "TcpExt"); nullopt when the kernel has no such counter.
std::optional<uint64_t> netstat_counter(std::string_view group, std::string_view name);

// The same, read from text in the netstat file's format.
std::optional<uint64_t> netstat_counter(std::istream &in, std::string_view group, std::string_view name);

} // namespace mpnvme
