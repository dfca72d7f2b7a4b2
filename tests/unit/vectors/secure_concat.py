#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Test vectors for secure channel concatenation, computed from the
# specification's formulas with Python's own hmac and hashlib (no code of
# mpnvme's, no OpenSSL KDF): test_secure_concat.cpp checks lib/ against the
# output. Print them with: python3 tests/unit/vectors/secure_concat.py
#   generated PSK  HMAC_H(KS, C1 || C2)
#   digest         base64(HMAC_H(PSK, NQNh || " " || NQNc || " NVMe-over-Fabrics"))
#   identity       "NVMe1G<hh> NQNh NQNc digest"
#   TLS PSK        HKDF-Expand-Label(HKDF-Extract(0^L, PSK), "nvme-tls-psk", "<hh> digest", L)
import base64
import hashlib
import hmac

HOST = "nqn.2014-08.org.nvmexpress:uuid:0f01fb42-9f7f-4856-b0b3-51e60b8de349"
SUBSYS = "blktests-subsystem-1"


def hkdf_expand_label(h, prk, label, context, length):
    full = b"tls13 " + label
    info = length.to_bytes(2, "big") + bytes([len(full)]) + full + bytes([len(context)]) + context
    out, block, i = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([i]), h).digest()
        out += block
        i += 1
    return out[:length]


def vector(hash_id, h, ks, c1, c2):
    n = hashlib.new(h).digest_size
    psk = hmac.new(ks, c1 + c2, h).digest()
    digest = base64.b64encode(hmac.new(psk, f"{HOST} {SUBSYS} NVMe-over-Fabrics".encode(), h).digest()).decode()
    prk = hmac.new(bytes(n), psk, h).digest()
    tls = hkdf_expand_label(h, prk, b"nvme-tls-psk", f"{hash_id:02d} {digest}".encode(), n)
    return psk, f"NVMe1G{hash_id:02d} {HOST} {SUBSYS} {digest}", tls


for hash_id, h in ((1, "sha256"), (2, "sha384")):
    n = hashlib.new(h).digest_size
    ks = bytes((7 * i + 1) & 0xFF for i in range(256))  # a 2048-bit group's shared secret size
    c1 = bytes((i + 0x10) & 0xFF for i in range(n))
    c2 = bytes((0xF0 - i) & 0xFF for i in range(n))
    psk, identity, tls = vector(hash_id, h, ks, c1, c2)
    print(f"{h}: generated {psk.hex()}")
    print(f"{h}: identity {identity}")
    print(f"{h}: tls {tls.hex()}")
