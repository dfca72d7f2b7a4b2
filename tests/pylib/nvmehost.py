# SPDX-License-Identifier: GPL-2.0-only
"""A small NVMe/TCP host for tests that play a peer the engine would never
be: it sends what it is told, when it is told (an R2T's data held back, a
command before Connect, another host's controller ID), and reads what the
target answers. DH-HMAC-CHAP with SHA-256 and the null group, enough to be
a legitimate keyed host beside the hostile one. Written apart from the
engine, on the PDU builders of nvmetcp.py."""
import base64
import hashlib
import hmac
import socket
import struct

from nvmetcp import capsule, crc32c, h2c, icreq, sqe  # noqa: F401

ICRESP, C2H_TERM, CAPSULE_RESP, C2H_DATA, R2T = 0x1, 0x3, 0x5, 0x7, 0x9
AUTH_REQUIRED, RESERVATION_CONFLICT, SEQ_ERROR = 0x191, 0x83, 0x0C
CONNECT_INVALID_HOST = 0x184
DISCOVERY_NQN = b"nqn.2014-08.org.nvmexpress.discovery"


def code(status):
    """A status without its DNR and More bits: SCT and SC."""
    return status & 0x7FF


def dhchap_secret(key):
    """The DHHC-1:00 text of `key` (its CRC-32 appended, as nvme-cli does)."""
    import zlib
    return "DHHC-1:00:" + base64.b64encode(key + struct.pack("<I", zlib.crc32(key))).decode() + ":"


def dhchap_key(text):
    """The key bytes of a DHHC-1:00 secret (no transformation)."""
    return base64.b64decode(text.strip().split(":")[2])[:-4]


class Closed(Exception):
    """The target closed the connection (or sent a C2HTermReq)."""


class Queue:
    def __init__(self, addr, port=4420, src=None, timeout=10, handshake=True):
        self.s = socket.socket()
        if src:
            self.s.bind((src, 0))
        self.s.settimeout(timeout)
        self.s.connect((addr, port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.cid = 0
        self.maxh2cdata = 0
        self.pending = []  # PDUs read while waiting for another command's
        if handshake:
            self.s.sendall(icreq())
            p = self.pdu()
            self.maxh2cdata = struct.unpack_from("<I", p, 12)[0]

    def _exact(self, n):
        b = bytearray()
        while len(b) < n:
            try:
                chunk = self.s.recv(n - len(b))
            except (ConnectionResetError, socket.timeout) as e:
                raise Closed(str(e)) from e
            if not chunk:
                raise Closed("closed by the target")
            b += chunk
        return bytes(b)

    def _send(self, b):
        try:
            self.s.sendall(b)
        except OSError as e:
            raise Closed(str(e)) from e

    def pdu(self):
        head = self._exact(8)
        plen = struct.unpack_from("<I", head, 4)[0]
        p = head + self._exact(plen - 8)
        if p[0] == C2H_TERM:
            raise Closed(f"C2HTermReq, FES {struct.unpack_from('<H', p, 8)[0]:#x}")
        return p

    def send(self, s, data=b"", in_capsule=False, length=None):
        """Send a command (no waiting); returns its cid. Data goes in the
        capsule, or else the SGL asks for an R2T of `length` bytes."""
        self.cid = (self.cid + 1) & 0xFFFF
        s = s[:2] + struct.pack("<H", self.cid) + s[4:]
        if data and in_capsule:
            self._send(capsule(s, data))
        else:
            n = length if length is not None else len(data)
            self._send(capsule(s[:24] + struct.pack("<QIxxxB", 0, n, 0x5A) + s[40:]))
        return self.cid

    def next_for(self, cid):
        """The next PDU of command `cid`: an R2T, C2HData or its response."""
        for i, p in enumerate(self.pending):
            if self._cid_of(p) == cid:
                return self.pending.pop(i)
        while True:
            p = self.pdu()
            if self._cid_of(p) == cid:
                return p
            self.pending.append(p)

    @staticmethod
    def _cid_of(p):
        return struct.unpack_from("<H", p, 8 + 12)[0] if p[0] == CAPSULE_RESP else struct.unpack_from("<H", p, 8)[0]

    def finish(self, cid, write=b""):
        """Answer R2Ts from `write` and collect data until the response:
        (status, dw0, data, r2ts seen)."""
        data, r2ts = bytearray(), 0
        while True:
            p = self.next_for(cid)
            if p[0] == R2T:
                r2ts += 1
                self.send_data(p, write)
            elif p[0] == C2H_DATA:
                _, off, n = struct.unpack_from("<HxxII", p, 8)
                data[off:off + n] = p[p[3]:p[3] + n]
                if p[1] & 0x08:
                    return 0, 0, bytes(data), r2ts
            elif p[0] == CAPSULE_RESP:
                dw0, _, _, _, _, st = struct.unpack_from("<IIHHHH", p, 8)
                return st >> 1, dw0, bytes(data), r2ts

    def send_data(self, r2t, write):
        cccid, ttag, off, length = struct.unpack_from("<HHII", r2t, 8)
        step = self.maxh2cdata or length
        for at in range(off, off + length, step):
            n = min(step, off + length - at)
            self._send(h2c(cccid, ttag, at, write[at:at + n], last=at + n == off + length))

    def command(self, s, write=b"", in_capsule=False, length=None):
        cid = self.send(s, write, in_capsule, length)
        st, dw0, data, _ = self.finish(cid, write)
        return st, dw0, data

    def connect(self, subnqn, hostnqn, hostid=bytes(range(16)), qid=0, cntlid=0xFFFF, kato=0):
        d = bytearray(1024)
        d[0:16] = hostid
        struct.pack_into("<H", d, 16, cntlid)
        d[256:256 + len(subnqn)] = subnqn
        d[512:512 + len(hostnqn)] = hostnqn
        self.subnqn, self.hostnqn = subnqn, hostnqn
        st, dw0, _ = self.command(sqe(0x7F, 0, fctype=1, tail=struct.pack("<HHHBxI", 0, qid, 31, 0, kato)), bytes(d), True)
        return st, dw0

    def prop_set(self, off, value):
        return self.command(sqe(0x7F, 0, fctype=0, tail=struct.pack("<B3xIQ", 0, off, value)))[0]

    def enable(self):
        return self.prop_set(0x14, 0x460001)  # CC: IOCQES 4, IOSQES 6, EN

    def authenticate(self, key):
        """DH-HMAC-CHAP, SHA-256, null group; True on success."""
        def send(msg):
            return self.command(sqe(0x7F, 0, sgl_len=len(msg), fctype=0x05,
                                    tail=struct.pack("<BBBBI", 0, 1, 1, 0xE9, len(msg))), msg, True)[0]

        def receive():
            return self.command(sqe(0x7F, 0, fctype=0x06, tail=struct.pack("<BBBBI", 0, 1, 1, 0xE9, 4096)), length=4096)[2]
        desc = bytearray(64)
        desc[0], desc[2], desc[3], desc[4], desc[34] = 1, 1, 1, 1, 0
        send(struct.pack("<BBHHBB", 0, 0, 0, 1, 0, 1) + bytes(desc))
        ch = receive()
        if not ch or ch[1] != 0x01:
            return False
        c1, s1 = ch[16:48], struct.unpack_from("<I", ch, 12)[0]
        msg = c1 + struct.pack("<IH", s1, 1) + b"\x00" + b"HostHost" + self.hostnqn + b"\x00" + self.subnqn
        resp = hmac.new(key, msg, hashlib.sha256).digest()
        send(struct.pack("<BBHHBBBBHI", 1, 2, 0, 1, 32, 0, 0, 0, 0, 1) + resp + bytes(32))
        ok = receive()
        return bool(ok) and ok[1] == 0x03

    def close(self):
        self.s.close()


def lba_bytes(admin, nsid=1):
    """The namespace's LBA size from Identify Namespace: nvmet serves a
    file with its filesystem's block (often 4096), mpnvme-target 512."""
    st, _, ns = admin.command(sqe(0x06, 0, nsid=nsid, cdw10=0), length=4096)
    if st:
        raise RuntimeError(f"Identify Namespace {nsid}: status {st:#x}")
    return 1 << ns[128 + 4 * (ns[26] & 0x0F) + 2]


def rw(opcode, slba, nlb, nsid=1):
    return sqe(opcode, 0, nsid=nsid, cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32, cdw12=nlb - 1)


def write_sqe(slba, nlb, nsid=1):
    return rw(0x01, slba, nlb, nsid)


def read_sqe(slba, nlb, nsid=1):
    return rw(0x02, slba, nlb, nsid)


def resv(opcode, cdw10, nsid=1):
    """Reservation Register (0x0D), Acquire (0x11) or Release (0x15)."""
    return sqe(opcode, 0, nsid=nsid, cdw10=cdw10)


def keys(*k):
    return b"".join(struct.pack("<Q", x) for x in k)


def control(path, line):
    """One command to mpnvme-target's control socket; its reply."""
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(30)
    c.connect(path)
    c.sendall(line.encode() + b"\n")
    c.shutdown(socket.SHUT_WR)
    out = b""
    while chunk := c.recv(4096):
        out += chunk
    c.close()
    return out.decode()
