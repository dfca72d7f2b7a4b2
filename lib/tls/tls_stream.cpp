// SPDX-License-Identifier: GPL-2.0-only
#include "lib/tls/tls_stream.hpp"

#include "lib/net/sock.hpp"
#include "lib/net/socket_calls.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <string_view>
#include <sys/socket.h>

namespace mpnvme::tls {

namespace {

// What the BIO knows of its socket. While `gather` is set (application
// data on an MPTCP socket), the records OpenSSL writes collect in `out` and
// leave in one send per batch (flush): a send per 16 KiB record costs MPTCP
// more than the copy. Over TCP the copy costs more than the sends (128 KiB
// reads on loopback: 0.7 against 1.0 GB/s), so there every record goes
// straight out. Handshake and alert records always do, after what waits.
struct SockBio {
  int fd = -1;
  int first = -1;           // the peer's first byte
  int err = 0;              // errno of the last failed call
  bool mptcp = false;       // gather application records (see above)
  bool gather = false;      // in SSL_write now
  std::vector<uint8_t> out; // ciphertext not yet taken by the socket, from `head`
  size_t head = 0;
  size_t pending() const { return out.size() - head; }
  // -1: the socket failed (err); else the bytes left.
  ssize_t flush() {
    while (pending()) {
      const ssize_t n = send_now(fd, out.data() + head, pending(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      if (n <= 0) {
        err = n < 0 ? errno : EPIPE;
        return -1;
      }
      head += static_cast<size_t>(n);
    }
    if (!pending()) out.clear(), head = 0;
    return static_cast<ssize_t>(pending());
  }
};
// Ciphertext held at most before the socket must take some: on the 4 x 1
// Gbit lab (MPTCP, 128 KiB) 64 KiB took writes from 0.80 to 0.92 of line,
// 256 KiB bursts cost reads a fifth.
constexpr size_t kGather = 64 * 1024;

int bio_read(BIO *b, char *buf, size_t len, size_t *got) {
  auto *s = static_cast<SockBio *>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  const ssize_t n = recv_now(s->fd, buf, len, MSG_DONTWAIT);
  if (n > 0) {
    if (s->first < 0) s->first = static_cast<uint8_t>(buf[0]);
    *got = static_cast<size_t>(n);
    return 1;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) BIO_set_retry_read(b);
  s->err = n < 0 ? errno : 0;
  *got = 0;
  return 0;
}

int bio_write(BIO *b, const char *buf, size_t len, size_t *put) {
  auto *s = static_cast<SockBio *>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  *put = 0;
  if (s->pending() && (s->pending() + len > kGather || !s->gather)) { // room, or order: what waits goes first
    if (s->flush() < 0) return 0;
    if (s->pending() && (s->pending() + len > kGather || !s->gather)) {
      BIO_set_retry_write(b);
      return 0;
    }
  }
  if (s->gather) {
    s->out.insert(s->out.end(), buf, buf + len);
    *put = len;
    return 1;
  }
  const ssize_t n = send_now(s->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n > 0) {
    *put = static_cast<size_t>(n);
    return 1;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) BIO_set_retry_write(b);
  s->err = n < 0 ? errno : 0;
  return 0;
}

long bio_ctrl(BIO *, int cmd, long, void *) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int bio_create(BIO *b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD *sock_bio_method() {
  static BIO_METHOD *m = [] {
    BIO_METHOD *x = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "mpnvme socket");
    BIO_meth_set_read_ex(x, bio_read);
    BIO_meth_set_write_ex(x, bio_write);
    BIO_meth_set_ctrl(x, bio_ctrl);
    BIO_meth_set_create(x, bio_create);
    return x;
  }();
  return m;
}

// The TLS 1.3 suite of a hash, as OpenSSL finds it by its two bytes.
const SSL_CIPHER *suite(SSL *ssl, PskHash h) {
  const unsigned char id[2] = {0x13, static_cast<unsigned char>(h == PskHash::Sha256 ? 0x01 : 0x02)};
  return SSL_CIPHER_find(ssl, id);
}

SSL_SESSION *psk_session(SSL *ssl, const SecretBytes &psk, PskHash h) {
  SSL_SESSION *s = SSL_SESSION_new();
  if (!s) return nullptr;
  if (!SSL_SESSION_set1_master_key(s, psk.data(), psk.size()) || !SSL_SESSION_set_cipher(s, suite(ssl, h)) ||
      !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
    SSL_SESSION_free(s);
    return nullptr;
  }
  return s;
}

// OpenSSL's reasons, drained from its queue, e.g. "tlsv1 alert decrypt error".
std::string ssl_reasons() {
  std::string why;
  while (const unsigned long e = ERR_get_error()) {
    const char *r = ERR_reason_error_string(e);
    const std::string one = r ? r : fmt::format("error {:#x}", e);
    if (why.find(one) == std::string::npos) why += (why.empty() ? "" : "; ") + one;
  }
  return why;
}

} // namespace

struct TlsStream::Impl {
  SSL_CTX *ctx = nullptr;
  SSL *ssl = nullptr;
  SockBio bio;
  ~Impl() {
    SSL_free(ssl); // frees the BIO too
    SSL_CTX_free(ctx);
  }
  static int use_session(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen, SSL_SESSION **sess);
  static int find_session(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess);
  static void keylog(const SSL *ssl, const char *line);
};

namespace {

// Both roles: TLS 1.3 only, no tickets (a PSK session needs none and the
// Linux peers expect none), an end of stream without close_notify taken as
// the end (kernel TLS peers do not send one), records read ahead.
std::unique_ptr<TlsStream::Impl> make_impl(int fd, bool server, const std::string &suites, bool for_kernel) {
  auto p = std::make_unique<TlsStream::Impl>();
  p->ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (!p->ctx) throw std::runtime_error("TLS: " + ssl_reasons());
  SSL_CTX_set_min_proto_version(p->ctx, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(p->ctx, TLS1_3_VERSION);
  SSL_CTX_set_options(p->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_TICKET);
  SSL_CTX_set_mode(p->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(p->ctx, for_kernel ? 0 : 1); // kernel TLS must find the first application record in the socket
  SSL_CTX_set_default_read_buffer_len(p->ctx, 4 * kMaxRecord + 256);
  if (!SSL_CTX_set_ciphersuites(p->ctx, suites.c_str())) throw std::runtime_error("TLS: cipher suites: " + ssl_reasons());
  p->ssl = SSL_new(p->ctx);
  if (!p->ssl) throw std::runtime_error("TLS: " + ssl_reasons());
  if (server) SSL_set_num_tickets(p->ssl, 0);
  p->bio.fd = fd;
  p->bio.mptcp = query_mptcp(fd).mptcp;
  BIO *b = BIO_new(sock_bio_method());
  BIO_set_data(b, &p->bio);
  SSL_set_bio(p->ssl, b, b);
  return p;
}

} // namespace

TlsStream::TlsStream(std::unique_ptr<Impl> impl) : p_(std::move(impl)) { SSL_set_app_data(p_->ssl, this); }
TlsStream::~TlsStream() = default;

std::unique_ptr<TlsStream> TlsStream::client(int fd, const std::string &identity, const SecretBytes &psk, PskHash hash,
                                             bool for_kernel) {
  std::unique_ptr<TlsStream> t(new TlsStream(make_impl(fd, false, cipher_suite(hash), for_kernel)));
  if (for_kernel) SSL_CTX_set_keylog_callback(t->p_->ctx, Impl::keylog);
  t->identity_ = identity;
  t->client_psk_ = psk;
  t->client_hash_ = hash;
  // PSK only: no certificate is trusted, so a server that answers with
  // one instead of the PSK fails verification within the handshake.
  SSL_set_verify(t->p_->ssl, SSL_VERIFY_PEER, nullptr);
  SSL_set_psk_use_session_callback(t->p_->ssl, Impl::use_session);
  SSL_set_connect_state(t->p_->ssl);
  return t;
}

std::unique_ptr<TlsStream> TlsStream::server(int fd, PskLookup lookup, const std::vector<PskHash> &suites, bool for_kernel) {
  std::string list;
  for (PskHash h : suites)
    list += (list.empty() ? "" : ":") + std::string(cipher_suite(h));
  std::unique_ptr<TlsStream> t(new TlsStream(make_impl(fd, true, list, for_kernel)));
  t->server_ = true;
  if (for_kernel) SSL_CTX_set_keylog_callback(t->p_->ctx, Impl::keylog);
  t->lookup_ = std::move(lookup);
  SSL_set_psk_find_session_callback(t->p_->ssl, Impl::find_session);
  SSL_set_accept_state(t->p_->ssl);
  return t;
}

int TlsStream::Impl::use_session(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen, SSL_SESSION **sess) {
  auto *t = static_cast<TlsStream *>(SSL_get_app_data(ssl));
  *sess = nullptr;
  // After a HelloRetryRequest OpenSSL asks again with the suite's hash.
  if (md && md != dhchap::evp_md(as_hash(t->client_hash_))) return 1;
  *sess = psk_session(ssl, t->client_psk_, t->client_hash_); // OpenSSL calls only: nothing here throws
  if (!*sess) return 0;
  *id = reinterpret_cast<const unsigned char *>(t->identity_.data());
  *idlen = t->identity_.size();
  return 1;
}

// Called by OpenSSL with the identity a peer sent, before it proved
// anything: no exception may cross back into C, and nothing in the
// identity may end the process. A lookup that throws refuses the identity.
int TlsStream::Impl::find_session(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess) {
  auto *t = static_cast<TlsStream *>(SSL_get_app_data(ssl));
  *sess = nullptr;
  try {
    std::string identity(reinterpret_cast<const char *>(id), idlen);
    std::optional<ServerPsk> k = t->lookup_(identity, t->refusal_);
    if (!k) {
      if (t->refusal_.empty()) t->refusal_ = "unknown PSK identity";
      return 1; // the handshake then fails: no PSK, and no certificate to fall back on
    }
    *sess = psk_session(ssl, k->psk, k->hash);
    if (!*sess) return 0;
    t->identity_ = std::move(identity);
    return 1;
  } catch (const std::exception &e) {
    t->refusal_ = fmt::format("the identity could not be used: {}", e.what());
    return 1;
  } catch (...) {
    t->refusal_ = "the identity could not be used";
    return 1;
  }
}

// OpenSSL's key log, the one place it gives out the traffic secrets kernel
// TLS needs: "CLIENT_TRAFFIC_SECRET_0 <client random> <secret in hex>".
void TlsStream::Impl::keylog(const SSL *ssl, const char *line) {
  auto *t = static_cast<TlsStream *>(SSL_get_app_data(ssl));
  const std::string_view l(line);
  SecretBytes *to = l.rfind("CLIENT_TRAFFIC_SECRET_0 ", 0) == 0   ? &t->client_secret_
                    : l.rfind("SERVER_TRAFFIC_SECRET_0 ", 0) == 0 ? &t->server_secret_
                                                                  : nullptr;
  const size_t sp = l.rfind(' ');
  if (!to || sp == std::string_view::npos || (l.size() - sp - 1) % 2) return;
  const std::string_view hex = l.substr(sp + 1);
  SecretBytes s(hex.size() / 2);
  for (size_t i = 0; i < s.size(); i++) {
    const auto nib = [](char ch) { return ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10; };
    s.data()[i] = static_cast<uint8_t>(nib(hex[2 * i]) << 4 | nib(hex[2 * i + 1]));
  }
  *to = std::move(s);
}

TlsStream::KernelKeys TlsStream::kernel_keys() const {
  KernelKeys k;
  k.client_secret = client_secret_;
  k.server_secret = server_secret_;
  const SSL_CIPHER *c = SSL_get_current_cipher(p_->ssl);
  k.hash = c && (SSL_CIPHER_get_id(c) & 0xffff) == 0x1302 ? PskHash::Sha384 : PskHash::Sha256;
  k.server = server_;
  k.clean = !used_ && !SSL_has_pending(p_->ssl) && !client_secret_.empty() && !server_secret_.empty();
  return k;
}

void TlsStream::keep_in_user_space() { SSL_set_read_ahead(p_->ssl, 1); }

HandshakeStep TlsStream::handshake() {
  if (failed_) return HandshakeStep::Failed;
  ERR_clear_error();
  const int r = SSL_do_handshake(p_->ssl);
  if (r == 1) return server_ || psk_was_used() ? HandshakeStep::Done : HandshakeStep::Failed;
  switch (SSL_get_error(p_->ssl, r)) {
  case SSL_ERROR_WANT_READ: return HandshakeStep::WantRead;
  case SSL_ERROR_WANT_WRITE: return HandshakeStep::WantWrite;
  default: set_failed("the TLS handshake"); return HandshakeStep::Failed;
  }
}

// A client's handshake counts only if the server took the PSK we offered:
// a server that ignores it and proves nothing (a certificate we have no
// reason to trust, which the verify mode refuses during the handshake
// already) would otherwise get the host's I/O in clear to it.
bool TlsStream::psk_was_used() {
  if (SSL_session_reused(p_->ssl) == 1 && SSL_get0_peer_certificate(p_->ssl) == nullptr) return true;
  failure_ = "the TLS handshake failed: the target did not use the pre-shared key (it is not the target that holds "
             "this host's PSK, or its port does not use PSKs)";
  failed_ = true;
  errno = EPROTO;
  return false;
}

// A fatal error: the reason is kept (OpenSSL's queue, the socket's errno,
// or what the first byte says about the peer) and every later call fails.
ssize_t TlsStream::set_failed(const char *during) {
  std::string why = ssl_reasons();
  const int first = p_->bio.first;
  errno = EPROTO;
  if (!refusal_.empty()) {
    why = fmt::format("PSK identity refused: {}", refusal_);
  } else if (!server_ && why.find("certificate verify failed") != std::string::npos) {
    why = "the target answered with a certificate instead of the pre-shared key (it is not the target that holds this "
          "host's PSK)";
  } else if (first >= 0 && first <= 0x09) { // an NVMe/TCP PDU type; TLS records are 0x14..0x17
    why = fmt::format("the peer answered in plaintext NVMe/TCP (PDU type {:#04x}), not TLS: its port does not use TLS", first);
  } else if (why.empty() && p_->bio.err) {
    why = strerror(p_->bio.err);
    errno = p_->bio.err;
  } else if (why.empty()) {
    why = first < 0 ? "the connection closed before any TLS record came" : "the connection closed";
  }
  failure_ = fmt::format("{} failed: {}", during, why);
  failed_ = true;
  return -1;
}

ssize_t TlsStream::recv(const iovec *iov, size_t n) {
  used_ = true;
  if (failed_) {
    errno = EPROTO;
    return -1;
  }
  if (eof_) return 0;
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    auto *dst = static_cast<uint8_t *>(iov[i].iov_base);
    size_t filled = 0;
    while (filled < iov[i].iov_len) {
      size_t got = 0;
      ERR_clear_error();
      if (SSL_read_ex(p_->ssl, dst + filled, iov[i].iov_len - filled, &got)) {
        filled += got;
        continue;
      }
      const int e = SSL_get_error(p_->ssl, 0);
      total += filled;
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        more_ = false; // what OpenSSL holds is at most part of a record
        if (total) return static_cast<ssize_t>(total);
        errno = EAGAIN;
        return -1;
      }
      if (e == SSL_ERROR_ZERO_RETURN) { // close_notify, or the end of the stream
        eof_ = true;
        return static_cast<ssize_t>(total);
      }
      if (total) { // the bytes first; the failure on the next call
        set_failed("TLS receive");
        return static_cast<ssize_t>(total);
      }
      return set_failed("TLS receive");
    }
    total += filled;
  }
  more_ = SSL_has_pending(p_->ssl); // whole records may wait behind a full read
  return static_cast<ssize_t>(total);
}

ssize_t TlsStream::send(const iovec *iov, size_t n) {
  used_ = true;
  if (failed_) {
    errno = EPROTO;
    return -1;
  }
  if (!pending_) {
    if (!n) return 0;
    if (iov[0].iov_len >= kMaxRecord || n == 1) {
      pending_ = static_cast<const uint8_t *>(iov[0].iov_base);
      pending_len_ = iov[0].iov_len;
    } else { // small pieces: one record for as many as fit
      staging_.resize(kMaxRecord);
      size_t len = 0;
      for (size_t i = 0; i < n && len < kMaxRecord; i++) {
        const size_t take = std::min(iov[i].iov_len, kMaxRecord - len);
        std::memcpy(staging_.data() + len, iov[i].iov_base, take);
        len += take;
      }
      pending_ = staging_.data();
      pending_len_ = len;
    }
  }
  size_t written = 0;
  ERR_clear_error();
  p_->bio.gather = p_->bio.mptcp;
  const int ok = SSL_write_ex(p_->ssl, pending_, pending_len_, &written);
  p_->bio.gather = false;
  if (ok) {
    pending_ = nullptr; // written may be less (one record at a time): the rest comes again
    return static_cast<ssize_t>(written);
  }
  const int e = SSL_get_error(p_->ssl, 0);
  if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
    errno = EAGAIN; // OpenSSL holds the record: the same bytes next time
    return -1;
  }
  return set_failed("TLS send");
}

bool TlsStream::buffered() const { return more_ && !failed_; }

bool TlsStream::output_pending() const { return !failed_ && p_->bio.pending(); }

int TlsStream::flush() {
  if (failed_) return -1;
  const ssize_t left = p_->bio.flush();
  if (left < 0) {
    set_failed("TLS send");
    errno = p_->bio.err;
    return -1;
  }
  return left > 0;
}

void TlsStream::close() {
  if (failed_ || !SSL_is_init_finished(p_->ssl)) return;
  ERR_clear_error();
  SSL_shutdown(p_->ssl);
  ERR_clear_error();
}

std::string TlsStream::cipher() const {
  const SSL_CIPHER *c = SSL_get_current_cipher(p_->ssl);
  return c ? SSL_CIPHER_get_name(c) : "";
}

int TlsStream::first_byte() const { return p_->bio.first; }

} // namespace mpnvme::tls
