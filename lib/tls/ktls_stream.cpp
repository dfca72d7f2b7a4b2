// SPDX-License-Identifier: GPL-2.0-only
#include "lib/tls/ktls_stream.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <linux/tls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <sys/socket.h>

#include "lib/net/socket_calls.hpp"

namespace mpnvme::tls {

namespace {

constexpr uint8_t kAlert = 21, kHandshake = 22, kApplicationData = 23;
constexpr uint8_t kNewSessionTicket = 4, kKeyUpdate = 24;

// RFC 8446's alert descriptions that a peer may send.
const char *alert_name(uint8_t d) {
  switch (d) {
  case 0: return "close_notify";
  case 10: return "unexpected_message";
  case 20: return "bad_record_mac";
  case 22: return "record_overflow";
  case 40: return "handshake_failure";
  case 47: return "illegal_parameter";
  case 50: return "decode_error";
  case 51: return "decrypt_error";
  case 80: return "internal_error";
  case 90: return "user_canceled";
  default: return "unknown";
  }
}

// One direction's crypto_info from its traffic secret (RFC 8446 7.3: key
// and IV; the kernel takes the IV's first 4 bytes as salt).
template <typename Info> Info crypto_info(PskHash h, const SecretBytes &secret, uint16_t cipher_type) {
  Info info{};
  info.info.version = TLS_1_3_VERSION;
  info.info.cipher_type = cipher_type;
  const SecretBytes key = traffic_key(h, secret, "key", sizeof info.key);
  const SecretBytes iv = traffic_key(h, secret, "iv", 12);
  std::memcpy(info.key, key.data(), sizeof info.key);
  std::memcpy(info.salt, iv.data(), sizeof info.salt);
  std::memcpy(info.iv, iv.data() + sizeof info.salt, sizeof info.iv);
  return info; // rec_seq 0: the first record after the handshake
}

template <typename Info> bool install(int fd, int dir, PskHash h, const SecretBytes &secret, uint16_t type) {
  Info info = crypto_info<Info>(h, secret, type);
  const int r = ::setsockopt(fd, SOL_TLS, dir, &info, sizeof info);
  OPENSSL_cleanse(&info, sizeof info);
  return r == 0;
}

} // namespace

std::unique_ptr<ByteStream> kernel_tls(int fd, const TlsStream &handshaken, std::string &why, bool &lost) {
  lost = false;
  const TlsStream::KernelKeys k = handshaken.kernel_keys();
  if (!k.clean) {
    why = "the handshake left records in user space";
    return nullptr;
  }
  if (::setsockopt(fd, IPPROTO_TCP, TCP_ULP, "tls", sizeof "tls") != 0) {
    why = errno == ENOENT ? "this kernel has no tls module (TCP_ULP tls: No such file or directory)"
                          : fmt::format("the socket refuses TCP_ULP tls: {}{}", strerror(errno),
                                        errno == EOPNOTSUPP ? " (MPTCP sockets do)" : "");
    return nullptr;
  }
  const SecretBytes &tx = k.server ? k.server_secret : k.client_secret;
  const SecretBytes &rx = k.server ? k.client_secret : k.server_secret;
  const bool ok = k.hash == PskHash::Sha256
                      ? install<tls12_crypto_info_aes_gcm_128>(fd, TLS_TX, k.hash, tx, TLS_CIPHER_AES_GCM_128) &&
                            install<tls12_crypto_info_aes_gcm_128>(fd, TLS_RX, k.hash, rx, TLS_CIPHER_AES_GCM_128)
                      : install<tls12_crypto_info_aes_gcm_256>(fd, TLS_TX, k.hash, tx, TLS_CIPHER_AES_GCM_256) &&
                            install<tls12_crypto_info_aes_gcm_256>(fd, TLS_RX, k.hash, rx, TLS_CIPHER_AES_GCM_256);
  if (!ok) {
    // The ULP is attached and cannot be taken off: the socket is lost to this connection.
    why = fmt::format("kernel TLS refused the keys: {}", strerror(errno));
    lost = true;
    return nullptr;
  }
  return std::make_unique<KernelTlsStream>(fd, handshaken.cipher());
}

ssize_t KernelTlsStream::recv(const iovec *iov, size_t n) {
  if (eof_) return 0;
  for (;;) {
    char cbuf[CMSG_SPACE(sizeof(uint8_t))];
    msghdr mh{};
    mh.msg_iov = const_cast<iovec *>(iov);
    mh.msg_iovlen = n;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof cbuf;
    const ssize_t got = recvmsg_now(fd_, &mh, MSG_DONTWAIT);
    if (got <= 0) {
      if (got < 0 && errno == EIO) failure_ = "kernel TLS: a record failed to decrypt or was malformed";
      if (got < 0 && (errno == EIO || errno == EBADMSG || errno == EMSGSIZE)) errno = EPROTO;
      return got;
    }
    const cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    if (!cm || cm->cmsg_level != SOL_TLS || cm->cmsg_type != TLS_GET_RECORD_TYPE) return got;
    // The record's bytes went where the codec's data would: not reported
    // unless they are data.
    const size_t head = std::min(iov[0].iov_len, static_cast<size_t>(got));
    RecordVerdict v = kernel_record(*CMSG_DATA(cm), {static_cast<const uint8_t *>(iov[0].iov_base), head});
    switch (v.kind) {
    case RecordVerdict::Data: return got;
    case RecordVerdict::Skip: continue;
    case RecordVerdict::End: eof_ = true; return 0;
    case RecordVerdict::Fail: break;
    }
    failure_ = std::move(v.why);
    errno = EPROTO;
    return -1;
  }
}

RecordVerdict kernel_record(uint8_t type, std::span<const uint8_t> head) {
  if (type == kApplicationData) return {RecordVerdict::Data, {}};
  const uint8_t b0 = head.size() ? head[0] : 0, b1 = head.size() > 1 ? head[1] : 0;
  if (type == kHandshake && b0 == kNewSessionTicket) return {RecordVerdict::Skip, {}};
  if (type == kAlert && b1 == 0) return {RecordVerdict::End, {}};
  return {RecordVerdict::Fail, type == kAlert ? fmt::format("the peer sent TLS alert {} ({})", alert_name(b1), b1)
                               : type == kHandshake && b0 == kKeyUpdate
                                   ? "the peer sent a TLS KeyUpdate, which kernel TLS here cannot follow (tls_mode=user can)"
                                   : fmt::format("kernel TLS: an unexpected record (type {}, first byte {})", type, b0)};
}

ssize_t KernelTlsStream::send(const iovec *iov, size_t n) {
  msghdr mh{};
  mh.msg_iov = const_cast<iovec *>(iov);
  mh.msg_iovlen = n;
  return sendmsg_now(fd_, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void KernelTlsStream::close() {
  uint8_t alert[2] = {1, 0}; // warning, close_notify
  char cbuf[CMSG_SPACE(sizeof(uint8_t))] = {};
  iovec iov{alert, sizeof alert};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cbuf;
  mh.msg_controllen = sizeof cbuf;
  cmsghdr *cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_TLS;
  cm->cmsg_type = TLS_SET_RECORD_TYPE;
  cm->cmsg_len = CMSG_LEN(sizeof(uint8_t));
  *CMSG_DATA(cm) = kAlert;
  [[maybe_unused]] ssize_t r = ::sendmsg(fd_, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

RecordLayer records_after_handshake(int fd, std::unique_ptr<TlsStream> t, bool try_kernel) {
  RecordLayer r;
  if (try_kernel) {
    r.stream = kernel_tls(fd, *t, r.why, r.lost);
    r.in_kernel = r.stream != nullptr;
    if (r.in_kernel || r.lost) return r;
  }
  t->keep_in_user_space();
  r.stream = std::move(t);
  return r;
}

} // namespace mpnvme::tls
