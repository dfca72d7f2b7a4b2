// SPDX-License-Identifier: GPL-2.0-only
#include "lib/net/byte_stream.hpp"

#include "lib/net/socket_calls.hpp"

namespace mpnvme {

ssize_t SocketStream::recv(const iovec *iov, size_t n) {
  msghdr mh{};
  mh.msg_iov = const_cast<iovec *>(iov);
  mh.msg_iovlen = n;
  return recvmsg_now(fd_, &mh, MSG_DONTWAIT);
}

ssize_t SocketStream::send(const iovec *iov, size_t n) {
  msghdr mh{};
  mh.msg_iov = const_cast<iovec *>(iov);
  mh.msg_iovlen = n;
  return sendmsg_now(fd_, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

} // namespace mpnvme
