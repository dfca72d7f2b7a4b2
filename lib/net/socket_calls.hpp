// SPDX-License-Identifier: GPL-2.0-only
// recv, send, recvmsg, sendmsg and a zero-timeout ppoll as the system calls
// themselves. libc's wrappers are thread cancellation points: in a process
// with more than one thread (fio's job with the engine's controller
// threads, the target's loops) each call brackets the system call with two
// atomic updates of the thread's cancel state. A spinning host or target
// makes these calls a million times a second, and perf put the updates at
// 5 % of the spinning CPU's samples (target: 5.5 % around poll(2), engine:
// 5.2 % around recvmsg). No thread of the engine or the target is ever
// cancelled.
#pragma once
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace mpnvme {

// -1 with errno on failure, as the libc calls.
inline ssize_t recvmsg_now(int fd, msghdr *mh, int flags) { return syscall(SYS_recvmsg, fd, mh, flags); }
inline ssize_t sendmsg_now(int fd, const msghdr *mh, int flags) { return syscall(SYS_sendmsg, fd, mh, flags); }
inline ssize_t recv_now(int fd, void *buf, size_t len, int flags) {
  return syscall(SYS_recvfrom, fd, buf, len, flags, nullptr, nullptr);
}
inline ssize_t send_now(int fd, const void *buf, size_t len, int flags) {
  return syscall(SYS_sendto, fd, buf, len, flags, nullptr, 0);
}

// poll(2) without waiting: the number of descriptors with events.
inline int poll_now(pollfd *fds, nfds_t n) {
  const timespec none{0, 0}; // all zero bytes: zero under the kernel's 32- and 64-bit layouts alike
  return static_cast<int>(syscall(SYS_ppoll, fds, n, &none, nullptr, 0));
}

} // namespace mpnvme
