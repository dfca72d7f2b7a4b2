#!/usr/bin/env python3
"""Seed corpus for fuzz_target_pdus: valid NVMe/TCP sessions for the fuzzer
to mutate (capsules with and without in-capsule data, R2T-driven writes
answered with H2CData, reads, trims, flushes, admin commands; with and
without digests). Usage: seeds.py OUTDIR"""
import os
import struct
import sys

def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF

def sqe(opcode, cid, nsid=1, cdw10=0, cdw11=0, cdw12=0, sgl_len=0, sgl_type=0x5A, fctype=None, extra=None):
    b = bytearray(64)
    b[0], b[1] = opcode, 0x40
    struct.pack_into("<H", b, 2, cid)
    if fctype is None:
        struct.pack_into("<I", b, 4, nsid)
    else:
        b[4] = fctype
    struct.pack_into("<QIxxxB", b, 24, 0, sgl_len, sgl_type)
    struct.pack_into("<III", b, 40, cdw10, cdw11, cdw12)
    if extra:
        for off, val in extra:
            b[off:off + len(val)] = val
    return bytes(b)

def capsule(s, data=b"", dg=False):
    hlen, hd = 72, 4 if dg else 0
    if data:
        s = s[:24] + struct.pack("<QIxxxB", 0, len(data), 0x01) + s[40:]
    pdo = hlen + hd if data else 0
    plen = hlen + hd + len(data) + (4 if dg and data else 0)
    flags = (1 if dg else 0) | (2 if dg and data else 0)
    h = struct.pack("<BBBBI", 4, flags, hlen, pdo, plen) + s
    out = h + (struct.pack("<I", crc32c(h)) if dg else b"")
    if data:
        out += data + (struct.pack("<I", crc32c(data)) if dg else b"")
    return out

def h2c(cid, ttag, off, data, last=True, dg=False):
    hd = 4 if dg else 0
    flags = (1 if dg else 0) | (2 if dg else 0) | (4 if last else 0)
    h = struct.pack("<BBBBIHHII4x", 6, flags, 24, 24 + hd, 24 + hd + len(data) + (4 if dg else 0), cid, ttag, off, len(data))
    return h + (struct.pack("<I", crc32c(h)) if dg else b"") + data + (struct.pack("<I", crc32c(data)) if dg else b"")

def connect(qid, cntlid, dg=False):
    data = bytearray(1024)
    struct.pack_into("<H", data, 16, cntlid)
    data[256:256 + 26] = b"nqn.2026-11.io.mpnvme:fuzz"
    host = b"nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000001"
    data[512:512 + len(host)] = host
    s = sqe(0x7F, 0x10, fctype=0x01, extra=[(40, struct.pack("<HHHB", 0, qid, 31, 4))])
    return capsule(s, bytes(data), dg)

def icreq():
    return struct.pack("<BBBBIHBBI", 0, 0, 128, 0, 128, 0, 0, 0, 0) + bytes(112)

def rw(op, cid, slba, nlb, lba=512, nsid=1):
    return sqe(op, cid, nsid, slba & 0xFFFFFFFF, slba >> 32, nlb - 1, nlb * lba)

def io_session(dg):
    p = connect(1, 1, dg) if dg else b""
    p += capsule(rw(0x01, 1, 0, 8), b"\xa5" * 4096, dg)          # in-capsule write
    p += capsule(rw(0x01, 2, 16, 64), b"", dg)                     # write via R2T (ttag 0: first free slot)
    p += h2c(2, 0, 0, b"\x5a" * 8192, False, dg) + h2c(2, 0, 8192, b"\x5b" * 8192, False, dg)
    p += h2c(2, 0, 16384, b"\x5c" * 8192, False, dg) + h2c(2, 0, 24576, b"\x5d" * 8192, True, dg)
    p += capsule(rw(0x02, 3, 0, 8), b"", dg)                       # read
    p += capsule(rw(0x02, 4, 0, 1, 4096, 2), b"", dg)              # read from the null namespace
    rng = struct.pack("<IIQ", 0, 8, 0)
    p += capsule(sqe(0x09, 5, 1, 0, 4, 0), rng, dg)                # DSM deallocate, in-capsule range
    p += capsule(rw(0x08, 6, 8, 8), b"", dg)                       # write zeroes
    p += capsule(sqe(0x00, 7), b"", dg)                            # flush
    return p

def admin_session():
    p = icreq() + connect(0, 0xFFFF)
    p += capsule(sqe(0x7F, 1, fctype=0x04, extra=[(44, struct.pack("<I", 0))]))                # property get CAP
    p += capsule(sqe(0x7F, 2, fctype=0x00, extra=[(44, struct.pack("<IQ", 0x14, 0x460001))]))  # CC.EN
    for cid, cns in ((3, 1), (4, 0), (5, 2), (6, 3)):
        p += capsule(sqe(0x06, cid, 1, cns, sgl_len=4096))
    p += capsule(sqe(0x02, 7, 0, (1023 << 16) | 0x0C, sgl_len=4096))                         # ANA log
    p += capsule(sqe(0x09, 8, 0, 0x07, 3))                                                     # number of queues
    p += capsule(sqe(0x0C, 9, 0)) + capsule(sqe(0x18, 10, 0))                                  # AER, keep alive
    return p

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
seeds = {
    "io-plain": b"\x01\x7f" + io_session(False),
    "io-digests": b"\x03\x7f" + io_session(True),
    "io-small-chunks": b"\x01\x07" + io_session(False),
    "admin": b"\x00\xff" + admin_session(),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
