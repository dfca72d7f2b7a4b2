// SPDX-License-Identifier: GPL-2.0-only
// Connections share one descriptor limit with everything else the target
// opens later: control clients, file namespaces added at run time, the
// descriptor accept needs to refuse a peer. Left to connections alone, a
// crowd of strangers takes the last descriptor and then nothing opens,
// not even the accept that would shed them. So, as HAProxy derives its
// maxconn from the limit, the target holds no more connections than the
// limit leaves beside a reserve.
#pragma once

namespace mpnvme::target {

// Descriptors kept back from connections: the control socket's clients
// (it serves 32 at once) and room for files and accepts besides.
inline constexpr unsigned kDescriptorReserve = 64;

// Raise the soft descriptor limit to the hard one (the soft 1024 of many
// shells is far below what --max-connections asks); a failure leaves it.
void raise_descriptor_limit();

struct DescriptorRoom {
  unsigned long long limit = 0; // the soft RLIMIT_NOFILE
  unsigned open = 0;            // descriptors open now
  unsigned connections = 0;     // what is left for connections (0: none)
};
// Connections the descriptor limit leaves room for, with the descriptors
// open now and the reserve set aside.
DescriptorRoom descriptor_room_for_connections();

} // namespace mpnvme::target
