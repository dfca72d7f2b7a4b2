#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Hostile NVMe/TCP hosts against a running mpnvme-target: truncated and
malformed headers, bad lengths, digest errors, R2T misuse, garbage, abrupt
disconnects and a connection flood. Each bad connection must be ended by
the target (C2HTermReq where the protocol calls for one, then close) while
the target keeps serving. Usage: hostile_clients.py HOST PORT SUBNQN"""
import os
import socket
import struct
import sys
import time

sys.dont_write_bytecode = True  # tests/pylib is the checkout's: no .pyc beside it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from nvmetcp import capsule, connect, icreq, sqe  # noqa: E402

HOST, PORT, NQN = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
failures = []


def connect_cmd(**kw):
    return connect(NQN, **kw)


def open_conn():
    s = socket.create_connection((HOST, PORT), timeout=5)
    s.settimeout(5)
    return s


def read_until_closed(s, limit=1 << 20):
    """Everything the target sends until it closes (or 5 s pass)."""
    data = b""
    try:
        while len(data) < limit:
            chunk = s.recv(65536)
            if not chunk:
                return data, True
            data += chunk
    except (socket.timeout, ConnectionResetError):
        return data, isinstance(sys.exc_info()[1], ConnectionResetError)
    return data, False


def pdus(data):
    """Split a byte stream into (type, header) tuples by plen."""
    out = []
    while len(data) >= 8:
        t, _, _, _, plen = struct.unpack_from("<BBBBI", data)
        if plen < 8 or plen > len(data):
            break
        out.append((t, data[:plen]))
        data = data[plen:]
    return out


def expect_termreq(name, payload, fes=None, after_ic=True, hd=False, dd=False):
    s = open_conn()
    try:
        if after_ic:
            s.sendall(icreq(hd, dd))
        s.sendall(payload)
        data, closed = read_until_closed(s)
    finally:
        s.close()
    got = pdus(data)
    terms = [h for t, h in got if t == 3]
    if not closed:
        failures.append(f"{name}: connection not closed by the target")
    elif not terms:
        failures.append(f"{name}: no C2HTermReq (got PDU types {[t for t, _ in got]})")
    elif fes is not None and struct.unpack_from("<H", terms[0], 8)[0] != fes:
        failures.append(f"{name}: FES {struct.unpack_from('<H', terms[0], 8)[0]}, expected {fes}")
    else:
        print(f"ok: {name}: C2HTermReq fes {struct.unpack_from('<H', terms[0], 8)[0]}, connection closed")


def expect_closed(name, payload, after_ic=True):
    s = open_conn()
    try:
        if after_ic:
            s.sendall(icreq())
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        _, closed = read_until_closed(s)
    finally:
        s.close()
    if not closed:
        failures.append(f"{name}: connection not closed")
    else:
        print(f"ok: {name}: connection closed")


# Header and sequence errors.
expect_termreq("first PDU not ICReq", capsule(sqe(0x02, 1)), fes=2, after_ic=False)
expect_termreq("plen shorter than the header", struct.pack("<BBBBI", 4, 0, 72, 0, 16) + bytes(64), fes=1)
expect_termreq("capsule hlen wrong", struct.pack("<BBBBI", 4, 0, 24, 0, 24) + bytes(16), fes=1)
expect_termreq("ICReq twice", icreq(), fes=2)
expect_termreq("C2H PDU type from a host", struct.pack("<BBBBI", 7, 4, 24, 24, 536) + bytes(528), fes=1)
expect_termreq("unknown PDU type", struct.pack("<BBBBI", 0x0b, 0, 24, 0, 24) + bytes(16), fes=1)
expect_termreq("4 GiB in-capsule data", struct.pack("<BBBBI", 4, 0, 72, 72, 0xFFFFFFF0) + bytes(64), fes=4)
expect_termreq("in-capsule data without an in-capsule SGL",
               struct.pack("<BBBBI", 4, 0, 72, 72, 72 + 512) + sqe(0x01, 1, sgl_len=512) + bytes(512), fes=1)
expect_termreq("header digest error", connect_cmd(hd=True, corrupt_hdgst=True), fes=3, hd=True)
expect_termreq("digest flag not negotiated", connect_cmd(hd=True), fes=1)
expect_termreq("H2CData without R2T",
               connect_cmd() + struct.pack("<BBBBIHHII4x", 6, 4, 24, 24, 24 + 512, 7, 3, 0, 512) + bytes(512), fes=1)
# Abrupt ends.
expect_closed("truncated header then close", struct.pack("<BBBB", 4, 0, 72, 0))
expect_closed("half a capsule then close", capsule(sqe(0x02, 1))[:40])
expect_closed("close in the middle of in-capsule data", connect_cmd()[:600])
expect_closed("ICReq cut short", icreq()[:50], after_ic=False)
expect_closed("random garbage", os.urandom(4096), after_ic=False)


def expect_status(name, payload, status, hd=False, dd=False):
    """The command fails with `status` and the connection stays usable."""
    s = open_conn()
    s.sendall(icreq(hd, dd) + payload)
    data = b""
    deadline = time.time() + 5
    want = 128 + 24 + (4 if hd else 0)
    while time.time() < deadline and len(data) < want:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    resp = [h for t, h in pdus(data) if t == 5]
    if len(resp) == 1 and (struct.unpack_from("<H", resp[0], 22)[0] >> 1) & 0x7FF == status:
        print(f"ok: {name}: command completed with status {status:#x}")
    else:
        failures.append(f"{name}: expected a CapsuleResp with status {status:#x}, got {[(t, h.hex()) for t, h in pdus(data)]}")


# A data digest error fails the command (Transient Transport Error), not the connection.
expect_status("data digest error", connect_cmd(hd=True, dd=True, corrupt_ddgst=True), 0x22, hd=True, dd=True)
# A refused host gets a Connect error response, not a dropped socket.
expect_status("host not on the allow-list", connect_cmd(host=b"nqn.2014-08.org.nvmexpress:uuid:bad-host-not-allowed"), 0x184)
# A host that goes silent loses its controller after KATO (1 s here).
s = open_conn()
s.sendall(icreq())
cmd = bytearray(connect_cmd())
struct.pack_into("<I", cmd, 8 + 48, 1000)  # SQE CDW12: KATO in milliseconds
s.sendall(bytes(cmd))
s.sendall(capsule(sqe(0x7F, 2, fctype=0, tail=struct.pack("<4xIQ", 0x14, 0x460001))))  # CC.EN
start = time.time()
s.settimeout(10)
data, closed = b"", False
try:
    while True:
        chunk = s.recv(4096)
        if not chunk:
            closed = True
            break
        data += chunk
except (socket.timeout, ConnectionResetError):
    closed = True
s.close()
elapsed = time.time() - start
# Not before its KATO; and at all (within the 10 s receive timeout, a hang
# check, not a bound on how soon).
if closed and elapsed > 0.8:
    print(f"ok: silent host with KATO 1 s disconnected after {elapsed:.1f} s")
else:
    failures.append(f"silent host: closed={closed} after {elapsed:.1f} s (expected after its 1 s KATO)")
# Connection flood: many sockets at once, some idle, some mid-ICReq.
flood = []
for i in range(200):
    try:
        c = socket.create_connection((HOST, PORT), timeout=5)
        if i % 3 == 0:
            c.sendall(icreq()[:64])
        flood.append(c)
    except OSError as e:
        failures.append(f"flood: connection {i} refused: {e}")
        break
for c in flood:
    c.close()
print(f"ok: connection flood of {len(flood)} sockets opened and dropped")

if failures:
    for f in failures:
        print("FAIL:", f)
    sys.exit(1)
print("PASS")
