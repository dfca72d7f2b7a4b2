#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Seed corpus for fuzz_tls_server: TLS 1.3 ClientHellos with PSK
identities as openssl s_client sends them (captured on loopback), for the
harness's host and subsystem: a version 1 identity with the right digest,
a version 0 one, one with NQNs too long for the PSK derivation, a
generated PSK, an unknown host, text that is no NVMe identity; and a
plaintext ICReq.
Usage: seeds_tls.py OUTDIR"""
import base64
import hashlib
import hmac
import os
import socket
import struct
import subprocess
import sys

sys.dont_write_bytecode = True  # tests/pylib is the checkout's: no .pyc beside it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from nvmetcp import icreq, write_seeds  # noqa: E402

HOST, SUB = b"nqn.2014-08.org.nvmexpress:uuid:fuzz", b"nqn.2026-11.io.mpnvme:fuzz"
KEY = bytes(range(32))  # fuzz_tls_server.cpp's configured PSK


def expand_label(secret, label, context, length=32):
    """HKDF-Expand-Label over HKDF-Extract(0, secret), SHA-256 (RFC 8446)."""
    prk = hmac.new(b"\0" * 32, secret, hashlib.sha256).digest()
    full = b"tls13 " + label
    info = struct.pack(">H", length) + bytes([len(full)]) + full + bytes([len(context)]) + context
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()[:length]


def digest():
    retained = expand_label(KEY, b"HostNQN", HOST)
    return base64.b64encode(hmac.new(retained, HOST + b" " + SUB + b" NVMe-over-Fabrics", hashlib.sha256).digest())


def client_hello(identity):
    """The first flight openssl s_client sends offering `identity`."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    cli = subprocess.Popen(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-tls1_3", "-psk_identity",
                            identity.decode(), "-psk", "00" * 32, "-ciphersuites", "TLS_AES_128_GCM_SHA256"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        srv.settimeout(10)
        conn, _ = srv.accept()
        conn.settimeout(10)
        data = b""
        while len(data) < 5 or len(data) < 5 + struct.unpack(">H", data[3:5])[0]:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        conn.close()
        return data
    finally:
        cli.kill()
        cli.wait()
        srv.close()


identities = {
    "v1-right-digest": b"NVMe1R01 " + HOST + b" " + SUB + b" " + digest(),
    "v0": b"NVMe0R01 " + HOST + b" " + SUB,
    "v0-long-nqns": b"NVMe0R01 nqn.2014-08.org.nvmexpress:" + b"h" * 100 + b" nqn.2026-11.io.mpnvme:" + b"s" * 160,
    "generated": b"NVMe0G01 " + HOST + b" " + SUB,
    "unknown-host": b"NVMe0R01 nqn.2014-08.org.nvmexpress:uuid:someone-else " + SUB,
    "not-nvme": b"client_identity",
}
seeds = {name: client_hello(i) for name, i in identities.items()}
seeds["plaintext-icreq"] = icreq()
write_seeds(sys.argv[1], seeds)
