#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The target's ceilings (issue 44), each reached against a target that
ceilings.sh started with small ones (--max-controllers 3, --max-subsystems
2, --max-namespaces 2, --max-ram 64m, a 16 MiB RAM namespace in SUBNQN):
each refusal on the wire or on the control socket, its log line, and a host
connected before it all (the keeper) still reading what it wrote after each.

  ceilings.py limits ADDR SUBNQN CONTROL PID LOG
  ceilings.py connections ADDR SUBNQN KEEPER_SRC SRC1 SRC2 PER TOTAL LOG
               (a target with --max-connections-per-address PER and
               --max-connections TOTAL: the keeper, from KEEPER_SRC, is
               served while SRC1 and then SRC2 open all they may; the
               refusals themselves are admission.py's)

Every check prints "ok: ..." or "FAIL: ..."; exit status 1 on a failure."""
import os
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from verdict import check, finish  # noqa: E402
from nvmehost import DISCOVERY_NQN, Closed, Queue, code, control, read_sqe, sqe, write_sqe  # noqa: E402

CONTROLLER_BUSY = 0x181  # SCT 1 (command specific), SC 0x81
DNR = 0x4000
MAX_NSID = 0xFFFFFFFE
def host(n):
    return f"nqn.2026-12.io.mpnvme:ceiling-{n}".encode()


def status_kib(pid, field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def logged(log, text, within=5):
    """Whether the target's log holds `text`, waiting up to `within` s for it."""
    end = time.monotonic() + within
    while True:
        if text in open(log, errors="replace").read():
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.1)


class Keeper:
    """A host connected before any limit is reached: an enabled admin queue
    and an I/O queue; serves() writes a fresh pattern and reads it back."""

    def __init__(self, addr, subnqn, src=None):
        self.adm = Queue(addr, src=src)
        st, cntlid = self.adm.connect(subnqn, host("keeper"), bytes([1]) * 16, kato=60000)
        if st or self.adm.enable():
            raise RuntimeError(f"the keeper's admin queue: status {st:#x}")
        self.io = Queue(addr, src=src)
        st, _ = self.io.connect(subnqn, host("keeper"), bytes([1]) * 16, qid=1, cntlid=cntlid & 0xFFFF)
        if st:
            raise RuntimeError(f"the keeper's I/O queue: status {st:#x}")
        self.round = 0

    def serves(self):
        self.round += 1
        data = bytes([self.round & 0xFF]) * 4096
        try:
            w = self.io.command(write_sqe(8 * self.round, 8), data, in_capsule=True)[0]
            r, _, back = self.io.command(read_sqe(8 * self.round, 8), length=4096)
            ka = self.adm.command(sqe(0x18, 0))[0]  # Keep Alive
        except Closed as e:
            return False, f"connection ended: {e}"
        return w == 0 and r == 0 and back == data and ka == 0, f"write {w:#x}, read {r:#x}, keep-alive {ka:#x}"


def admin_connect(addr, subnqn, n, dw0=False):
    """(status, queue) of an admin Connect as host `n`; ((status, dw0),
    queue) with dw0 (the controller ID in its low 16 bits)."""
    q = Queue(addr)
    st, d = q.connect(subnqn, host(n), bytes([n & 0xFF]) * 16)
    return ((st, d) if dw0 else st), q


def controllers(addr, subnqn, log, keeper):
    held = [admin_connect(addr, subnqn, n) for n in (10, 11)]
    check("two more controllers beside the keeper's: --max-controllers 3 holds them", all(st == 0 for st, _ in held),
          ", ".join(f"{st:#x}" for st, _ in held))
    st, over = admin_connect(addr, subnqn, 12)
    check("the fourth admin Connect gets Controller Busy with DNR, as nvmet when its controller IDs run out",
          code(st) == CONTROLLER_BUSY and st & DNR, f"status {st:#x}")
    over.close()
    check("... logged with the host, the subsystem and the limit",
          logged(log, f"from host {host(12).decode()}: Connect Controller Busy (sct 0x1 sc 0x81, DNR): subsystem "
                      f"{subnqn.decode()} holds 3 controller(s), the most --max-controllers allows"))
    ok, saw = keeper.serves()
    check("the keeper's I/O and keep-alive are answered at the controller limit", ok, saw)
    # A storm at the limit: of 16 Connects at once after one controller
    # left, exactly one gets in, and none waits.
    held.pop()[1].close()
    check("a controller whose host left is removed", logged(log, f"(host {host(11).decode()}) removed"))
    results = []

    def one(n):
        try:
            st, q = admin_connect(addr, subnqn, n)
        except (Closed, OSError) as e:
            results.append(str(e))
            return
        results.append(st)
        if st:
            q.close()
        else:
            held.append((st, q))
    storm = [threading.Thread(target=one, args=(20 + i,)) for i in range(16)]
    for t in storm:
        t.start()
    for t in storm:
        t.join()
    admitted = results.count(0)
    busy = sum(1 for st in results if isinstance(st, int) and code(st) == CONTROLLER_BUSY)
    check("16 Connects at once for the one free place: one admitted, 15 Controller Busy", admitted == 1 and busy == 15,
          f"{admitted} admitted, {busy} busy, others: {[st for st in results if isinstance(st, str)]}")
    ok, saw = keeper.serves()
    check("the keeper is served after the storm", ok, saw)
    # Each refusal came on a connection of its own: logged once per 10 s
    # and subsystem, not once each (two lines if the storm began more than
    # 10 s after the first refusal).
    with open(log, errors="replace") as f:
        lines = sum(1 for line in f if "Connect Controller Busy" in line and subnqn.decode() in line)
    check("the storm's 15 refusals do not each write a line", lines <= 2, f"{lines} lines")
    # Discovery is not capped: hosts holding discovery controllers must not
    # lock others out of it (nvmet gives it an ID range of its own).
    disc = [admin_connect(addr, DISCOVERY_NQN, 40 + i) for i in range(4)]
    check("four discovery controllers with --max-controllers 3", all(st == 0 for st, _ in disc),
          ", ".join(f"{st:#x}" for st, _ in disc))
    for _, q in held + disc:
        q.close()


def own_limit(addr, ctl, log):
    """A subsystem's own max-controllers= in place of --max-controllers."""
    sub = "nqn.2026-12.io.mpnvme:own-limit"
    reply = control(ctl, f"subsystem add {sub} max-controllers=1 null:1m")
    check("subsystem add ... max-controllers=1", reply.startswith("ok"), reply.strip())
    st1, q1 = admin_connect(addr, sub.encode(), 30)
    st2, q2 = admin_connect(addr, sub.encode(), 31)
    check("its second controller gets Controller Busy with DNR", st1 == 0 and code(st2) == CONTROLLER_BUSY and st2 & DNR,
          f"first {st1:#x}, second {st2:#x}")
    check("... logged naming the subsystem's own limit",
          logged(log, f"subsystem {sub} holds 1 controller(s), the most its max-controllers= allows"))
    reply = control(ctl, f"subsystem add {sub}-bad max-controllers=70000 null:1m")
    check("max-controllers= outside 1..65519 is refused, naming it", "max-controllers= takes 1..65519" in reply, reply.strip())
    q1.close()
    q2.close()
    return sub


def controller_ids(addr, ctl, log, keeper):
    """nvmet's cntlid_min and cntlid_max: the IDs handed out lie in the
    range, which bounds the controllers; each attribute once; a subsystem
    NQN without control characters; refusals that state their numbers."""
    sub = "nqn.2026-12.io.mpnvme:id-range"
    reply = control(ctl, f"subsystem add {sub} cntlid_min=301 cntlid_max=300 null:1m")
    check("cntlid_min above cntlid_max is refused, as nvmet, the numbers stated",
          reply.startswith("error") and "cntlid_min 301 and cntlid_max 300: controller IDs lie in 1..65519" in reply,
          reply.strip())
    reply = control(ctl, "host key nqn.2026-12.io.mpnvme:h dhchap_key=@DHHC-1:00:123456789012345:")
    check("a key-shaped @FILE that cannot be read is not repeated, digits included",
          reply.startswith("error") and "123456789012345" not in reply, reply.strip())
    reply = control(ctl, f"subsystem add {sub} null:1m,uuid=\x1bc")
    check("a control byte a refusal carries comes back escaped", reply.startswith("error") and "\x1b" not in reply
          and "\\x1b" in reply, repr(reply.strip()))
    reply = control(ctl, f"subsystem add {sub} model=\x1b[31mRED null:1m")
    check("a model with a control character is refused, as nvmet", reply.startswith("error")
          and "at most 40 printable ASCII characters" in reply, repr(reply.strip()))
    for twice in ("max-controllers=5 max-controllers=1", "cntlid_min=2 cntlid_min=3", "serial=a serial=b"):
        name = twice.split("=")[0]
        reply = control(ctl, f"subsystem add {sub} {twice} null:1m")
        check(f"{name} given twice is refused", reply.startswith("error") and f"{name} given twice" in reply, reply.strip())
    reply = control(ctl, f"subsystem add {sub} null:1m,nsid=1,nsid=2")
    check("a namespace's nsid given twice is refused", reply.startswith("error") and "nsid given twice" in reply, reply.strip())
    reply = control(ctl, f"subsystem add {sub}\x1b[2J null:1m")
    check("a subsystem NQN with a control character is refused", reply.startswith("error")
          and "control characters or spaces" in reply and "\x1b" not in reply, repr(reply.strip()))
    reply = control(ctl, f"subsystem add {sub}\xc2\x85 null:1m")
    check("... and one with a C1 control (NEL)", reply.startswith("error") and "not UTF-8, or control" in reply,
          repr(reply.strip()))
    reply = control(ctl, f"subsystem add {sub} cntlid_min=300 cntlid_max=301 null:1m")
    check("subsystem add ... cntlid_min=300 cntlid_max=301", reply.startswith("ok"), reply.strip())
    listed = [line for line in control(ctl, "subsystems").splitlines() if line.startswith(sub + " ")]
    check("subsystems lists its controller IDs", listed and listed[0].endswith(" cntlid_min=300 cntlid_max=301"), str(listed))
    key = "DHHC-1:00:" + "c2VjcmV0" * 6 + ":"
    for line in (f"host allow {sub} {key}", f"subsystem add {key} null:1m", f"subsystem add {sub} host={key} null:1m"):
        reply = control(ctl, line)
        check(f"a key where an NQN belongs is refused ({line.split()[0]} {line.split()[1]})",
              reply.startswith("error") and "a key given where" in reply and "c2VjcmV0" not in reply, reply.strip())
    check("... and never logged", "c2VjcmV0" not in open(log, errors="replace").read())
    got = [admin_connect(addr, sub.encode(), n, dw0=True) for n in (50, 51, 52)]
    ids = sorted(dw0 & 0xFFFF for (st, dw0), _ in got[:2] if st == 0)
    check("its two controllers get IDs 300 and 301", ids == [300, 301], f"{ids}")
    st = got[2][0][0]
    check("a third gets Controller Busy with DNR", code(st) == CONTROLLER_BUSY and st & DNR, f"status {st:#x}")
    check("... logged naming the range", logged(log, f"subsystem {sub} holds 2 controller(s), the most its controller ID range "
                                                     "300..301 allows"))
    for _, q in got:
        q.close()
    ok, saw = keeper.serves()
    check("the keeper is served at the range's end", ok, saw)
    control(ctl, f"subsystem remove {sub}")


def subsystems(ctl, log, keeper, extra):
    before = control(ctl, "subsystems")
    reply = control(ctl, "subsystem add nqn.2026-12.io.mpnvme:third null:1m")
    check("a third subsystem is refused: --max-subsystems 2", reply.startswith("error")
          and "the target holds 2 subsystem(s), the most --max-subsystems allows" in reply, reply.strip())
    check("... and nothing changed", control(ctl, "subsystems") == before)
    check("... logged", logged(log, "subsystem nqn.2026-12.io.mpnvme:third not added by the control socket: the target holds 2 "
                                    "subsystem(s), the most --max-subsystems allows"))
    ok, saw = keeper.serves()
    check("the keeper is served at the subsystem limit", ok, saw)
    reply = control(ctl, f"subsystem remove {extra}")
    check("the extra subsystem removed", reply.startswith("ok"), reply.strip())


def namespaces(addr, ctl, log, keeper):
    sub = "nqn.2026-12.io.mpnvme:ns-cap"
    before = control(ctl, "subsystems")
    reply = control(ctl, f"subsystem add {sub} null:1m null:1m null:1m")
    check("three namespaces in one subsystem are refused: --max-namespaces 2",
          reply.startswith("error") and "3 namespaces, more than the 2 --max-namespaces allows in a subsystem" in reply,
          reply.strip())
    check("... and nothing changed", control(ctl, "subsystems") == before)
    check("... logged", logged(log, f"subsystem {sub} not added by the control socket: {sub}: 3 namespaces, more than the 2 "
                                    "--max-namespaces allows"))
    reply = control(ctl, f"subsystem add {sub} null:1m,nsid=4294967295")
    check("NSID 0xFFFFFFFF (all namespaces) is refused, naming the range",
          reply.startswith("error") and "nsid must be a number from 1 to 4294967294" in reply, reply.strip())
    reply = control(ctl, f"subsystem add {sub} null:1m null:1m,nsid=4294967294")
    check("two namespaces, the second at NSID 0xFFFFFFFE, are taken", reply.startswith("ok"), reply.strip())
    q = Queue(addr)
    q.connect(sub.encode(), host(40), bytes([40]) * 16)
    q.enable()
    st, _, ident = q.command(sqe(0x06, 0, nsid=0, cdw10=1), length=4096)  # Identify Controller
    nn = struct.unpack_from("<I", ident, 516)[0] if st == 0 else None
    check("Identify Controller's NN is the highest NSID", nn == MAX_NSID, f"status {st:#x}, NN {nn}")
    st, _, ids = q.command(sqe(0x06, 0, nsid=1, cdw10=2), length=4096)  # active namespace list above 1
    first = struct.unpack_from("<I", ids, 0)[0] if st == 0 else None
    check("the active namespace list above 1 holds 0xFFFFFFFE", first == MAX_NSID, f"status {st:#x}, first {first}")
    for above in (MAX_NSID, 0xFFFFFFFF):
        st = q.command(sqe(0x06, 0, nsid=above, cdw10=2), length=4096)[0]
        check(f"the active namespace list above {above:#x} is Invalid Namespace with DNR, as nvmet",
              code(st) == 0x0B and st & DNR, f"status {st:#x}")
    q.close()
    ok, saw = keeper.serves()
    check("the keeper is served at the namespace limit", ok, saw)
    control(ctl, f"subsystem remove {sub}")


def ram(ctl, pid, log, keeper):
    sub = "nqn.2026-12.io.mpnvme:ram-cap"
    before = control(ctl, "subsystems")
    size0, rss0 = status_kib(pid, "VmSize"), status_kib(pid, "VmRSS")
    reply = control(ctl, f"subsystem add {sub} ram:512m")
    grew_size, grew_rss = (status_kib(pid, "VmSize") - size0) >> 10, (status_kib(pid, "VmRSS") - rss0) >> 10
    want = ("RAM namespaces of 536870912 bytes (512.0 MiB): --max-ram 67108864 bytes (64.0 MiB) leaves 50331648 bytes "
            "(48.0 MiB) (16777216 bytes (16.0 MiB) held by RAM namespaces)")
    check("a 512 MiB RAM namespace is refused: --max-ram 64m, 16 MiB held", reply.startswith("error") and want in reply,
          reply.strip())
    check("... and nothing changed", control(ctl, "subsystems") == before)
    check("... nothing was mapped for it", grew_size < 64 and grew_rss < 64, f"VmSize +{grew_size} MiB, VmRSS +{grew_rss} MiB")
    check("... logged", logged(log, f"subsystem {sub} not added by the control socket: {sub}: {want}"))
    # A namespace opened and closed again before the refusal would leave
    # VmSize as it was, but not the log line each opened namespace gets.
    check("... not even for a moment", f"subsystem {sub} namespace 1:" not in open(log, errors="replace").read())
    ok, saw = keeper.serves()
    check("the keeper is served at the RAM limit", ok, saw)
    reply = control(ctl, f"subsystem add {sub} ram:48m")
    check("what is left (48 MiB) is taken", reply.startswith("ok"), reply.strip())
    reply = control(ctl, f"subsystem remove {sub}")
    again = control(ctl, f"subsystem add {sub} ram:48m")
    check("a removed subsystem gives its RAM back", reply.startswith("ok") and again.startswith("ok"), again.strip())


def connections(addr, subnqn, keeper_src, src1, src2, per_address, total, log):
    keeper = Keeper(addr, subnqn, keeper_src)

    def open_from(src, n):
        held = []
        for _ in range(n):
            try:
                held.append(Queue(addr, src=src, timeout=3))
            except (Closed, OSError):
                pass
        return held
    held = open_from(src1, per_address + 2)
    check(f"{src1} holds --max-connections-per-address ({per_address}) beside the keeper", len(held) == per_address,
          f"{len(held)} served")
    check("... refused past it, logged", logged(log, f"connections from {src1}, the most --max-connections-per-address allows"))
    ok, saw = keeper.serves()
    check("the keeper is served at the per-address limit", ok, saw)
    more = open_from(src2, total)
    check(f"all addresses hold --max-connections ({total}), the keeper's 2 counted", 2 + len(held) + len(more) == total,
          f"{2 + len(held) + len(more)} held")
    ok, saw = keeper.serves()
    check("the keeper is served at the connection limit", ok, saw)
    for q in held + more:
        q.close()


def main():
    if sys.argv[1] == "connections":
        a = sys.argv[2:]
        connections(a[0], a[1].encode(), a[2], a[3], a[4], int(a[5]), int(a[6]), a[7])
        finish()
    addr, subnqn, ctl, pid, log = sys.argv[2], sys.argv[3].encode(), sys.argv[4], sys.argv[5], sys.argv[6]
    keeper = Keeper(addr, subnqn)
    ok, saw = keeper.serves()
    check("the keeper is served before any limit", ok, saw)
    controllers(addr, subnqn, log, keeper)
    extra = own_limit(addr, ctl, log)
    subsystems(ctl, log, keeper, extra)
    namespaces(addr, ctl, log, keeper)
    controller_ids(addr, ctl, log, keeper)
    ram(ctl, pid, log, keeper)
    ok, saw = keeper.serves()
    check("the keeper is served at the end", ok, saw)
    finish()


if __name__ == "__main__":
    main()
