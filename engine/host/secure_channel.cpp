// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/secure_channel.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <stdexcept>

#include "lib/base/log.hpp"
#include "lib/tls/ktls_stream.hpp"
#include "lib/tls/tls_stream.hpp"

namespace mpnvme::host {

std::unique_ptr<ByteStream> start_tls(int fd, Transport transport, tls::Mode mode, const tls::Offer &offer,
                                      Clock::time_point deadline) {
  // MPTCP sockets never take kernel TLS: the records stay in user space.
  const bool for_kernel = mode != tls::Mode::User && transport == Transport::Tcp;
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
  tls::RecordLayer records = tls::records_after_handshake(fd, std::move(t), for_kernel);
  if (for_kernel && !records.in_kernel) {
    if (mode == tls::Mode::Kernel || records.lost) throw std::runtime_error(fmt::format("tls_mode=ktls: {}", records.why));
    log().debug("kernel TLS not taken ({}): records in user space", records.why);
  }
  log().debug("TLS 1.3 {} with identity '{}', records in {}", records.stream->cipher(), offer.identity,
              records.in_kernel ? "the kernel" : "user space");
  return std::move(records.stream);
}

} // namespace mpnvme::host
