// SPDX-License-Identifier: GPL-2.0-only
// libFuzzer target: bytes from a hostile peer into a TLS port of
// mpnvme-target, before it has proved anything. The first byte decides TLS
// or plaintext as the reactor does (classify_first_byte); a TLS peer then
// meets OpenSSL's server handshake with the target's PSK lookup: the
// identity parser, the host's key, the PSK derivation (where a long NQN
// once threw out of OpenSSL's callback and ended the process). Seeds are
// real ClientHellos (seeds_tls.py). The same bytes also go through kernel
// TLS's record decision (kernel_record), the part of its receive that
// reads what the peer sent.
#include <cstdint>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/base/log.hpp"
#include "lib/config/target_tls_config.hpp"
#include "lib/tls/ktls_stream.hpp"
#include "lib/tls/tls_stream.hpp"

using namespace mpnvme;
using namespace mpnvme::target;

namespace {

constexpr const char *kHost = "nqn.2014-08.org.nvmexpress:uuid:fuzz";

const TlsKeys &keys() {
  static const TlsKeys k = [] {
    set_log_level("off");
    TlsKeys m;
    // seeds_tls.py offers PSKs derived from this key (32 bytes 0x00..0x1f, SHA-256).
    m[kHost] = tls::parse_psk("NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", "fuzz");
    // A host with a long NQN (seeds_tls.py's v0-long-nqns): its identity
    // reaches the PSK derivation.
    m["nqn.2014-08.org.nvmexpress:" + std::string(100, 'h')] = m[kHost];
    return m;
  }();
  return k;
}

void handshake(const uint8_t *data, size_t size, bool compat) {
  int s[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s) != 0) return;
  for (size_t off = 0; off < size;) { // the socket holds far more than max_len
    const ssize_t n = ::send(s[1], data + off, size - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::shutdown(s[1], SHUT_WR);
  auto lookup = [compat](const std::string &identity, std::string &refusal) {
    // Any subsystem is served: every identity of a keyed host gets as far
    // as the derivation.
    return psk_for_identity(
        keys(), [](const std::string &) { return true; }, identity, compat, refusal);
  };
  auto t = tls::TlsStream::server(s[0], lookup, {std::begin(tls::kSuites), std::end(tls::kSuites)});
  for (int turn = 0; turn < 16; turn++) { // each turn reads what is there; the peer's end comes within a few
    const tls::HandshakeStep step = t->handshake();
    if (step == tls::HandshakeStep::Done) {
      uint8_t buf[512];
      iovec iov{buf, sizeof buf};
      (void)t->recv(&iov, 1);
      break;
    }
    if (step == tls::HandshakeStep::Failed) break;
  }
  ::close(s[0]);
  ::close(s[1]);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  (void)tls::kernel_record(data[0], {data + 1, size - 1});
  if (classify_first_byte(data[0], TlsPort::Optional) == FirstByte::Tls) handshake(data, size, size % 2);
  return 0;
}
