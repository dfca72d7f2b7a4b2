// SPDX-License-Identifier: GPL-2.0-only
// The TOS a connection's first subflow reflected from the host's SYN
// (net.ipv4.tcp_reflect_tos), read through sock_diag. An accepted MPTCP
// socket reports TOS 0 for itself, and every option set on it afterwards
// (TCP_NODELAY included) makes Linux copy its options, TOS 0 with them,
// onto each subflow that joins later: the target sets the reflected value
// on the MPTCP socket first, as nvmet-tcp reflects rcv_tos itself.
#pragma once
#include <optional>

namespace mpnvme::target {

// TOS of the TCP socket (an MPTCP connection's first subflow) with the same
// addresses as connected socket `fd`; nullopt when sock_diag cannot say.
std::optional<unsigned> reflected_tos(int fd);

} // namespace mpnvme::target
