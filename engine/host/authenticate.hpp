// SPDX-License-Identifier: GPL-2.0-only
// In-band authentication of one queue right after its Connect, as the
// Linux host does it: the DH-HMAC-CHAP transaction (lib/auth/dhchap_host.hpp)
// carried in Authentication Send and Receive on that queue.
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include "engine/host/channel.hpp"
#include "lib/auth/dhchap_host.hpp"
#include "lib/tls/tls_options.hpp"

namespace mpnvme::host {

// Whether the queue must authenticate: the controller asked (Connect's
// AUTHREQ), or the host wants the controller proven (a controller secret).
// Throws when the controller asks and no secret is configured, or asks for
// secure channel concatenation where the host does not: on an I/O queue
// (Linux refuses it there), or on the admin queue of a host without concat=1.
bool needs_authentication(uint32_t connect_dw0, const dhchap::HostAuthConfig &cfg, const std::string &where, uint16_t qid,
                          bool concat);

// The transaction on `ch`, asking for secure channel concatenation `sc`.
// Returns the TLS PSK and identity the transaction generated (with `sc`,
// else nothing). Throws std::runtime_error naming `where` (path and queue),
// the step and the controller's reason; after the host refused a message
// it has told the controller why (AUTH_Failure2).
std::optional<tls::Offer> authenticate(Channel &ch, const dhchap::HostAuthConfig &cfg, const std::string &hostnqn,
                                       const std::string &subnqn, const std::string &where, std::chrono::milliseconds timeout,
                                       dhchap::SecureChannel sc = dhchap::SecureChannel::None);

} // namespace mpnvme::host
