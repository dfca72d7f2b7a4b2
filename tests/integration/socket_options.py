#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""socket_options.py PID PORT: the TCP options another process has set on
its connected sockets whose local port is PORT, read back from the kernel.

Each socket of PID is duplicated into this process with pidfd_getfd(2)
(root, or ptrace rights over PID) and asked with getsockopt(2), so what is
printed is what the kernel holds, not what the process says it asked for.
One line per socket: "tcp|mptcp LOCAL PEER nodelay=0|1". Exits 1 when PID
has no such socket, 2 when it cannot be inspected."""
import ctypes
import os
import socket
import sys

SYS_PIDFD_GETFD = 438  # x86_64 and every architecture with the generic table
IPPROTO_MPTCP = 262


def pidfd_getfd(pidfd, fd):
    libc = ctypes.CDLL(None, use_errno=True)
    dup = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
    if dup < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"pidfd_getfd({fd}): {os.strerror(err)}")
    return dup


def connected_sockets(pid):
    """(protocol, local, peer, socket) for each connected IPv4/IPv6 stream
    socket of PID; the sockets are this process's duplicates."""
    pidfd = os.pidfd_open(pid)
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                    continue
                fd = pidfd_getfd(pidfd, int(name))
            except FileNotFoundError:
                continue  # closed meanwhile
            sock = socket.socket(fileno=fd)
            try:
                if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
                    sock.close()
                    continue
                peer = sock.getpeername()
            except OSError:
                sock.close()  # a listener, or not connected
                continue
            yield sock.proto, sock.getsockname(), peer, sock
    finally:
        os.close(pidfd)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: socket_options.py PID PORT")
    pid, port = int(sys.argv[1]), int(sys.argv[2])
    found = 0
    try:
        for proto, local, peer, sock in connected_sockets(pid):
            with sock:
                if local[1] != port:
                    continue
                nodelay = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
                kind = "mptcp" if proto == IPPROTO_MPTCP else "tcp"
                print(f"{kind} {local[0]}:{local[1]} {peer[0]}:{peer[1]} nodelay={1 if nodelay else 0}")
                found += 1
    except OSError as e:
        print(f"socket_options.py: pid {pid}: {e}", file=sys.stderr)
        sys.exit(2)
    sys.exit(0 if found else 1)


if __name__ == "__main__":
    main()
