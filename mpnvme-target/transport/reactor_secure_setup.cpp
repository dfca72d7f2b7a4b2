// SPDX-License-Identifier: GPL-2.0-only
// A TLS port's connection up to its first PDU: the first byte says TLS
// or plaintext, the handshake runs on readiness like any receive, and its
// end hands the records to the kernel or keeps them in user space (the
// same decision as the host's: tls::records_after_handshake).
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <sys/socket.h>

#include "lib/base/log.hpp"
#include "lib/base/printable.hpp"
#include "lib/tls/ktls_stream.hpp"
#include "mpnvme-target/transport/reactor.hpp"

namespace mpnvme::target {

// A TLS port: a ClientHello (0x16, a TLS handshake record) starts the
// handshake; a plaintext ICReq is refused where TLS is required, as nvmet
// does, and taken where it is optional.
bool Reactor::secure_setup(Conn &c) {
  const PortState &port = c.c->port();
  if (c.setup == Setup::FirstByte) {
    uint8_t first = 0;
    const ssize_t n = ::recv(c.c->fd(), &first, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      c.readable = false;
      return false;
    }
    if (n <= 0) {
      c.c->close(n == 0 ? "closed by the host before it sent anything" : fmt::format("receive: {}", strerror(errno)));
      return false;
    }
    const FirstByte kind = classify_first_byte(first, c.tls);
    if (kind == FirstByte::Tls) {
      // One configuration view for the keys and the subsystems (the keys
      // change at run time: the control socket's host tls-key).
      auto lookup = [this, &port](const std::string &identity, std::string &refusal) {
        const ConfigView view = reg_.view();
        return psk_for_identity(
            view.tls_keys(), [&](const std::string &nqn) { return view.subsystem(nqn) && port.serves(nqn); }, identity,
            reg_.config().tls_compat, refusal, [this](const std::string &id) { return reg_.generated_psks().find(id); });
      };
      // MPTCP sockets never take kernel TLS: no secrets kept for it, and records read ahead.
      c.handshaking = tls::TlsStream::server(c.c->fd(), lookup, {std::begin(tls::kSuites), std::end(tls::kSuites)},
                                             port.cfg.transport == Transport::Tcp);
      c.setup = Setup::Handshake;
    } else if (kind == FirstByte::Refused) {
      log().warn("port {}: plaintext connection from {} refused: the port requires TLS (its first byte is {:#04x}, {})",
                 port.cfg.id, c.c->peer(), first, first == 0 ? "an ICReq" : "not a TLS record");
      c.c->close("plaintext on a port that requires TLS");
      return false;
    } else {
      c.stream = std::make_unique<SocketStream>(c.c->fd());
      c.setup = Setup::Serving;
      return true;
    }
  }
  switch (c.handshaking->handshake()) {
  case tls::HandshakeStep::Done: handshake_done(c); return c.stream != nullptr;
  case tls::HandshakeStep::WantRead: c.readable = false; return false;
  case tls::HandshakeStep::WantWrite: arm_writable(c); return false;
  case tls::HandshakeStep::Failed: break;
  }
  // A wrong key or an unknown identity counts as a failed authentication:
  // the address waits before its next try, so keys cannot be guessed fast.
  if (!c.handshaking->refusal().empty() || c.handshaking->first_byte() == 0x16) reg_.auth_failed(c.c->peer());
  log().warn("port {}: connection from {}: {}", port.cfg.id, c.c->peer(), c.handshaking->failure());
  c.c->close("TLS handshake failed");
  return false;
}

// Kernel TLS where the accepted socket takes it (TCP with the tls module),
// the user-space records otherwise (MPTCP, or no module).
void Reactor::handshake_done(Conn &c) {
  const std::string identity = c.handshaking->identity();
  const auto id = tls::parse_identity(identity); // the lookup accepted only NVMe identities
  c.c->set_tls_identity(identity, id->hostnqn, id->subnqn, id->generated);
  tls::RecordLayer records =
      tls::records_after_handshake(c.c->fd(), std::move(c.handshaking), c.c->port().cfg.transport == Transport::Tcp);
  if (records.lost) { // the kernel took the socket but not the keys: neither side can carry on
    log().warn("port {}: connection from {}: {}", c.c->port().cfg.id, c.c->peer(), records.why);
    c.c->close(records.why);
    return;
  }
  c.stream = std::move(records.stream);
  c.setup = Setup::Serving;
  log().info("port {}: connection from {}: TLS 1.3 {} ({}), identity '{}'", c.c->port().cfg.id, c.c->peer(), c.stream->cipher(),
             records.in_kernel ? "records in the kernel" : "records in user space", printable(identity));
}

} // namespace mpnvme::target
