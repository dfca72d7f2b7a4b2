#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Seed corpus for fuzz_host_queue: what a well-behaved controller sends to
the harness's five commands (cids 0x1000..0x1004 in submission order):
C2HData with and without the SUCCESS flag, responses, an R2T for the 64 KiB
write; with and without digests, in large and small chunks.
Usage: seeds_host.py OUTDIR"""
import os
import sys

sys.dont_write_bytecode = True  # tests/pylib is the checkout's: no .pyc beside it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from nvmetcp import c2h, r2t, resp, write_seeds  # noqa: E402


def session(dg):
    p = c2h(0x1000, 0, b"\x11" * 4096, last=False, dg=dg) + c2h(0x1000, 4096, b"\x22" * 4096, success=True, dg=dg)
    p += resp(0x1001, dg=dg)
    p += r2t(0x1002, 7, 0, 65536, dg=dg) + resp(0x1002, dg=dg)
    p += resp(0x1003, dg=dg)
    p += c2h(0x1004, 0, b"\x33" * 512, dg=dg) + resp(0x1004, dg=dg)
    p += resp(0x1004, status=0x0280, dg=dg)  # a stale cid: the queue must refuse it
    return p


write_seeds(sys.argv[1], {
    "plain": b"\x00\xff" + session(False),
    "digests": b"\x03\xff" + session(True),
    "small-chunks": b"\x00\x05" + session(False),
})
