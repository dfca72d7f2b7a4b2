#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""minihost: an NVMe/TCP host that takes only the steps NVMe over Fabrics
makes mandatory, written apart from the engine (another language, none of
its code), so that a target is checked by a third host besides the engine
and the Linux kernel.

  minihost.py ADDR PORT SUBNQN [--mptcp] [--css 0|6] [--nsid 1] [--expect-cfs]

Steps, each printed as "ok: ..." or "FAIL: ..." (exit status 1 on any
failure): ICReq; admin Connect; Property Get CAP and VS; Property Set CC
(EN with the given CC.CSS) and CSTS.RDY; Identify controller and namespace;
Get Features Number of Queues; an I/O queue Connect *without* Set Features
Number of Queues (nvmet accepts it); writes with in-capsule data and through
R2T/H2CData, reads through C2HData, compared; the MDTS rule in both
directions (when the controller reports an MDTS); CC.SHN and CSTS.SHST.
Run against the Linux kernel target it shows what the reference does."""
import argparse
import os
import socket
import struct
import sys
import time

sys.dont_write_bytecode = True  # tests/pylib is the checkout's: no .pyc beside it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import nvmetcp  # noqa: E402  (PDU builders shared with the hostile-client tests)

IPPROTO_MPTCP = 262
ICRESP, CAPSULE_RESP, C2H_DATA, R2T, C2H_TERM = 0x1, 0x5, 0x7, 0x9, 0x3
ADMIN_GET_LOG_PAGE, ADMIN_IDENTIFY, ADMIN_SET_FEATURES, ADMIN_GET_FEATURES = 0x02, 0x06, 0x09, 0x0A
ADMIN_ASYNC_EVENT = 0x0C
FEAT_ASYNC_EVENT = 0x0B
NVM_WRITE, NVM_READ = 0x01, 0x02
FEAT_NUM_QUEUES = 0x07
REG_CAP, REG_VS, REG_CC, REG_CSTS = 0x00, 0x08, 0x14, 0x1C
INVALID_FIELD = 0x0002  # generic status, Invalid Field in Command

failures = 0


def ok(msg):
    print(f"ok: {msg}", flush=True)


def fail(msg):
    global failures
    failures += 1
    print(f"FAIL: {msg}", flush=True)


def status_text(st):
    return f"sct {(st >> 8) & 7:#x} sc {st & 0xFF:#04x}{' DNR' if st & 0x4000 else ''}"


class Queue:
    """One NVMe/TCP queue: a socket, the ICReq exchange, and commands one at
    a time (the simplest host a target must serve)."""

    def __init__(self, addr, port, mptcp):
        self.s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM,
                               IPPROTO_MPTCP if mptcp else 0)
        self.s.settimeout(10)
        self.s.connect((addr, port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.s.sendall(nvmetcp.icreq())
        hdr = self.recv_pdu()
        if hdr[0] != ICRESP:
            raise RuntimeError(f"expected ICResp, got PDU type {hdr[0]:#x}")
        self.pfv, self.cpda, self.dgst, self.maxh2cdata = struct.unpack_from("<HBBI", hdr, 8)
        self.cid = 0
        self.incapsule = 0  # bytes of in-capsule data the controller takes (I/O queues)

    def recv_exact(self, n):
        b = bytearray()
        while len(b) < n:
            chunk = self.s.recv(n - len(b))
            if not chunk:
                raise RuntimeError("the controller closed the connection")
            b += chunk
        return bytes(b)

    def recv_pdu(self):
        common = self.recv_exact(8)
        plen = struct.unpack_from("<I", common, 4)[0]
        pdu = common + self.recv_exact(plen - 8)
        if pdu[0] == C2H_TERM:
            raise RuntimeError(f"C2HTermReq, FES {struct.unpack_from('<H', pdu, 8)[0]:#x}")
        return pdu

    def command(self, sqe, write=b"", read_len=0, in_capsule=None):
        """Sends one command; returns (status, dw0, dw1, data read). Data to
        write goes in the capsule when it fits the controller's in-capsule
        size (or when in_capsule says so), else after an R2T."""
        self.cid = (self.cid + 1) & 0xFFFF
        sqe = sqe[:2] + struct.pack("<H", self.cid) + sqe[4:]
        if in_capsule is None:
            in_capsule = len(write) <= self.incapsule
        if write and in_capsule:
            self.s.sendall(nvmetcp.capsule(sqe, write))
        else:
            length = len(write) or read_len
            sqe = sqe[:24] + struct.pack("<QIxxxB", 0, length, 0x5A) + sqe[40:]
            self.s.sendall(nvmetcp.capsule(sqe))
        data = bytearray(read_len)
        while True:
            pdu = self.recv_pdu()
            if pdu[0] == R2T:
                cccid, ttag, off, length = struct.unpack_from("<HHII", pdu, 8)
                for at in range(off, off + length, self.maxh2cdata):
                    n = min(self.maxh2cdata, off + length - at)
                    self.s.sendall(nvmetcp.h2c(cccid, ttag, at, write[at:at + n], last=at + n == off + length))
            elif pdu[0] == C2H_DATA:
                cccid, off, length = struct.unpack_from("<HxxII", pdu, 8)
                pdo = pdu[3]
                data[off:off + length] = pdu[pdo:pdo + length]
                if pdu[1] & 0x08:  # SUCCESS: no response capsule follows
                    return 0, 0, 0, bytes(data)
            elif pdu[0] == CAPSULE_RESP:
                dw0, dw1, _, _, cid, st = struct.unpack_from("<IIHHHH", pdu, 8)
                if cid != self.cid:
                    raise RuntimeError(f"response for cid {cid:#x}, expected {self.cid:#x}")
                return st >> 1, dw0, dw1, bytes(data)
            else:
                raise RuntimeError(f"unexpected PDU type {pdu[0]:#x}")


def fabrics(fctype, tail):
    return nvmetcp.sqe(0x7F, 0, fctype=fctype, tail=tail)


def prop_get(q, off, eight):
    st, dw0, dw1, _ = q.command(fabrics(0x04, struct.pack("<B3xI", 1 if eight else 0, off)))
    return st, dw0 | (dw1 << 32 if eight else 0)


def prop_set(q, off, value):
    return q.command(fabrics(0x00, struct.pack("<B3xIQ", 0, off, value)))[0]


def connect(q, qid, subnqn, cntlid, sqsize):
    data = bytearray(1024)
    data[0:16] = bytes(range(16))  # host identifier
    struct.pack_into("<H", data, 16, cntlid)
    data[256:256 + len(subnqn)] = subnqn
    data[512:512 + len(nvmetcp.TEST_HOST)] = nvmetcp.TEST_HOST
    sqe = fabrics(0x01, struct.pack("<HHHBxI", 0, qid, sqsize - 1, 0, 0))
    st, dw0, _, _ = q.command(sqe, bytes(data), in_capsule=True)  # as the Linux host sends it
    return st, dw0


def rw(opcode, nsid, slba, nlb):
    return nvmetcp.sqe(opcode, 0, nsid=nsid, cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32, cdw12=nlb - 1)


def run(a):
    subnqn = a.subnqn.encode()
    adm = Queue(a.addr, a.port, a.mptcp)
    ok(f"ICResp: PFV {adm.pfv}, CPDA {adm.cpda}, MAXH2CDATA {adm.maxh2cdata}")
    st, cntlid = connect(adm, 0, subnqn, 0xFFFF, 32)
    if st:
        return fail(f"admin Connect: {status_text(st)}")
    ok(f"admin Connect: controller {cntlid}")
    st, cap = prop_get(adm, REG_CAP, True)
    if st:
        return fail(f"Property Get CAP: {status_text(st)}")
    css = (cap >> 37) & 0xFF
    timeout = ((cap >> 24) & 0xFF) * 0.5 or 1.0
    ok(f"CAP {cap:#018x}: MQES {(cap & 0xFFFF) + 1}, CSS {css:#04x}, TO {timeout} s")
    if a.css == 6 and not css & (1 << 6):
        fail("CAP.CSS does not advertise I/O command sets (bit 6), yet CC.CSS 110b is to be used")
    st, vs = prop_get(adm, REG_VS, False)
    ok(f"VS {vs >> 16}.{(vs >> 8) & 0xFF}") if not st else fail(f"Property Get VS: {status_text(st)}")
    cc = 1 | (a.css << 4) | (6 << 16) | (4 << 20)  # EN, CSS, MPS 4 KiB, IOSQES 6, IOCQES 4
    st = prop_set(adm, REG_CC, cc)
    if st:
        return fail(f"Property Set CC {cc:#x}: {status_text(st)}")
    deadline = time.time() + timeout
    while True:
        st, csts = prop_get(adm, REG_CSTS, False)
        if st or csts & 2:
            if a.expect_cfs and not st:
                return ok(f"CC.EN with CSS {a.css:03b}b refused: CSTS.CFS")
            return fail(f"CC.EN with CSS {a.css:03b}b: CSTS {csts:#x} (CFS: the controller refused the configuration)")
        if csts & 1:
            if a.expect_cfs:
                return fail(f"CC.EN with CSS {a.css:03b}b accepted (CSTS.RDY), CFS expected")
            break
        if time.time() > deadline:
            return fail(f"CSTS.RDY not set within CAP.TO ({timeout} s)")
        time.sleep(0.01)
    ok(f"CC.EN with CSS {a.css:03b}b: CSTS.RDY")

    st, _, _, idc = adm.command(nvmetcp.sqe(ADMIN_IDENTIFY, 0, nsid=0, cdw10=1), read_len=4096)
    if st:
        return fail(f"Identify controller: {status_text(st)}")
    mdts = idc[77]
    ioccsz = struct.unpack_from("<I", idc, 1792)[0]
    nqn = idc[768:1024].split(b"\0")[0]
    (ok if nqn == subnqn else fail)(f"Identify controller: SUBNQN {nqn.decode()}, MDTS {mdts}, IOCCSZ {ioccsz}")
    st, _, _, idn = adm.command(nvmetcp.sqe(ADMIN_IDENTIFY, 0, nsid=a.nsid, cdw10=0), read_len=4096)
    if st:
        return fail(f"Identify namespace {a.nsid}: {status_text(st)}")
    nsze = struct.unpack_from("<Q", idn, 0)[0]
    flbas = idn[26] & 0xF
    lba = 1 << idn[128 + 4 * flbas + 2]
    if not nsze:
        return fail(f"namespace {a.nsid} is not active")
    ok(f"Identify namespace {a.nsid}: {nsze} blocks of {lba} bytes")
    if a.css == 6:
        st, _, _, _ = adm.command(nvmetcp.sqe(ADMIN_IDENTIFY, 0, nsid=0, cdw10=6, cdw11=0), read_len=4096)
        (ok if not st else fail)(f"Identify I/O command set specific controller (NVM): {status_text(st) if st else 'served'}")
    st, nq, _, _ = adm.command(nvmetcp.sqe(ADMIN_GET_FEATURES, 0, nsid=0, cdw10=FEAT_NUM_QUEUES))
    if st:
        return fail(f"Get Features Number of Queues: {status_text(st)}")
    queues = min(nq & 0xFFFF, nq >> 16) + 1
    ok(f"Get Features Number of Queues: {queues} (without a Set Features first)")

    io = Queue(a.addr, a.port, a.mptcp)
    st, _ = connect(io, 1, subnqn, cntlid, 32)
    if st:
        return fail(f"I/O queue 1 Connect without Set Features Number of Queues: {status_text(st)}")
    ok("I/O queue 1 connected without Set Features Number of Queues")
    io.incapsule = max(0, ioccsz * 16 - 64)

    blocks = [(0, bytes((i * 7 + 3) & 0xFF for i in range(lba))), (8, os.urandom(64 * 1024 - 64 * 1024 % lba))]
    for slba, data in blocks:
        how = "in-capsule" if len(data) <= io.incapsule else "R2T/H2CData"
        st = io.command(rw(NVM_WRITE, a.nsid, slba, len(data) // lba), write=data)[0]
        if st:
            fail(f"write of {len(data)} bytes ({how}): {status_text(st)}")
            continue
        st, _, _, back = io.command(rw(NVM_READ, a.nsid, slba, len(data) // lba), read_len=len(data))
        if st or back != data:
            fail(f"read back of {len(data)} bytes: {status_text(st) if st else 'data differs'}")
        else:
            ok(f"{len(data)} bytes written ({how}) and read back identical")

    if mdts:
        limit = (1 << (12 + ((cap >> 48) & 0xF))) << mdts
        nlb = limit // lba + 1
        for name, opcode, kw in (("read", NVM_READ, {"read_len": nlb * lba}), ("write", NVM_WRITE, {"write": bytes(nlb * lba)})):
            if name == "write":
                # Only the command: a controller must refuse it before asking for data.
                sqe = rw(opcode, a.nsid, 0, nlb)
                sqe = sqe[:24] + struct.pack("<QIxxxB", 0, nlb * lba, 0x5A) + sqe[40:]
                io.cid = (io.cid + 1) & 0xFFFF
                io.s.sendall(nvmetcp.capsule(sqe[:2] + struct.pack("<H", io.cid) + sqe[4:]))
                pdu = io.recv_pdu()
                st = struct.unpack_from("<H", pdu, 22)[0] >> 1 if pdu[0] == CAPSULE_RESP else -1
            else:
                st = io.command(rw(opcode, a.nsid, 0, nlb), **kw)[0]
            if st & 0x7FF == INVALID_FIELD:
                ok(f"{name} of {nlb * lba} bytes above MDTS ({limit}): Invalid Field in Command")
            else:
                fail(f"{name} above MDTS ({limit} bytes): {'an R2T, not a refusal' if st == -1 else status_text(st)}")
    else:
        ok("MDTS 0: no transfer limit to check")

    io.s.close()
    st = prop_set(adm, REG_CC, cc | (1 << 14))  # SHN: normal shutdown
    deadline = time.time() + timeout
    while not st:
        st, csts = prop_get(adm, REG_CSTS, False)
        if st or (csts >> 2) & 3 == 2 or time.time() > deadline:
            break
        time.sleep(0.01)
    (ok if not st and (csts >> 2) & 3 == 2 else fail)(f"CC.SHN: CSTS {csts:#x}")
    adm.s.close()


def discovery_log(adm):
    """The discovery log page (LID 70h): its generation counter and entries."""
    st, _, _, page = adm.command(nvmetcp.sqe(ADMIN_GET_LOG_PAGE, 0, nsid=0, cdw10=0x70 | (2047 << 16)), read_len=8192)
    if st:
        raise RuntimeError(f"Get Log Page (discovery): {status_text(st)}")
    genctr, records = struct.unpack_from("<QQ", page, 0)
    return genctr, [page[1024 * (i + 1):1024 * (i + 2)] for i in range(min(records, 7))]  # the header and seven entries


def print_entries(entries):
    text = lambda b: b.split(b"\0")[0].decode().strip()
    for e in entries:
        print(f"entry: {text(e[512:768])}:{text(e[32:64])} {text(e[256:512])} trtype {e[0]} treq {e[3]} sectype {e[768]}")


def discovery(a):
    """--discovery: the discovery controller's log page (LID 70h), one line
    per entry: address, service, subsystem, TRTYPE, TREQ and the TCP SECTYPE.
    With --wait-change, then an Asynchronous Event Request for a discovery
    log change notice, and the log again when it completes."""
    adm = Queue(a.addr, a.port, a.mptcp)
    st, _ = connect(adm, 0, a.subnqn.encode(), 0xFFFF, 32)
    if st:
        return fail(f"discovery Connect: {status_text(st)}")
    st = prop_set(adm, REG_CC, 1 | (6 << 16) | (4 << 20))
    deadline = time.time() + 5
    while not st:
        st, csts = prop_get(adm, REG_CSTS, False)
        if st or csts & 1 or time.time() > deadline:
            break
        time.sleep(0.01)
    if st:
        return fail(f"discovery controller enable: {status_text(st)}")
    genctr, entries = discovery_log(adm)
    ok(f"discovery log: {len(entries)} entries, genctr {genctr}")
    print_entries(entries)
    if a.wait_change:
        st, _, _, _ = adm.command(nvmetcp.sqe(ADMIN_SET_FEATURES, 0, nsid=0, cdw10=FEAT_ASYNC_EVENT, cdw11=1 << 31))
        if st:
            return fail(f"Set Features (discovery log change notices): {status_text(st)}")
        print("waiting for a discovery log change notice", flush=True)
        adm.s.settimeout(a.wait_change)
        st, dw0, _, _ = adm.command(nvmetcp.sqe(ADMIN_ASYNC_EVENT, 0, nsid=0))
        adm.s.settimeout(10)
        (ok if not st and dw0 == 0x70F002 else fail)(f"asynchronous event {dw0:#x} (status {st:#x}): a discovery log change notice")
        after, entries = discovery_log(adm)
        (ok if after > genctr else fail)(f"discovery log after the notice: {len(entries)} entries, genctr {after}")
        print_entries(entries)
    adm.s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("subnqn")
    ap.add_argument("--mptcp", action="store_true", help="connect over MPTCP")
    ap.add_argument("--css", type=int, choices=range(8), default=0, help="CC.CSS: 0 NVM, 6 all I/O command sets")
    ap.add_argument("--expect-cfs", action="store_true", help="the controller must refuse CC.EN with CSTS.CFS (and stop there)")
    ap.add_argument("--nsid", type=int, default=1)
    ap.add_argument("--discovery", action="store_true", help="SUBNQN is the discovery NQN: print the discovery log's entries")
    ap.add_argument("--wait-change", type=float, metavar="SECONDS",
                    help="with --discovery: then wait that long for a discovery log change notice")
    a = ap.parse_args()
    try:
        discovery(a) if a.discovery else run(a)
    except (OSError, RuntimeError) as e:
        fail(str(e))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
