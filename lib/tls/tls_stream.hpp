// SPDX-License-Identifier: GPL-2.0-only
// The NVMe/TCP secure channel in user space: TLS 1.3 with an external PSK
// (no certificates), OpenSSL's record layer between the socket and the
// stream codec. What the kernel cannot do itself (kTLS on an MPTCP socket
// is refused) this does on any kernel, for the host and the target alike.
//
// OpenSSL reads and writes the socket through a small BIO of our own
// (recv/send with MSG_DONTWAIT, MSG_NOSIGNAL: fio's process must not die
// of SIGPIPE), so ciphertext goes from the socket into OpenSSL's record
// buffer and plaintext from there to the codec's destination: the one
// copy decryption needs. Sends coalesce the small iovecs of a batch
// (headers, capsules) into one record; a payload of a record or more is
// encrypted from where it lies.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/crypto/secret_bytes.hpp"
#include "lib/net/byte_stream.hpp"
#include "lib/tls/tls_psk.hpp"

namespace mpnvme::tls {

// The target's answer to the identity in a ClientHello: the TLS PSK and
// the suite hash it goes with, or nullopt with `refusal` saying why (the
// caller logs it).
struct ServerPsk {
  SecretBytes psk;
  PskHash hash;
};
using PskLookup = std::function<std::optional<ServerPsk>(const std::string &identity, std::string &refusal)>;

enum class HandshakeStep { Done, WantRead, WantWrite, Failed };

class TlsStream final : public ByteStream {
public:
  // Host: offer `identity` with `psk`, in the one suite of its hash.
  // `for_kernel`: the records may go to kernel TLS after the handshake,
  // so OpenSSL reads no further than the handshake's last record and
  // keeps the traffic secrets for kernel_keys().
  static std::unique_ptr<TlsStream> client(int fd, const std::string &identity, const SecretBytes &psk, PskHash hash,
                                           bool for_kernel = false);
  // Target: accept the identities `lookup` knows, in `suites`.
  static std::unique_ptr<TlsStream> server(int fd, PskLookup lookup, const std::vector<PskHash> &suites, bool for_kernel = false);
  ~TlsStream() override;
  TlsStream(const TlsStream &) = delete;
  TlsStream &operator=(const TlsStream &) = delete;

  // Non-blocking: call again when the socket is readable (WantRead) or
  // writable (WantWrite). Failed: failure() says why.
  HandshakeStep handshake();
  ssize_t recv(const iovec *iov, size_t n) override;
  ssize_t send(const iovec *iov, size_t n) override;
  std::string failure() const override { return failure_; }
  const char *mode() const override { return "user-tls"; }
  bool buffered() const override;
  bool output_pending() const override;
  int flush() override;
  // A close_notify alert, best effort, before the socket is shut.
  void close() override;

  // The identity offered (host) or accepted (target), and the suite.
  const std::string &identity() const { return identity_; }
  std::string cipher() const override;
  // The peer's first byte, -1 before any came: 0x16 opens a TLS
  // handshake, an NVMe/TCP PDU type (0x00 ICReq, 0x03 C2HTermReq) is a
  // plaintext peer.
  int first_byte() const;
  // Why the target refused the identity (its lookup's words), or empty.
  const std::string &refusal() const { return refusal_; }

  // After a handshake made for_kernel: the traffic secrets of both
  // directions, the suite's hash, and whether OpenSSL holds received bytes
  // (then the kernel cannot take over).
  struct KernelKeys {
    SecretBytes client_secret, server_secret;
    PskHash hash = PskHash::Sha256;
    bool server = false;
    bool clean = false; // nothing read beyond the handshake, nothing sent after it
  };
  KernelKeys kernel_keys() const;
  // Once the records are in the kernel's hands the rest of the stream is
  // the socket's: the user-space layer reads ahead from now on only when
  // it stays (after a refused hand-over).
  void keep_in_user_space();

  struct Impl;

private:
  explicit TlsStream(std::unique_ptr<Impl> impl);
  ssize_t set_failed(const char *during);
  bool psk_was_used();
  std::unique_ptr<Impl> p_;
  std::string identity_, failure_, refusal_;
  PskLookup lookup_;
  SecretBytes client_psk_;
  PskHash client_hash_ = PskHash::Sha256;
  bool failed_ = false, eof_ = false;
  bool more_ = false; // the last receive filled its iovecs with records left over
  // A write OpenSSL could not finish: the same bytes must be offered again.
  const uint8_t *pending_ = nullptr;
  size_t pending_len_ = 0;
  std::vector<uint8_t> staging_;
  SecretBytes client_secret_, server_secret_; // for_kernel only
  bool server_ = false;
  bool used_ = false; // application data sent or received
};

// The largest TLS record's plaintext (RFC 8446: 2^14 bytes).
constexpr size_t kMaxRecord = 16384;

} // namespace mpnvme::tls
