// SPDX-License-Identifier: GPL-2.0-only
// The NVMe/TCP secure channel on a new queue socket, before its ICReq, as
// the Linux host has tlshd do it: a TLS 1.3 handshake with the PSK
// identity and key of tls_key= (lib/tls/tls_options.hpp) or of concat=1,
// then the records in
// user space (lib/tls/tls_stream.hpp) or in the kernel.
#pragma once
#include <memory>
#include <string>

#include "engine/host/clock.hpp"
#include "lib/net/byte_stream.hpp"
#include "lib/net/sock.hpp"
#include "lib/tls/tls_options.hpp"

namespace mpnvme::host {

// Throws std::runtime_error saying what failed (the handshake's alert, a
// plaintext answer, the deadline); never shows a key.
// `offer`: the identity and PSK (tls::host_offer for a configured key, or
// the one secure channel concatenation generated).
std::unique_ptr<ByteStream> start_tls(int fd, Transport transport, tls::Mode mode, const tls::Offer &offer,
                                      Clock::time_point deadline);

} // namespace mpnvme::host
