#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Seed corpus for fuzz_dhchap: well-formed controller messages (a
challenge for each hash with the null group and with ffdhe2048, Success1
with and without a response, AUTH_Failure1) in the harness's framing.
Usage: seeds_dhchap.py OUTDIR"""
import os
import struct
import sys

sys.dont_write_bytecode = True  # tests/pylib is the checkout's: no .pyc beside it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from nvmetcp import write_seeds  # noqa: E402

HASH_LEN = {1: 32, 2: 48, 3: 64}


def challenge(hashid, dhgid, dhv=b""):
    hl = HASH_LEN[hashid]
    return struct.pack("<BBHHBBBBHI", 1, 1, 0, 1, hl, 0, hashid, dhgid, len(dhv), 7) + bytes(range(hl)) + dhv


def success1(hl, rval=None):
    head = struct.pack("<BBHHBBB7x", 1, 3, 0, 1, hl, 0, 1 if rval else 0)
    return head + (rval or b"")


def frame(flags, first, second):
    return bytes([flags]) + struct.pack("<H", len(first)) + first + second


seeds = {}
for h in (1, 2, 3):
    seeds[f"null-{h}"] = frame(0, challenge(h, 0), success1(HASH_LEN[h]))
    seeds[f"bidi-{h}"] = frame(1, challenge(h, 0), success1(HASH_LEN[h], b"\x5a" * HASH_LEN[h]))
seeds["ffdhe2048"] = frame(0, challenge(1, 1, b"\x02" + b"\x00" * 254 + b"\x05"), success1(32))
seeds["failure1"] = frame(2, struct.pack("<BBHHBB", 0, 0xF1, 0, 1, 1, 1), b"")
write_seeds(sys.argv[1], seeds)
