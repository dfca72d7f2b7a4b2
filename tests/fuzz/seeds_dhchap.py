#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Seed corpus for fuzz_dhchap: well-formed controller messages (a
challenge for each hash with the null group and with ffdhe2048, Success1
with and without a response, with the controller's right response to the
fuzz build's known challenge, AUTH_Failure1) in the harness's framing;
and for secure channel concatenation, a challenge with ffdhe2048 for the
host, and AUTH_Negotiate with each SC_C value for the controller side.
Usage: seeds_dhchap.py OUTDIR"""
import hashlib
import hmac
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


# The fuzz build's random bytes are all 0x5a (lib/crypto/dhchap_crypto.cpp): the
# host's C2 and sequence number are known, so a Success1 can carry the
# controller's right response and the fuzzer gets past its check.
KEY = bytes(range(32))  # the harness's DHHC-1:00 secret, for both roles
HOSTNQN, SUBNQN = b"nqn.2014-08.org.nvmexpress:uuid:fuzz", b"nqn.fuzz:sub"
HASHES = {1: hashlib.sha256, 2: hashlib.sha384, 3: hashlib.sha512}


def ctrl_response(hashid, t_id=1):
    hl = HASH_LEN[hashid]
    msg = b"\x5a" * hl + b"\x5a" * 4 + struct.pack("<H", t_id) + b"\x00" + b"Controller" + SUBNQN + b"\x00" + HOSTNQN
    return hmac.new(KEY, msg, HASHES[hashid]).digest()


seeds = {}
for h in (1, 2, 3):
    seeds[f"null-{h}"] = frame(0, challenge(h, 0), success1(HASH_LEN[h]))
    seeds[f"bidi-{h}"] = frame(1, challenge(h, 0), success1(HASH_LEN[h], b"\x5a" * HASH_LEN[h]))
for h in (1, 2, 3):
    seeds[f"bidi-right-{h}"] = frame(1, challenge(h, 0), success1(HASH_LEN[h], ctrl_response(h)))
seeds["ffdhe2048"] = frame(0, challenge(1, 1, b"\x02" + b"\x00" * 254 + b"\x05"), success1(32))
seeds["failure1"] = frame(2, struct.pack("<BBHHBB", 0, 0xF1, 0, 1, 1, 1), b"")


def negotiate(sc_c, hashes=(1, 2, 3), groups=(0, 1, 2)):
    ids = bytes(hashes) + bytes(30 - len(hashes)) + bytes(groups) + bytes(30 - len(groups))
    return struct.pack("<BBHBB", 0, 0, 1, sc_c, 1) + struct.pack("<BBBB", 1, 0, len(hashes), len(groups)) + ids


# Concatenation: the host asks for NEWTLSPSK (flag 4) and gets a real
# group; the controller side (flags 8, 16, 32: admin queue, TLS active,
# TLS offered) reads the same bytes as AUTH_Negotiate with SC_C 0..3.
seeds["concat-host-ffdhe2048"] = frame(4, challenge(1, 1, b"\x02" + b"\x00" * 254 + b"\x05"), success1(32))
for sc_c in range(4):
    for policy in (8 | 32, 8 | 16 | 32, 32):
        seeds[f"concat-ctrl-{sc_c}-{policy}"] = frame(policy, negotiate(sc_c), b"")
write_seeds(sys.argv[1], seeds)
