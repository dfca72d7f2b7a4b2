#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The target's trust boundary, tried as a hostile peer tries it: each case
names one way in that mpnvme-target 4bcf7ad left open and checks it is
closed. Run by admission.sh, which starts the target each case expects.

  admission.py CASE ADDR SUBNQN [ARGS...]

  unauth-io-write KEYFILE HOST     an I/O queue on a keyed host's live
                                   controller, without the key, writes
  before-connect PID               commands (R2T writes, in-capsule data
                                   past Connect's 1 KiB) before Connect
  idle-before-connect PID          (no SUBNQN) what 200 connections that
                                   sent only an ICReq hold
  deny CONTROL HOST READER         host deny while a write of the host's
                                   is waiting for its data
  key CONTROL HOST                 a key set for a connected keyless host
  reservation CONTROL              another host's Acquire, and a Preempt
                                   and Abort, while a write's data is due
  hostid                           a host ID another host NQN registered
  forge                            a host NQN with a line feed in it
  discovery CHANGE H1 H2           which discovery controllers hear of a
                                   subsystem added for H1 only (CHANGE: the
                                   control socket, or sh:COMMAND)
  hostid-observe                   what a second NQN may do with a host ID
                                   (prints one line, judges nothing)
  discovery-kato                   a discovery controller with KATO 0
  allow-narrows CONTROL HOST OTHER naming a host on an open subsystem
                                   while another is connected
  keyed-add CONTROL KEYED STRANGER a subsystem added on a target with keys
  limits SRC1 SRC2 PER TOTAL       connections from one and two addresses
  digest                           writes whose data digest fails, on a
                                   queue with header and data digests
  descriptors CONTROL FILE LOG     file namespaces take the last
                                   descriptors, then peers connect
Every check prints "ok: ..." or "FAIL: ..."; exit status 1 on a failure."""
import os
import socket
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from verdict import check, finish  # noqa: E402
from nvmehost import (AUTH_REQUIRED, CONNECT_INVALID_HOST, DISCOVERY_NQN, RESERVATION_CONFLICT, R2T, Closed, Queue, code, control, lba_bytes,  # noqa: E402
                      dhchap_key, dhchap_secret, keys, read_sqe, resv, sqe, write_sqe)
from nvmetcp import capsule, h2c, icreq  # noqa: E402

def hid(n):
    return bytes([n]) * 16


def refused_write(q, slba, fill):
    """An in-capsule write of 8 blocks of `fill` on `q`: (what happened,
    whether it was refused: a status or the connection ending)."""
    try:
        st = q.command(write_sqe(slba, 8), fill * 4096, in_capsule=True)[0]
        return f"status {st:#x}", st != 0
    except Closed as e:
        return f"connection ended ({e})", True


def io_host(addr, subnqn, hostnqn, hostid, key=None):
    """A host's admin queue (enabled) and one I/O queue, authenticated with
    `key` when given: (admin, io, cntlid)."""
    adm = Queue(addr)
    st, cntlid = adm.connect(subnqn, hostnqn, hostid, kato=30000)
    if st:
        raise RuntimeError(f"admin Connect of {hostnqn}: status {st:#x}")
    if key is not None and not adm.authenticate(key):
        raise RuntimeError("admin queue did not authenticate")
    adm.enable()
    io = Queue(addr)
    st, _ = io.connect(subnqn, hostnqn, hostid, qid=1, cntlid=cntlid & 0xFFFF)
    if st:
        raise RuntimeError(f"I/O Connect of {hostnqn}: status {st:#x}")
    if key is not None and not io.authenticate(key):
        raise RuntimeError("I/O queue did not authenticate")
    return adm, io, cntlid & 0xFFFF


def unauth_io_write(addr, subnqn, keyfile, host):
    key = dhchap_key(open(keyfile).read())
    host = host.encode()
    adm, io, cntlid = io_host(addr, subnqn, host, hid(1), key)
    intruder = Queue(addr)
    st, _ = intruder.connect(subnqn, host, hid(1), qid=2, cntlid=cntlid)
    check("an I/O queue connects to the keyed host's controller, told to authenticate", st == 0, f"status {st:#x}")
    # 64 KiB: past the in-capsule limit, so the target would send an R2T.
    cid = intruder.send(write_sqe(0, 128), length=65536)
    p = intruder.next_for(cid)
    got_r2t = p[0] == R2T
    st = None if got_r2t else struct.unpack_from("<H", p, 8 + 14)[0] >> 1
    check("no R2T before authentication: the write is refused with Authentication Required",
          not got_r2t and code(st) == AUTH_REQUIRED, "an R2T" if got_r2t else f"status {st:#x}")
    st, _, _ = intruder.command(write_sqe(8, 8), b"\xee" * 4096, in_capsule=True)
    check("an in-capsule write before authentication is refused too", code(st) == AUTH_REQUIRED, f"status {st:#x}")
    # H2CData for a transfer the target never asked for ends the connection.
    try:
        intruder.s.sendall(h2c(cid, 0, 0, b"\xee" * 4096))
        intruder.pdu()
        ended = False
    except Closed:
        ended = True
    check("unsolicited H2CData ends the intruder's connection", ended)
    st, _, data = io.command(read_sqe(0, 136), length=136 * 512)
    check("the namespace holds none of the intruder's bytes", st == 0 and b"\xee" not in data,
          f"status {st:#x}, {data.count(0xee)} intruder bytes")
    for q in (intruder, io, adm):
        q.close()


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def before_connect(addr, subnqn, pid):
    before = rss_kib(pid)
    q = Queue(addr)
    r2ts = 0
    statuses, ended = set(), ""
    try:
        cids = [q.send(write_sqe(0, 128), length=65536) for _ in range(128)]
        for cid in cids:
            p = q.next_for(cid)
            if p[0] == R2T:
                r2ts += 1
            else:
                statuses.add(struct.unpack_from("<H", p, 8 + 14)[0] >> 1)
    except Closed as e:
        ended = str(e)
    # One command slot before Connect, as nvmet has: the first is refused,
    # one more in flight beside it ends the connection.
    check("128 writes before Connect: no R2T, refused, and the pile ends the connection", r2ts == 0 and ended != "",
          f"{r2ts} R2Ts, statuses {sorted(statuses)}, {ended or 'still open'}")
    grew = rss_kib(pid) - before
    check("... and no buffer granted: the target's memory grew by less than 8 MiB", grew < 8192,
          f"{grew} KiB (4bcf7ad: 65 MiB)")
    q2 = Queue(addr)
    try:
        q2.send(sqe(0x7F, 0, fctype=1), b"\0" * 4096, in_capsule=True)
        q2.pdu()
        ended = False
    except Closed:
        ended = True
    check("in-capsule data past Connect's 1 KiB before Connect ends the connection", ended)
    q.close()
    q2.close()


def idle_before_connect(addr, pid):
    # What a connection that said ICReq and nothing more holds: 4bcf7ad
    # gave it 205 KiB (R2T and data buffers, a full send ring and slot
    # table), c5f1fb8 84 KiB (64 KiB of receive staging).
    before = rss_kib(pid)
    idle = [Queue(addr) for _ in range(200)]
    per_conn = (rss_kib(pid) - before) / len(idle)
    check("an idle connection before Connect holds less than 40 KiB", per_conn < 40, f"{per_conn:.0f} KiB each")
    for q in idle:
        q.close()


def deny(addr, subnqn, ctl, host, reader):
    host = host.encode()
    adm, io, _ = io_host(addr, subnqn, host, hid(2))
    cid = io.send(write_sqe(0, 128), length=65536)
    p = io.next_for(cid)
    check("the allowed host's write gets its R2T", p[0] == R2T)
    reply = control(ctl, f"host deny {subnqn.decode()} {host.decode()}")
    check("host deny", reply.startswith("ok"), reply.strip())
    try:
        io.send_data(p, b"\xdd" * 65536)
        st = io.finish(cid)[0]
        done = f"completed with status {st:#x}"
        refused = st != 0
    except Closed as e:
        done, refused = f"connection ended ({e})", True
    check("the denied host's write, its data sent after the deny, does not succeed", refused, done)
    radm, rio, _ = io_host(addr, subnqn, reader.encode(), hid(3))
    st, _, data = rio.command(read_sqe(0, 128), length=65536)
    check("none of its data reached the namespace", st == 0 and b"\xdd" not in data, f"{data.count(0xdd)} bytes")
    after, refused = refused_write(io, 256, b"\xdd")
    check("its next write is refused", refused, after)
    for q in (io, adm, rio, radm):
        q.close()


def key(addr, subnqn, ctl, host):
    adm, io, _ = io_host(addr, subnqn, host.encode(), hid(4))
    check("a keyless host writes", io.command(write_sqe(0, 8), b"\x01" * 4096, in_capsule=True)[0] == 0)
    k = dhchap_secret(b"k" * 32)
    reply = control(ctl, f"host key {host} dhchap_key={k}")
    check("host key (the reply does not repeat the key)", reply.startswith("ok") and k not in reply, reply.strip()[:60])
    after, refused = refused_write(io, 0, b"\x02")
    check("its controller made without a key ends: the next write does not succeed", refused, after)
    io.close()
    adm.close()


def reservation(addr, subnqn, ctl):
    a_adm, a, _ = io_host(addr, subnqn, b"nqn.2026-12.io.mpnvme:resv-a", hid(5))
    b_adm, b, _ = io_host(addr, subnqn, b"nqn.2026-12.io.mpnvme:resv-b", hid(6))
    # Another host's Acquire while B's data is due.
    cid = b.send(write_sqe(0, 128), length=65536)
    r2t = b.next_for(cid)
    check("B's write gets its R2T", r2t[0] == R2T)
    st = a.command(resv(0x0D, 0), keys(0, 0xA), True)[0]
    st2 = a.command(resv(0x11, 1 << 8), keys(0xA, 0), True)[0]  # Write Exclusive
    check("A registers and acquires Write Exclusive", st == 0 and st2 == 0, f"{st:#x} {st2:#x}")
    b.send_data(r2t, b"\xbb" * 65536)
    st = b.finish(cid)[0]
    check("B's write, its data sent after the Acquire, completes with Reservation Conflict", code(st) == RESERVATION_CONFLICT,
          f"status {st:#x}")
    st, _, data = a.command(read_sqe(0, 128), length=65536)
    check("none of B's data is in the namespace", st == 0 and b"\xbb" not in data, f"{data.count(0xbb)} bytes")
    # A Preempt and Abort of a registrant whose data is due.
    a.command(resv(0x15, 1 | 1 << 8), keys(0xA), True)  # clear
    a.command(resv(0x0D, 0), keys(0, 0xA), True)
    b.command(resv(0x0D, 0), keys(0, 0xB), True)
    st = a.command(resv(0x11, 3 << 8), keys(0xA, 0), True)[0]  # Write Exclusive, registrants only
    check("A holds Write Exclusive - Registrants Only, B is registered", st == 0, f"{st:#x}")
    cid = b.send(write_sqe(256, 128), length=65536)
    r2t = b.next_for(cid)
    check("B, a registrant, gets its R2T", r2t[0] == R2T)
    st = a.command(resv(0x11, 2 | 3 << 8), keys(0xA, 0xB), True)[0]  # preempt and abort B
    check("A preempts and aborts B", st == 0, f"{st:#x}")
    b.send_data(r2t, b"\xbc" * 65536)
    st = b.finish(cid)[0]
    check("B's write, its data sent after the Preempt and Abort, does not succeed", st != 0, f"status {st:#x}")
    st, _, data = a.command(read_sqe(256, 128), length=65536)
    check("none of it is in the namespace", st == 0 and b"\xbc" not in data, f"{data.count(0xbc)} bytes")
    a.command(resv(0x15, 1 | 1 << 8), keys(0xA), True)  # clear: the cases after meet no reservation
    for q in (a, b, a_adm, b_adm):
        q.close()


def hostid(addr, subnqn):
    a_adm, a, _ = io_host(addr, subnqn, b"nqn.2026-12.io.mpnvme:id-a", hid(7))
    st = a.command(resv(0x0D, 0), keys(0, 0x7A), True)[0]
    st2 = a.command(resv(0x11, 1 << 8), keys(0x7A, 0), True)[0]
    check("A registers with host ID 07.. and holds Write Exclusive", st == 0 and st2 == 0)
    b_adm, b, _ = io_host(addr, subnqn, b"nqn.2026-12.io.mpnvme:id-b", hid(7))  # the same host ID, another NQN
    st = b.command(write_sqe(0, 8), b"\x07" * 4096, True)[0]
    check("B, presenting A's host ID, may not write under A's reservation", code(st) == RESERVATION_CONFLICT, f"{st:#x}")
    st = b.command(resv(0x15, 1 << 8), keys(0x7A), True)[0]
    check("... nor release it with A's key", code(st) == RESERVATION_CONFLICT, f"{st:#x}")
    st = b.command(resv(0x0D, 1), keys(0x7A, 0), True)[0]
    check("... nor unregister A", code(st) == RESERVATION_CONFLICT, f"{st:#x}")
    st = a.command(write_sqe(0, 8), b"\x0a" * 4096, True)[0]
    check("A still writes", st == 0, f"{st:#x}")
    a.command(resv(0x15, 1 | 1 << 8), keys(0x7A), True)  # clear
    for q in (a, b, a_adm, b_adm):
        q.close()


def allow_narrows(addr, subnqn, ctl, host, other):
    adm, io, _ = io_host(addr, subnqn, other.encode(), hid(11))
    reply = control(ctl, f"host allow {subnqn.decode()} {host}")
    check("naming a host on an open subsystem", reply.startswith("ok"), reply.strip())
    after, refused = refused_write(io, 0, b"\x03")
    check("the host connected while it was open, not named, is ended", refused, after)
    io.close()
    adm.close()


def keyed_add(addr, ctl, keyed, stranger):
    reply = control(ctl, "subsystem add nqn.2026-12.io.mpnvme:added-later ram:1m")
    check("subsystem add on a target with keys", reply.startswith("ok"), reply.strip())
    q = Queue(addr)
    st, _ = q.connect(b"nqn.2026-12.io.mpnvme:added-later", stranger.encode(), hid(12))
    check("it is closed to a host without a key, as one given at start would be", code(st) == CONNECT_INVALID_HOST, f"{st:#x}")
    q.close()
    q = Queue(addr)
    st, dw0 = q.connect(b"nqn.2026-12.io.mpnvme:added-later", keyed.encode(), hid(13))
    check("a host with a key connects to it and is told to authenticate", st == 0 and dw0 & (1 << 17), f"{st:#x} {dw0:#x}")
    q.close()


def limits(addr, src1, src2, per_address, total):
    def open_from(src, n):
        served, held = 0, []
        for _ in range(n):
            try:
                q = Queue(addr, src=src, timeout=3)
                served += 1
                held.append(q)
            except (Closed, OSError):
                pass
        return served, held
    a, held_a = open_from(src1, int(per_address) + 3)
    check(f"one address holds at most --max-connections-per-address ({per_address})", a == int(per_address), f"{a} served")
    b, held_b = open_from(src2, int(total))
    check(f"all addresses hold at most --max-connections ({total})", a + b == int(total), f"{a + b} served")
    for q in held_a + held_b:
        q.close()
    time.sleep(0.5)  # the target frees them on its next turn
    q = Queue(addr, src=src1, timeout=3)
    check("once they are gone, the address connects again", q.maxh2cdata > 0)
    q.close()


def forge(addr, subnqn):
    q = Queue(addr)
    st, _ = q.connect(subnqn, b"nqn.2026-12.io.mpnvme:x\nmpnvme: error: FORGED by a peer", hid(8))
    print(f"forge: Connect answered {st:#x}", flush=True)
    q.close()


def discovery(addr, change, h1, h2):
    """CHANGE: the control socket's path (a subsystem added for H1), or
    sh:COMMAND that makes such a change another way (nvmet's configfs)."""
    qs = []
    for h in (h1, h2):
        q = Queue(addr)
        q.connect(DISCOVERY_NQN, h.encode(), hid(9), kato=0)
        q.enable()
        q.command(sqe(0x09, 0, cdw10=0x0B, cdw11=1 << 31))  # Asynchronous Event Configuration: discovery log
        qs.append((q, q.send(sqe(0x0C, 0))))                  # an Asynchronous Event Request
    if change.startswith("sh:"):
        ok = subprocess.run(change[3:], shell=True).returncode == 0
        check("the change for H1 only", ok, change[3:])
    else:
        reply = control(change, f"subsystem add nqn.2026-12.io.mpnvme:for-h1 host={h1} ram:1m")
        check("subsystem add for H1 only", reply.startswith("ok"), reply.strip())
    heard = []
    for (q, cid), name, wait in ((qs[0], "H1", 10), (qs[1], "H2", 3)):
        q.s.settimeout(wait)
        try:
            st, dw0, _, _ = q.finish(cid)
            heard.append(f"{name}=notified" if st == 0 and dw0 & 0xFF0007 == 0x700002 else f"{name}={st:#x}/{dw0:#x}")
        except Closed:
            heard.append(f"{name}=silent")
    print("DISCOVERY " + " ".join(heard), flush=True)
    check("H1's discovery controller gets a discovery log change notice", heard[0] == "H1=notified", heard[0])
    check("H2, which the change does not concern, hears nothing", heard[1] == "H2=silent", heard[1] + " (waited 3 s after H1's)")
    for q, _ in qs:
        q.close()


def hostid_observe(addr, subnqn):
    """What a target lets a second NQN do with a host ID another NQN
    registered (A holds Write Exclusive): one line, no judgement."""
    a_adm, a, _ = io_host(addr, subnqn, b"nqn.2026-12.io.mpnvme:id-a", hid(7))
    a.command(resv(0x0D, 0), keys(0, 0x7A), True)
    a.command(resv(0x11, 1 << 8), keys(0x7A, 0), True)
    b_adm, b, _ = io_host(addr, subnqn, b"nqn.2026-12.io.mpnvme:id-b", hid(7))
    w = b.command(write_sqe(0, 1), b"\x07" * lba_bytes(b_adm), True)[0]
    rel = b.command(resv(0x15, 1 << 8), keys(0x7A), True)[0]
    unreg = b.command(resv(0x0D, 1), keys(0x7A, 0), True)[0]
    print(f"HOSTID second-nqn write={code(w):#x} release={code(rel):#x} unregister={code(unreg):#x}", flush=True)
    a.command(resv(0x15, 1 | 1 << 8), keys(0x7A), True)
    for q in (a, b, a_adm, b_adm):
        q.close()


def discovery_kato(addr):
    q = Queue(addr)
    q.connect(DISCOVERY_NQN, b"nqn.2026-12.io.mpnvme:kato0", hid(10), kato=0)
    q.enable()
    st, kato, _ = q.command(sqe(0x0A, 0, cdw10=0x0F))  # Get Features Keep Alive Timer
    check("a discovery controller connected with KATO 0 ends after 120 s without commands (nvmet's)", st == 0 and kato == 120000,
          f"KATO {kato} ms")
    q.close()


class DigestQueue(Queue):
    """A queue with header and data digests: capsules go out in digest
    form, and what comes back is read as if there were none."""
    def __init__(self, addr):
        super().__init__(addr, handshake=False)
        self.s.sendall(icreq(hd=True, dd=True))
        self.maxh2cdata = struct.unpack_from("<I", self.pdu(), 12)[0]

    def pdu(self):
        head = self._exact(8)
        plen = struct.unpack_from("<I", head, 4)[0]
        p = head + self._exact(plen - 8)
        hlen, pdo = p[2], p[3]
        if not p[1] & 1:
            return p
        body = bytearray(p[:hlen] + (p[pdo:plen - (4 if p[1] & 2 else 0)] if pdo else b""))
        body[3] = hlen if pdo else 0
        struct.pack_into("<I", body, 4, len(body))
        return bytes(body)

    def _send(self, b):
        if b[0] == 4:  # a capsule
            b = capsule(b[8:72], b[72:], hd=True, dd=True) if len(b) > 72 else capsule(b[8:72], hd=True, dd=True)
        self.s.sendall(b)

    def h2c(self, cid, ttag, off, data, last, bad=False):
        self.s.sendall(h2c(cid, ttag, off, data, last, dg=True, corrupt_ddgst=bad))


def digest(addr, subnqn):
    """A data digest fails the command its PDU belongs to, and none of the
    bytes it covered land (4bcf7ad placed them in RAM first, and charged
    the failure to whichever command's data ended next)."""
    adm = DigestQueue(addr)
    st, cntlid = adm.connect(subnqn, b"nqn.2026-12.io.mpnvme:digest", hid(13), kato=30000)
    adm.enable()
    io = DigestQueue(addr)
    io.connect(subnqn, b"nqn.2026-12.io.mpnvme:digest", hid(13), qid=1, cntlid=cntlid & 0xFFFF)
    cid = io.send(write_sqe(512, 8), length=4096)
    ttag = struct.unpack_from("<H", io.next_for(cid), 10)[0]
    io.h2c(cid, ttag, 0, b"\x11" * 4096, True, bad=True)
    st = io.finish(cid)[0]
    _, _, data = io.command(read_sqe(512, 8), length=4096)
    check("a write whose data digest fails: Transient Transport Error, and none of its bytes landed",
          code(st) == 0x22 and data.count(0x11) == 0, f"status {st:#x}, {data.count(0x11)} bytes landed")
    a, b = io.send(write_sqe(600, 16), length=8192), io.send(write_sqe(700, 8), length=4096)
    ta, tb = (struct.unpack_from("<H", io.next_for(c), 10)[0] for c in (a, b))
    io.h2c(a, ta, 0, b"\xaa" * 4096, False, bad=True)  # A's first PDU corrupt
    io.h2c(b, tb, 0, b"\xbb" * 4096, True)  # B's, whole
    io.h2c(a, ta, 4096, b"\xaa" * 4096, True)  # A goes on at the next offset
    sa, sb = io.finish(a)[0], io.finish(b)[0]
    check("the failure is A's, whose PDU it was, not B's whose data ended first; the connection stays",
          code(sa) == 0x22 and sb == 0, f"A {sa:#x}, B {sb:#x}")
    for q in (io, adm):
        q.close()


def descriptors(addr, ctl, path, log):
    """File namespaces added until the target is out of descriptors, then
    peers connect: the refusal names the cause, accept rests and says so
    once, and everything resumes once the files are gone."""
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(30)
    c.connect(ctl)
    replies = c.makefile("r")

    def say(line):
        c.sendall(line.encode() + b"\n")
        return replies.readline().strip()
    added, reply = 0, ""
    while added < 1000:
        reply = say(f"subsystem add nqn.2026-12.io.mpnvme:fill-{added} file:{path}")
        if not reply.startswith("ok"):
            break
        added += 1
    check("a file namespace past the descriptor limit is refused with the reason", "Too many open files" in reply,
          f"after {added}: {reply}")
    held = []
    for _ in range(20):
        try:
            held.append(socket.create_connection((addr, 4420), timeout=2))
        except OSError:
            pass
    time.sleep(3)
    lines = sum("accept: Too many open files" in line for line in open(log, errors="replace"))
    check("accept out of descriptors rests and says so once per interval", 1 <= lines <= 2, f"{lines} log line(s) in 3 s")
    removed = sum(say(f"subsystem remove nqn.2026-12.io.mpnvme:fill-{i}").startswith("ok") for i in range(added))
    check("the file subsystems are removed", removed == added, f"{removed} of {added}")
    c.close()
    for s in held:
        s.close()


def main():
    case, addr = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    if case == "discovery":
        discovery(addr, *rest)
    elif case == "discovery-kato":
        discovery_kato(addr)
    elif case == "keyed-add":
        keyed_add(addr, *rest)
    elif case == "limits":
        limits(addr, *rest)
    elif case == "descriptors":
        descriptors(addr, *rest)
    elif case == "idle-before-connect":
        idle_before_connect(addr, *rest)
    else:
        subnqn = rest[0].encode()
        fn = {"unauth-io-write": unauth_io_write, "before-connect": before_connect, "deny": deny, "key": key,
              "reservation": reservation, "hostid": hostid, "forge": forge, "allow-narrows": allow_narrows,
              "hostid-observe": hostid_observe, "digest": digest}[case]
        fn(addr, subnqn, *rest[1:])
    finish()


if __name__ == "__main__":
    main()
