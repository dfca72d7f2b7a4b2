// SPDX-License-Identifier: GPL-2.0-only
// How the drivers of the stream codec (the host's Channel, the target's
// reactor) move bytes between a connected socket and the codec's iovecs:
// straight through the socket (plaintext, or kernel TLS, where the kernel
// encrypts), or through a user-space TLS record layer (tls_stream.hpp).
// Both behave like recvmsg/sendmsg with MSG_DONTWAIT, so the drivers'
// loops are the same for every kind of connection.
#pragma once
#include <cstddef>
#include <string>
#include <sys/types.h>
#include <sys/uio.h>

namespace mpnvme {

class ByteStream {
public:
  virtual ~ByteStream() = default;
  // Bytes placed into `iov` (filling each in turn), 0 at the end of the
  // stream, -1 with errno (EAGAIN: nothing now). A receive that returns
  // less than the iovecs hold has drained what was there.
  virtual ssize_t recv(const iovec *iov, size_t n) = 0;
  // Plaintext bytes of `iov` taken, or -1 with errno (EAGAIN: full). Bytes
  // not taken are offered again, unchanged, by the next call.
  virtual ssize_t send(const iovec *iov, size_t n) = 0;
  // Why the last call failed with EPROTO (a TLS alert, a bad record): the
  // protocol's words; empty after an errno of the socket.
  virtual std::string failure() const { return {}; }
  // Received bytes the stream holds already (a TLS layer's decrypted or
  // read-ahead records): no readiness report will tell of them.
  virtual bool buffered() const { return false; }
  // Bytes taken by send() that the socket has not yet (a TLS layer
  // gathers a batch's records into one send): the driver waits for the
  // socket to be writable and flushes.
  virtual bool output_pending() const { return false; }
  // Hand them to the socket: 0 all gone, 1 some left (wait for POLLOUT),
  // -1 the socket failed (errno; failure() may say more). Drivers call it
  // after each batch of send() calls.
  virtual int flush() { return 0; }
  // The end, before the socket is shut (a TLS close_notify).
  virtual void close() {}
  // "plaintext", "ktls", "user-tls": what carries the bytes.
  virtual const char *mode() const = 0;
  // The secure channel's suite ("TLS_AES_128_GCM_SHA256"), empty without one.
  virtual std::string cipher() const { return {}; }
};

// The socket itself.
class SocketStream final : public ByteStream {
public:
  explicit SocketStream(int fd) : fd_(fd) {}
  ssize_t recv(const iovec *iov, size_t n) override;
  ssize_t send(const iovec *iov, size_t n) override;
  const char *mode() const override { return "plaintext"; }

private:
  int fd_;
};

} // namespace mpnvme
