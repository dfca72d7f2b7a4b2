// SPDX-License-Identifier: GPL-2.0-only
#include "secure_channel.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <stdexcept>

#include "../../lib/log.hpp"
#include "../../lib/tls_stream.hpp"

namespace mpnvme::host {

std::unique_ptr<ByteStream> start_tls(int fd, const tls::HostTlsConfig &cfg, const std::string &hostnqn,
                                      const std::string &subnqn, Clock::time_point deadline) {
  const tls::Offer offer = tls::host_offer(cfg, hostnqn, subnqn);
  auto t = tls::TlsStream::client(fd, offer.identity, offer.psk, offer.hash);
  for (;;) {
    const tls::HandshakeStep step = t->handshake();
    if (step == tls::HandshakeStep::Done) break;
    if (step == tls::HandshakeStep::Failed) {
      std::string why = t->failure();
      if (t->first_byte() < 0 || t->first_byte() == 0x15) // nothing, or an alert: the controller refused the PSK
        why += fmt::format(" (the controller may not know identity '{}' or have another key for it)", offer.identity);
      throw std::runtime_error(why);
    }
    const int left = ms_until(deadline, Clock::now(), 100);
    if (left == 0) throw std::runtime_error("no TLS handshake with the controller in time");
    pollfd p{fd, static_cast<short>(step == tls::HandshakeStep::WantRead ? POLLIN : POLLOUT), 0};
    ::poll(&p, 1, left);
  }
  log().debug("TLS 1.3 {} with identity '{}', records in user space", t->cipher(), t->identity());
  return t;
}

} // namespace mpnvme::host
