#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Seed corpus for fuzz_target_pdus: valid NVMe/TCP sessions for the fuzzer
to mutate (capsules with and without in-capsule data, R2T-driven writes
answered with H2CData, reads, trims, flushes, admin commands; with and
without digests). Usage: seeds.py OUTDIR"""
import os
import struct
import sys

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

write_seeds(sys.argv[1], {
    "io-plain": b"\x01\x7f" + io_session(False),
    "io-digests": b"\x03\x7f" + io_session(True),
    "io-small-chunks": b"\x01\x07" + io_session(False),
    "admin": b"\x00\xff" + admin_session(),
})
