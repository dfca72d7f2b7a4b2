// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/secure_channel.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <stdexcept>

#include "lib/base/log.hpp"
#include "lib/tls/ktls_stream.hpp"
#include "lib/tls/tls_stream.hpp"

namespace mpnvme::host {

std::unique_ptr<ByteStream> start_tls(int fd, Transport transport, const tls::HostTlsConfig &cfg, const std::string &hostnqn,
                                      const std::string &subnqn, Clock::time_point deadline) {
  const tls::Offer offer = tls::host_offer(cfg, hostnqn, subnqn);
  // MPTCP sockets never take kernel TLS: the records stay in user space.
  const bool for_kernel = cfg.mode != tls::Mode::User && transport == Transport::Tcp;
  auto t = tls::TlsStream::client(fd, offer.identity, offer.psk, offer.hash, for_kernel);
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
  if (for_kernel) {
    std::string why;
    bool lost = false;
    if (auto k = tls::kernel_tls(fd, *t, why, lost)) {
      log().debug("TLS 1.3 {} with identity '{}', records in the kernel", t->cipher(), t->identity());
      return k;
    }
    if (cfg.mode == tls::Mode::Kernel || lost) throw std::runtime_error(fmt::format("tls_mode=ktls: {}", why));
    log().debug("kernel TLS not taken ({}): records in user space", why);
    t->keep_in_user_space();
  }
  log().debug("TLS 1.3 {} with identity '{}', records in user space", t->cipher(), t->identity());
  return t;
}

} // namespace mpnvme::host
