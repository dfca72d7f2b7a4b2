#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Seed corpus for fuzz_target_pdus: valid NVMe/TCP sessions for the fuzzer
to mutate (capsules with and without in-capsule data, R2T-driven writes
answered with H2CData, reads, trims, flushes, admin commands; with and
without digests; DH-HMAC-CHAP messages of a host that must authenticate).
Usage: seeds.py OUTDIR"""
import hashlib
import hmac
import os
import struct
import sys

sys.dont_write_bytecode = True  # tests/pylib is the checkout's: no .pyc beside it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from nvmetcp import SUBNQN_FUZZ, capsule, connect, h2c, icreq, sqe, write_seeds  # noqa: E402


def rw(op, cid, slba, nlb, lba=512, nsid=1):
    return sqe(op, cid, nsid, sgl_len=nlb * lba, cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32, cdw12=nlb - 1)

def io_session(dg):
    p = connect(SUBNQN_FUZZ, 1, 1, host=b"nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000001",
                cattr=4, hd=dg, dd=dg) if dg else b""
    p += capsule(rw(0x01, 1, 0, 8), b"\xa5" * 4096, dg, dg)          # in-capsule write
    p += capsule(rw(0x01, 2, 16, 64), b"", dg, dg)                     # write via R2T (ttag 0: first free slot)
    p += h2c(2, 0, 0, b"\x5a" * 8192, False, dg) + h2c(2, 0, 8192, b"\x5b" * 8192, False, dg)
    p += h2c(2, 0, 16384, b"\x5c" * 8192, False, dg) + h2c(2, 0, 24576, b"\x5d" * 8192, True, dg)
    p += capsule(rw(0x02, 3, 0, 8), b"", dg, dg)                       # read
    p += capsule(rw(0x02, 4, 0, 1, 4096, 2), b"", dg, dg)              # read from the null namespace
    rng = struct.pack("<IIQ", 0, 8, 0)
    p += capsule(sqe(0x09, 5, 1, cdw11=4), rng, dg, dg)                # DSM deallocate, in-capsule range
    p += capsule(rw(0x08, 6, 8, 8), b"", dg, dg)                       # write zeroes
    p += capsule(sqe(0x00, 7), b"", dg, dg)                            # flush
    return p

def admin_session():
    p = icreq() + connect(SUBNQN_FUZZ)
    p += capsule(sqe(0x7F, 1, fctype=0x04, tail=struct.pack("<4xI", 0)))                # property get CAP
    p += capsule(sqe(0x7F, 2, fctype=0x00, tail=struct.pack("<4xIQ", 0x14, 0x460001)))  # CC.EN
    for cid, cns in ((3, 1), (4, 0), (5, 2), (6, 3)):
        p += capsule(sqe(0x06, cid, 1, sgl_len=4096, cdw10=cns))
    p += capsule(sqe(0x02, 7, 0, sgl_len=4096, cdw10=(1023 << 16) | 0x0C))            # ANA log
    p += capsule(sqe(0x09, 8, 0, cdw10=0x07, cdw11=3))                                  # number of queues
    p += capsule(sqe(0x0C, 9, 0)) + capsule(sqe(0x18, 10, 0))                           # AER, keep alive
    return p

AUTH_HOST = b"nqn.2026-12.io.mpnvme:fuzz-auth"


def auth_send(cid, msg):
    return capsule(sqe(0x7F, cid, sgl_len=len(msg), fctype=0x05, tail=struct.pack("<BBBBI", 0, 1, 1, 0xE9, len(msg))), msg)


def auth_receive(cid, al=4096):
    return capsule(sqe(0x7F, cid, sgl_len=al, fctype=0x06, tail=struct.pack("<BBBBI", 0, 1, 1, 0xE9, al)))


def auth_session(group):
    """A host that must authenticate: AUTH_Negotiate (SHA-256, the group),
    the challenge fetched, a reply (whose response is wrong: the fuzzer
    cannot compute one), the failure fetched."""
    desc = bytearray(64)
    desc[0], desc[2], desc[3], desc[4], desc[34] = 1, 1, 1, 1, group
    negotiate = struct.pack("<BBHHBB", 0, 0, 0, 7, 0, 1) + bytes(desc)
    dhv = b"\x02" + b"\x00" * 254 + b"\x05" if group else b""
    reply = struct.pack("<BBHHBBBBHI", 1, 2, 0, 7, 32, 0, 1, 0, len(dhv), 9) + b"\x11" * 32 + b"\x22" * 32 + dhv
    p = icreq() + connect(SUBNQN_FUZZ, host=AUTH_HOST)
    p += auth_send(1, negotiate) + auth_receive(2) + auth_send(3, reply) + auth_receive(4)
    p += capsule(sqe(0x7F, 5, fctype=0x04, tail=struct.pack("<4xI", 0)))  # Property Get before authentication: refused
    return p


def auth_success_session():
    """A host that authenticates, bidirectionally, with the right response:
    the fuzz build's challenge is known (all 0x5a bytes, sequence number
    0x5a5a5a5a). Then the admin commands an authenticated queue takes."""
    desc = bytearray(64)
    desc[0], desc[2], desc[3], desc[4], desc[34] = 1, 1, 1, 1, 0
    negotiate = struct.pack("<BBHHBB", 0, 0, 0, 7, 0, 1) + bytes(desc)
    key = bytes(range(32))  # the registry's DHHC-1:00 key for AUTH_HOST, as host and controller key
    c1 = b"\x5a" * 32
    msg = c1 + b"\x5a" * 4 + struct.pack("<H", 7) + b"\x00" + b"HostHost" + AUTH_HOST + b"\x00" + SUBNQN_FUZZ
    response = hmac.new(key, msg, hashlib.sha256).digest()
    reply = struct.pack("<BBHHBBBBHI", 1, 2, 0, 7, 32, 0, 1, 0, 0, 9) + response + b"\x33" * 32
    success2 = struct.pack("<BBHH", 1, 4, 0, 7) + bytes(10)
    p = icreq() + connect(SUBNQN_FUZZ, host=AUTH_HOST)
    p += auth_send(1, negotiate) + auth_receive(2) + auth_send(3, reply) + auth_receive(4) + auth_send(5, success2)
    p += capsule(sqe(0x7F, 6, fctype=0x04, tail=struct.pack("<4xI", 0)))                # property get CAP: allowed now
    p += capsule(sqe(0x7F, 7, fctype=0x00, tail=struct.pack("<4xIQ", 0x14, 0x460001)))  # CC.EN
    p += capsule(sqe(0x06, 8, 1, sgl_len=4096, cdw10=1))                                 # Identify controller
    p += auth_send(9, negotiate) + auth_receive(10, 16)                                  # again: re-authentication, a short receive
    return p


write_seeds(sys.argv[1], {
    "auth-success": b"\x00\xff" + auth_success_session(),
    "auth-null": b"\x00\xff" + auth_session(0),
    "auth-ffdhe2048": b"\x00\xff" + auth_session(1),
    "io-plain": b"\x01\x7f" + io_session(False),
    "io-digests": b"\x03\x7f" + io_session(True),
    "io-small-chunks": b"\x01\x07" + io_session(False),
    "admin": b"\x00\xff" + admin_session(),
})
