# SPDX-License-Identifier: GPL-2.0-only
"""NVMe/TCP PDU builders for test scripts (fuzz seeds, hostile clients).
Host side: capsules with or without in-capsule data, H2CData, ICReq, the
fabrics Connect, with optional (and optionally corrupted) digests.
Controller side: C2HData, responses and R2Ts, for the host fuzzer's seeds."""
import struct

SUBNQN_FUZZ = b"nqn.2026-11.io.mpnvme:fuzz"
TEST_HOST = b"nqn.2014-08.org.nvmexpress:uuid:6d6a5f0e-5b27-4e57-8d59-0a1f7c6f0001"


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def icreq(hd=False, dd=False):
    return struct.pack("<BBBBIHBBI", 0, 0, 128, 0, 128, 0, 0, (1 if hd else 0) | (2 if dd else 0), 0) + bytes(112)


def sqe(opcode, cid, nsid=1, sgl_len=0, sgl_type=0x5A, fctype=None, cdw10=0, cdw11=0, cdw12=0, tail=b""):
    """A 64-byte SQE with an SGL; `tail` overwrites bytes from offset 40."""
    b = bytearray(64)
    b[0], b[1] = opcode, 0x40
    struct.pack_into("<H", b, 2, cid)
    if fctype is None:
        struct.pack_into("<I", b, 4, nsid)
    else:
        b[4] = fctype
    struct.pack_into("<QIxxxB", b, 24, 0, sgl_len, sgl_type)
    struct.pack_into("<III", b, 40, cdw10, cdw11, cdw12)
    b[40:40 + len(tail)] = tail
    return bytes(b)


def capsule(s, data=b"", hd=False, dd=False, corrupt_hdgst=False, corrupt_ddgst=False):
    if data:
        s = s[:24] + struct.pack("<QIxxxB", 0, len(data), 0x01) + s[40:]
    hdl = 4 if hd else 0
    ddl = 4 if dd and data else 0
    flags = (1 if hd else 0) | (2 if ddl else 0)
    h = struct.pack("<BBBBI", 4, flags, 72, 72 + hdl if data else 0, 72 + hdl + len(data) + ddl) + s
    out = h + (struct.pack("<I", crc32c(h) ^ (1 if corrupt_hdgst else 0)) if hd else b"")
    if data:
        out += data + (struct.pack("<I", crc32c(data) ^ (1 if corrupt_ddgst else 0)) if ddl else b"")
    return out


def h2c(cid, ttag, off, data, last=True, dg=False, corrupt_ddgst=False):
    hd = 4 if dg else 0
    flags = (3 if dg else 0) | (4 if last else 0)
    h = struct.pack("<BBBBIHHII4x", 6, flags, 24, 24 + hd, 24 + hd + len(data) + (4 if dg else 0), cid, ttag, off, len(data))
    ddgst = struct.pack("<I", crc32c(data) ^ (1 if corrupt_ddgst else 0)) if dg else b""
    return h + (struct.pack("<I", crc32c(h)) if dg else b"") + data + ddgst


def connect(subnqn, qid=0, cntlid=0xFFFF, host=TEST_HOST, sqsize=31, cattr=0, kato=0, **kw):
    data = bytearray(1024)
    struct.pack_into("<H", data, 16, cntlid)
    data[256:256 + len(subnqn)] = subnqn
    data[512:512 + len(host)] = host
    return capsule(sqe(0x7F, 0x10, fctype=1, tail=struct.pack("<HHHBxI", 0, qid, sqsize, cattr, kato)), bytes(data), **kw)


def _hdr(ptype, flags, hlen, body, data=b"", dg=False):
    """A controller-to-host PDU: header, header digest, data, data digest."""
    hd = 4 if dg else 0
    dd = 4 if dg and data else 0
    flags |= (1 if dg else 0) | (2 if dd else 0)
    pdo = hlen + hd if data else 0
    h = struct.pack("<BBBBI", ptype, flags, hlen, pdo, hlen + hd + len(data) + dd) + body
    out = h + (struct.pack("<I", crc32c(h)) if dg else b"")
    return out + data + (struct.pack("<I", crc32c(data)) if dd else b"")


def c2h(cid, off, data, last=True, success=False, dg=False):
    return _hdr(7, (4 if last else 0) | (8 if success else 0), 24, struct.pack("<HHII4x", cid, 0, off, len(data)), data, dg)


def resp(cid, status=0, dg=False):
    return _hdr(5, 0, 24, struct.pack("<IIHHHH", 0, 0, 0, 1, cid, status << 1), b"", dg)


def r2t(cid, ttag, off, length, dg=False):
    return _hdr(9, 0, 24, struct.pack("<HHII4x", cid, ttag, off, length), b"", dg)


def write_seeds(out, seeds):
    """Write a fuzzer's seed corpus: one file per name in OUTDIR."""
    import os
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
