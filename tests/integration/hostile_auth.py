#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Peers that try DH-HMAC-CHAP on mpnvme-target without the key, or stall
it, each from a source address of its own (the target slows an address
down after a failure). Every case says what it saw; the script fails if
any case does not hold.
  drop-after-reply   a wrong AUTH_Reply, then the connection dropped at once
                     (AUTH_Failure1 never read): the same address is refused
                     on its next connection.
  renegotiate        AUTH_Negotiate again and again in one transaction: the
                     transaction fails after a few, with AUTH_Failure1.
  short-receive      an Authentication Receive too short for the challenge:
                     refused, and the challenge comes with the next one.
  reauthenticate     the right response (the key is known here), then a new
                     transaction on the same queue: a second success.
  idle-setup         a connection that never sends its ICReq is closed within
                     the target's set-up deadline.
  stalled-auth       Connect, then no authentication: closed within the
                     authentication deadline.
  slow-step          a host with a KATO of 15 s that takes 12 s to answer
                     the challenge (longer than the first-message deadline,
                     within its KATO, as nvmet allows) authenticates; when
                     it then stalls mid-transaction it is closed within its
                     KATO.
Usage: hostile_auth.py TARGET PORT SUBNQN HOSTNQN KEYFILE SRC1 SRC2 ...
(KEYFILE: the host's DHHC-1:00 secret; one source address per case.)"""
import base64
import hashlib
import hmac
import os
import socket
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True  # tests/pylib is the checkout's: no .pyc beside it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from nvmetcp import capsule, connect, icreq, sqe  # noqa: E402

TARGET, PORT, SUBNQN, HOSTNQN = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), sys.argv[4].encode()
KEY = base64.b64decode(open(sys.argv[5]).read().strip().split(":")[2])[:-4]  # DHHC-1:00:<key + CRC-32>:
SOURCES = sys.argv[6:]
DEADLINE_S = 10  # the target's set-up deadline and the first authentication message's
SLOW_KATO_S = 15
failures = []
print_lock = threading.Lock()


class Peer:
    def __init__(self, src):
        self.s = socket.socket()
        self.s.bind((src, 0))
        self.s.settimeout(5)
        self.s.connect((TARGET, PORT))

    def pdu(self):
        """The next PDU (type, bytes), or None when the target closed."""
        head = self._exact(8)
        if head is None:
            return None
        plen = struct.unpack_from("<I", head, 4)[0]
        rest = self._exact(plen - 8)
        return None if rest is None else (head[0], head + rest)

    def _exact(self, n):
        data = b""
        while len(data) < n:
            try:
                chunk = self.s.recv(n - len(data))
            except (ConnectionResetError, socket.timeout):
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def command(self, payload):
        """Send a capsule, then the response's status and dword 0, and any
        data (C2HData) that came before it."""
        self.s.sendall(payload)
        data = b""
        while True:
            p = self.pdu()
            if p is None:
                return None, None, data
            t, b = p
            if t == 7:  # C2HData
                data += b[b[3]:]
            elif t == 5:  # response: status in the top 15 bits of dword 3
                dw0 = struct.unpack_from("<I", b, 8)[0]
                return struct.unpack_from("<H", b, 8 + 14)[0] >> 1, dw0, data

    def setup(self, kato_ms=0):
        self.s.sendall(icreq())
        if self.pdu() is None:
            return None
        status, dw0, _ = self.command(connect(SUBNQN, host=HOSTNQN, kato=kato_ms))
        return dw0 if status == 0 else None

    def close(self):
        self.s.close()


def auth_send(cid, msg):
    return capsule(sqe(0x7F, cid, sgl_len=len(msg), fctype=0x05, tail=struct.pack("<BBBBI", 0, 1, 1, 0xE9, len(msg))), msg)


def auth_receive(cid, al=4096):
    return capsule(sqe(0x7F, cid, sgl_len=al, fctype=0x06, tail=struct.pack("<BBBBI", 0, 1, 1, 0xE9, al)))


def negotiate(t_id):
    """SHA-256 and the null DH group only."""
    desc = bytearray(64)
    desc[0], desc[2], desc[3], desc[4], desc[34] = 1, 1, 1, 1, 0
    return struct.pack("<BBHHBB", 0, 0, 0, t_id, 0, 1) + bytes(desc)


def reply(t_id, response, seqnum=1):
    return struct.pack("<BBHHBBBBHI", 1, 2, 0, t_id, 32, 0, 0, 0, 0, seqnum) + response + bytes(32)


def right_response(challenge, t_id):
    """The host's response to a challenge with the null group (no key transformation: DHHC-1:00)."""
    c1, s1 = challenge[16:48], struct.unpack_from("<I", challenge, 12)[0]
    msg = c1 + struct.pack("<IH", s1, t_id) + b"\x00" + b"HostHost" + HOSTNQN + b"\x00" + SUBNQN
    return hmac.new(KEY, msg, hashlib.sha256).digest()


def check(name, ok, saw):
    with print_lock:
        print(f"{'ok' if ok else 'FAIL'}: {name}: {saw}", flush=True)
    if not ok:
        failures.append(name)


def run_case(case, src):
    """A case that raises (the target closed on it early) fails, not just its thread."""
    try:
        case(src)
    except Exception as e:  # noqa: BLE001 - any error is the case's failure
        check(case.__name__.replace("_", "-"), False, f"{type(e).__name__}: {e}")


def drop_after_reply(src):
    p = Peer(src)
    p.setup()
    p.command(auth_send(1, negotiate(1)))
    p.command(auth_receive(2))
    p.s.sendall(auth_send(3, reply(1, b"\x11" * 32)))
    time.sleep(0.2)  # the target has read the reply; its Failure1 is never asked for
    p.close()
    again = Peer(src)
    try:
        again.s.sendall(icreq())
        refused = again.pdu() is None
    except OSError:
        refused = True
    again.close()
    check("drop-after-reply", refused, "the next connection from that address was " + ("refused" if refused else "served"))


def renegotiate(src):
    p = Peer(src)
    p.setup()
    challenges = 0
    for t_id in range(1, 9):
        p.command(auth_send(2 * t_id, negotiate(t_id)))
        _, _, msg = p.command(auth_receive(2 * t_id + 1))
        if not msg or msg[1] != 0x01:  # AUTH_Failure1 (or nothing) instead of a challenge
            break
        challenges += 1
    failed = msg is not None and len(msg) > 1 and msg[1] == 0xF1
    p.close()
    check("renegotiate", 1 <= challenges <= 4 and failed,
          f"{challenges} challenge(s) in one transaction, then " + ("AUTH_Failure1" if failed else repr(msg[:8])))


def short_receive(src):
    p = Peer(src)
    p.setup()
    p.command(auth_send(1, negotiate(1)))
    short, _, _ = p.command(auth_receive(2, 16))
    _, _, msg = p.command(auth_receive(3))
    p.close()
    got = msg is not None and len(msg) > 1 and msg[1] == 0x01
    check("short-receive", short != 0 and got,
          f"a 16-byte receive: status {short:#x}; the next: " + ("the challenge" if got else repr(msg[:8] if msg else msg)))


def reauthenticate(src):
    p = Peer(src)
    p.setup()
    results = []
    for t_id, cid in ((1, 1), (2, 5)):
        p.command(auth_send(cid, negotiate(t_id)))
        _, _, challenge = p.command(auth_receive(cid + 1))
        if not challenge or challenge[1] != 0x01:
            results.append("no challenge")
            break
        status, _, _ = p.command(auth_send(cid + 2, reply(t_id, right_response(challenge, t_id))))
        _, _, success = p.command(auth_receive(cid + 3))
        results.append("success" if status == 0 and success and success[1] == 0x03 else f"{success[:8] if success else None}")
    # Then the queue takes other commands: Property Get CAP.
    status, _, _ = p.command(capsule(sqe(0x7F, 9, fctype=0x04, tail=struct.pack("<4xI", 0))))
    p.close()
    check("reauthenticate", results == ["success", "success"] and status == 0,
          f"transactions: {', '.join(results)}; a command afterwards: status {status}")


def closed_within(p, seconds):
    """Seconds until the target closed the connection, or None."""
    start = time.monotonic()
    p.s.settimeout(seconds)
    try:
        while p.s.recv(4096):
            pass
    except socket.timeout:
        return None
    except ConnectionResetError:
        pass
    return time.monotonic() - start


def idle_setup(src):
    p = Peer(src)
    took = closed_within(p, DEADLINE_S + 3)
    p.close()
    check("idle-setup", took is not None, f"closed after {took:.1f} s" if took is not None else "still open")


def stalled_auth(src):
    p = Peer(src)
    p.setup()
    took = closed_within(p, DEADLINE_S + 3)
    p.close()
    check("stalled-auth", took is not None, f"closed after {took:.1f} s" if took is not None else "still open")


def slow_step(src):
    p = Peer(src)
    p.setup(kato_ms=SLOW_KATO_S * 1000)
    p.command(auth_send(1, negotiate(1)))
    _, _, challenge = p.command(auth_receive(2))
    time.sleep(DEADLINE_S + 2)  # a host computing its DH values slowly
    status, _, _ = p.command(auth_send(3, reply(1, right_response(challenge, 1)))) if challenge else (None, 0, b"")
    _, _, success = p.command(auth_receive(4))
    ok = status == 0 and success is not None and len(success) > 1 and success[1] == 0x03
    p.command(auth_send(5, negotiate(2)))
    p.command(auth_receive(6))
    took = closed_within(p, SLOW_KATO_S + 3)
    p.close()
    check("slow-step", ok and took is not None,
          ("authenticated after a 12 s step" if ok else f"not authenticated after a 12 s step ({success[:8] if success else None})")
          + "; stalled mid-transaction: " + (f"closed after {took:.1f} s" if took is not None else "still open"))


cases = [drop_after_reply, renegotiate, short_receive, reauthenticate, idle_setup, stalled_auth, slow_step]
if len(SOURCES) < len(cases):
    sys.exit(f"{len(cases)} source addresses needed, {len(SOURCES)} given")
# Each case has an address of its own, so they run side by side: the
# deadlines they wait on add up otherwise.
threads = [threading.Thread(target=run_case, args=(case, src)) for case, src in zip(cases, SOURCES)]
for t in threads:
    t.start()
for t in threads:
    t.join()
sys.exit(1 if failures else 0)
