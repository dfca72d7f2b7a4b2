// SPDX-License-Identifier: GPL-2.0-only
// Kernel TLS after a user-space handshake, as tlshd hands the Linux host's
// and nvmet's sockets back: the traffic keys go into the socket (TCP_ULP
// "tls", TLS_TX, TLS_RX) and the kernel encrypts and decrypts, so sendmsg,
// recvmsg and receive in place stay as they are. Records that are not
// application data arrive alone with their type in a control message: a
// NewSessionTicket is skipped, an alert ends the stream (close_notify) or
// fails it, a KeyUpdate fails it (kernels before rekey support cannot
// follow one; the queue then reconnects with a new handshake).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "lib/net/byte_stream.hpp"
#include "lib/tls/tls_stream.hpp"

namespace mpnvme::tls {

class KernelTlsStream final : public ByteStream {
public:
  KernelTlsStream(int fd, std::string cipher) : fd_(fd), cipher_(std::move(cipher)) {}
  ssize_t recv(const iovec *iov, size_t n) override;
  ssize_t send(const iovec *iov, size_t n) override;
  std::string failure() const override { return failure_; }
  void close() override; // a close_notify alert
  const char *mode() const override { return "ktls"; }
  std::string cipher() const override { return cipher_; }

private:
  int fd_;
  std::string cipher_, failure_;
  bool eof_ = false;
};

// What a record that kernel TLS handed over alone (its type from the
// control message, its first bytes in `head`) means for the stream: data,
// skipped (a NewSessionTicket), the end (close_notify) or a failure, with
// the reason. Pure: the one part of a receive that reads what the peer
// sent.
struct RecordVerdict {
  enum Kind { Data, Skip, End, Fail } kind;
  std::string why; // Fail only
};
RecordVerdict kernel_record(uint8_t type, std::span<const uint8_t> head);

// The handshake's records handed to the kernel: the socket then carries
// them itself. nullptr with `why` where it cannot (no tls module, an MPTCP
// socket, bytes OpenSSL holds already); `lost` is then set when the socket
// cannot go on in user space either (the kernel took the ULP but refused
// the keys).
std::unique_ptr<ByteStream> kernel_tls(int fd, const TlsStream &handshaken, std::string &why, bool &lost);

// Where the records go once the handshake is done, the one decision host
// and target make alike: to the kernel when `try_kernel` and the socket
// takes them, else they stay with `t` in user space (reading ahead: no one
// takes the socket over any more).
struct RecordLayer {
  std::unique_ptr<ByteStream> stream; // null only when lost
  bool in_kernel = false;
  bool lost = false; // the kernel took the socket but refused the keys: neither side can go on
  std::string why;   // why the records are not in the kernel, when that was tried
};
RecordLayer records_after_handshake(int fd, std::unique_ptr<TlsStream> t, bool try_kernel);

} // namespace mpnvme::tls
