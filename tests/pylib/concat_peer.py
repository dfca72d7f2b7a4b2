# SPDX-License-Identifier: GPL-2.0-only
"""A raw NVMe/TCP host for secure channel concatenation tests, written from
the specification with Python's hmac and hashlib (none of mpnvme's code):
DH-HMAC-CHAP with SC_C over ffdhe2048, the generated PSK, its identity and
TLS PSK, and TLS 1.3 with that PSK through `openssl s_client`. It lets a
test do what the engine never does (finish a transaction with an old key,
ask for REPLACETLSPSK, offer any identity)."""
import base64
import hashlib
import hmac
import os
import select
import socket
import struct
import subprocess

from concat_kdf import derive
from nvmetcp import capsule, connect, icreq, sqe

# RFC 7919 ffdhe2048, generator 2.
FFDHE2048 = int(
    "FFFFFFFFFFFFFFFFADF85458A2BB4A9AAFDC5620273D3CF1D8B9C583CE2D3695A9E13641146433FBCC939DCE249B3EF97D2FE363630C75D8F6"
    "81B202AEC4617AD3DF1ED5D5FD65612433F51F5F066ED0856365553DED1AF3B557135E7F57C935984F0C70E0E68B77E2A689DAF3EFE8721DF158"
    "A136ADE73530ACCA4F483A797ABC0AB182B324FB61D108A94BB2C8E3FBB96ADAB760D7F4681D4F42A3DE394DF4AE56EDE76372BB190B07A7C8EE"
    "0A6D709E02FCE1CDF7E2ECC03404CD28342F619172FE9CE98583FF8E4F1232EEF28183C3FE3B1B4C6FAD733BB5FCBC2EC22005C58EF1837D1683"
    "B2C6F34A26C1B2EFFA886B423861285C97FFFFFFFFFFFFFFFF", 16)


def transformed(secret, hostnqn):
    """The DH-HMAC-CHAP secret (DHHC-1:NN:BASE64:) transformed with the NQN."""
    _, nn, b64, _ = secret.strip().split(":")
    raw = base64.b64decode(b64)[:-4]
    return raw if nn == "00" else hmac.new(raw, hostnqn + b"NVMe-over-Fabrics", {"01": hashlib.sha256,
                                           "02": hashlib.sha384, "03": hashlib.sha512}[nn]).digest()


class Stream:
    """A TCP socket, or TLS 1.3 on a PSK through openssl s_client."""

    def __init__(self, addr, port, identity=None, psk=None):
        self.proc = self.sock = None
        if identity is None:
            self.sock = socket.create_connection((addr, port), timeout=5)
        else:
            suite = "TLS_AES_128_GCM_SHA256" if len(psk) == 32 else "TLS_AES_256_GCM_SHA384"
            self.proc = subprocess.Popen(["openssl", "s_client", "-connect", f"{addr}:{port}", "-tls1_3", "-quiet",
                                          "-ciphersuites", suite, "-psk_identity", identity, "-psk", psk.hex(),
                                          "-no_ticket"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL)

    def send(self, b):
        try:
            if self.sock:
                self.sock.sendall(b)
            else:
                self.proc.stdin.write(b)
                self.proc.stdin.flush()
            return True
        except OSError:
            return False

    def recv(self, n):
        if self.sock:
            try:
                return self.sock.recv(n)
            except OSError:
                return b""
        fd = self.proc.stdout.fileno()
        return os.read(fd, n) if select.select([fd], [], [], 5)[0] else b""

    def close(self):
        if self.sock:
            self.sock.close()
        else:
            try:
                self.proc.stdin.close()
                self.proc.wait(3)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


class Queue:
    """One queue: ICReq, Connect, Authentication Send/Receive, Property Get."""

    def __init__(self, stream, hostnqn, subnqn):
        self.st, self.hostnqn, self.subnqn, self.cid = stream, hostnqn, subnqn, 1

    def _exact(self, n):
        d = b""
        while len(d) < n:
            c = self.st.recv(n - len(d))
            if not c:
                return None
            d += c
        return d

    def _pdu(self):
        h = self._exact(8)
        rest = None if h is None else self._exact(struct.unpack_from("<I", h, 4)[0] - 8)
        return None if rest is None else (h[0], h + rest)

    def command(self, payload):
        """(status, dw0, data); status None when the connection ended."""
        if not self.st.send(payload):
            return None, None, b""
        data = b""
        while True:
            p = self._pdu()
            if p is None:
                return None, None, data
            if p[0] == 7:  # C2HData
                data += p[1][p[1][3]:]
            elif p[0] == 5:  # response
                return struct.unpack_from("<H", p[1], 22)[0] >> 1, struct.unpack_from("<I", p[1], 8)[0], data

    def connect(self, qid=0, cntlid=0xFFFF, kato=0):
        if not self.st.send(icreq()) or self._pdu() is None:
            return None, None
        st, dw0, _ = self.command(connect(self.subnqn, qid=qid, cntlid=cntlid, host=self.hostnqn, kato=kato))
        return st, dw0

    def _cid(self):
        self.cid += 1
        return self.cid

    def auth_send(self, msg):
        return self.command(capsule(sqe(0x7F, self._cid(), sgl_len=len(msg), fctype=0x05,
                                        tail=struct.pack("<BBBBI", 0, 1, 1, 0xE9, len(msg))), msg))

    def auth_receive(self, al=4096):
        return self.command(capsule(sqe(0x7F, self._cid(), sgl_len=al, fctype=0x06,
                                        tail=struct.pack("<BBBBI", 0, 1, 1, 0xE9, al))))

    def property_get(self, off=0):
        return self.command(capsule(sqe(0x7F, self._cid(), fctype=0x04, tail=struct.pack("<4xI", off))))

    def close(self):
        self.st.close()


class Transaction:
    """The host side of DH-HMAC-CHAP on `queue` asking for SC_C `sc_c`
    (2 NEWTLSPSK, 3 REPLACETLSPSK), SHA-256 and ffdhe2048."""

    def __init__(self, queue, t_id, sc_c=2):
        self.q, self.t_id, self.sc_c = queue, t_id, sc_c

    def negotiate(self):
        d = bytearray(64)
        d[0], d[2], d[3], d[4], d[34] = 1, 1, 1, 1, 1  # DH-HMAC-CHAP, SHA-256, ffdhe2048
        self.q.auth_send(struct.pack("<BBHHBB", 0, 0, 0, self.t_id, self.sc_c, 1) + bytes(d))
        _, _, self.challenge = self.q.auth_receive()
        return bool(self.challenge) and self.challenge[1] == 0x01

    def reply(self, secret):
        """Answer the challenge with `secret`; True when Success1 came back."""
        m = self.challenge
        hl, dhvlen, s1 = m[6], struct.unpack_from("<H", m, 10)[0], struct.unpack_from("<I", m, 12)[0]
        self.c1, ctrl_dhv = m[16:16 + hl], m[16 + hl:16 + hl + dhvlen]
        x = int.from_bytes(os.urandom(32), "big") | 1
        self.ks = pow(int.from_bytes(ctrl_dhv, "big"), x, FFDHE2048).to_bytes(256, "big")
        ca = hmac.new(hashlib.sha256(self.ks).digest(), self.c1, hashlib.sha256).digest()
        resp = hmac.new(transformed(secret, self.q.hostnqn), ca + struct.pack("<IHB", s1, self.t_id, self.sc_c) + b"HostHost" +
                        self.q.hostnqn + b"\0" + self.q.subnqn, hashlib.sha256).digest()
        self.c2 = os.urandom(hl)
        mine = pow(2, x, FFDHE2048).to_bytes(256, "big")
        self.q.auth_send(struct.pack("<BBHHBBBBHI", 1, 2, 0, self.t_id, hl, 0, 1, 0, len(mine), 0) + resp + self.c2 + mine)
        _, _, m = self.q.auth_receive()
        return bool(m) and m[1] == 0x03

    def generated(self, hostnqn, subnqn):
        """The identity and the TLS PSK of this transaction's generated PSK."""
        _, identity, tls = derive(1, self.ks, self.c1, self.c2, hostnqn.decode(), subnqn.decode())
        return identity, tls
