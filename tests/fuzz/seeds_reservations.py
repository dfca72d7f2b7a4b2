#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Seed corpus for fuzz_reservations: blktests' nvme/054 sequence and a
preempt-and-abort between two hosts, in the harness's four-byte steps
(host and operation, CDW10's low bytes, CPTPL and the two keys' indices).
Usage: seeds_reservations.py OUTDIR"""
import os
import sys

sys.dont_write_bytecode = True  # tests/pylib is the checkout's: no .pyc beside it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from nvmetcp import write_seeds  # noqa: E402

REG, ACQ, REL = 0, 1, 2
K0, K1, KA = 0, 1, 2  # indices into the harness's keys (0, 1, 0xa)


def step(host, op, action, rtype=0, k1=K0, k2=K0):
    return bytes([host | op << 2, action, rtype, k1 | k2 << 2])


seeds = {
    "054": step(0, REG, 0, k2=KA) + step(0, REG, 2, k1=KA, k2=K1) + step(0, REG, 1, k1=K1)
    + step(0, REG, 0, k2=KA) + step(0, ACQ, 0, 1, k1=KA) + step(0, REL, 0, 1, k1=KA) + step(0, REL, 1, k1=KA),
    "preempt-abort": step(0, REG, 0, k2=KA) + step(1, REG, 0, k2=K1) + step(0, ACQ, 0, 3, k1=KA)
    + step(0, ACQ, 2, 3, k1=KA, k2=K1) + step(1, 3, 1),
    "impostor": step(0, REG, 0, k2=KA) + step(0, ACQ, 0, 1, k1=KA) + step(3, REL, 0, 1, k1=KA) + step(3, REG, 1, k1=KA),
}
write_seeds(sys.argv[1], seeds)
