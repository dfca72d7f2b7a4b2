#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Test vectors for secure channel concatenation, from tests/pylib/concat_kdf.py
# (the specification's formulas with Python's hmac and hashlib, no code of
# mpnvme's): test_secure_concat.cpp checks lib/ against the output. Print
# them with: python3 tests/unit/vectors/secure_concat.py
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pylib"))
from concat_kdf import HASHES, derive  # noqa: E402

HOST = "nqn.2014-08.org.nvmexpress:uuid:0f01fb42-9f7f-4856-b0b3-51e60b8de349"
SUBSYS = "blktests-subsystem-1"

for hash_id, h in HASHES.items():
    n = hashlib.new(h).digest_size
    ks = bytes((7 * i + 1) & 0xFF for i in range(256))  # a 2048-bit group's shared secret size
    c1 = bytes((i + 0x10) & 0xFF for i in range(n))
    c2 = bytes((0xF0 - i) & 0xFF for i in range(n))
    psk, identity, tls = derive(hash_id, ks, c1, c2, HOST, SUBSYS)
    print(f"{h}: generated {psk.hex()}")
    print(f"{h}: identity {identity}")
    print(f"{h}: tls {tls.hex()}")
