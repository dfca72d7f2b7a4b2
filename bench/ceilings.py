#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The target's ceilings, measured (issue 44; the figures go to
mpnvme-target(8), LIMITS): what an idle connection costs the target, and
what a Connect storm does.

  python3 bench/ceilings.py --build build-ceil [--controllers 500] [--storm 300]

Each part runs its own mpnvme-target (BUILD/mpnvme-target/mpnvme-target,
an optimized build: RelWithDebInfo as `make build`) on a free loopback port
over TCP, with a null namespace and the connection limits raised out of
the way, and talks to it with tests/pylib's Python host:

  memory   N controllers (admin queue, enabled), then one I/O queue each,
           then a Flush on every I/O queue (the first command after
           Connect widens the receive staging), then one 128 KiB write on
           each (a null namespace keeps the command buffer the write was
           received in, as any namespace but RAM does): the target's VmRSS
           before and after each step, over N. A controller and an I/O queue are warmed up
           and dropped first, so that the first connection's one-time
           costs (the allocator's arenas) are not spread over the rest.
  storm    a host already doing I/O (a 4 KiB write, read and Keep Alive in
           a loop), then S hosts with distinct host NQNs released at once
           from S threads, each an ICReq, admin Connect, CC.EN and I/O
           Connect: how long until all are connected, how many were
           refused or failed, and the prober's commands meanwhile (how
           many, the longest); --storm-runs times, each against a target
           of its own. The client is Python with its GIL: the
           storm's time is the client's as much as the target's.

Prints a Markdown table with the machine, the build and the options.
Writes only into a temporary directory (the targets' logs)."""
import argparse
import os
import pathlib
import platform
import re
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout's tests/pylib
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "pylib"))
from nvmehost import Closed, Queue, read_sqe, sqe, write_sqe  # noqa: E402

NQN = b"nqn.2026-12.io.mpnvme:ceilings"
LIMITS = ["--max-connections", "100000", "--max-connections-per-address", "100000"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Target:
    """mpnvme-target on loopback, its log in `work`."""

    def __init__(self, program, work, name):
        self.port = free_port()
        self.log = work / f"{name}.log"
        with open(self.log, "w") as out:
            self.p = subprocess.Popen([str(program), "--listen", f"127.0.0.1:{self.port}", "--transport", "tcp", "--subnqn",
                                       NQN.decode(), "--ns", "null:1g", "--log-level", "warn"] + LIMITS,
                                      stdout=out, stderr=subprocess.STDOUT, cwd=work)
        end = time.monotonic() + 30
        while "mpnvme-target: ready" not in self.log.read_text():
            if self.p.poll() is not None or time.monotonic() > end:
                raise SystemExit(f"mpnvme-target did not start: {self.log.read_text()[-500:]}")
            time.sleep(0.05)

    def rss_kib(self):
        for line in open(f"/proc/{self.p.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def settled_rss_kib(self):
        """VmRSS once the event loop has handled what was just sent: the
        same reading twice, 0.2 s apart."""
        last = self.rss_kib()
        for _ in range(50):
            time.sleep(0.2)
            now = self.rss_kib()
            if now == last:
                return now
            last = now
        return last

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def host(n):
    return f"nqn.2026-12.io.mpnvme:ceilings-{n}".encode()


def controller(port, n, kato=0):
    """An enabled admin queue as host `n`: (queue, cntlid)."""
    q = Queue("127.0.0.1", port)
    st, cntlid = q.connect(NQN, host(n), n.to_bytes(16, "little"), kato=kato)
    if st or q.enable():
        raise RuntimeError(f"host {n}: admin Connect status {st:#x}")
    return q, cntlid & 0xFFFF


def io_queue(port, n, cntlid):
    q = Queue("127.0.0.1", port)
    st, _ = q.connect(NQN, host(n), n.to_bytes(16, "little"), qid=1, cntlid=cntlid)
    if st:
        raise RuntimeError(f"host {n}: I/O Connect status {st:#x}")
    return q


def memory(program, work, n):
    """KiB per controller, per idle I/O queue, per I/O queue after a 128 KiB write."""
    t = Target(program, work, "memory")
    payload = b"\x5a" * 131072
    try:
        adm, cntlid = controller(t.port, 0)
        io = io_queue(t.port, 0, cntlid)
        io.command(write_sqe(0, 256), payload)
        io.close()
        adm.close()
        base = t.settled_rss_kib()
        admins = [controller(t.port, i) for i in range(1, n + 1)]
        with_admin = t.settled_rss_kib()
        ios = [io_queue(t.port, i, cntlid) for i, (_, cntlid) in enumerate(admins, 1)]
        with_io = t.settled_rss_kib()
        for q in ios:  # a command without data: what the first one after Connect sets up
            st = q.command(sqe(0x00, 0))[0]
            if st:
                raise RuntimeError(f"a Flush: status {st:#x}")
        used = t.settled_rss_kib()
        for q in ios:
            st = q.command(write_sqe(0, 256), payload)[0]
            if st:
                raise RuntimeError(f"a 128 KiB write: status {st:#x}")
        after_write = t.settled_rss_kib()
        for q in ios + [a for a, _ in admins]:
            q.close()
        return {"base": base, "controller": (with_admin - base) / n, "io": (with_io - with_admin) / n,
                "used": (used - with_io) / n, "written": (after_write - used) / n}
    finally:
        t.stop()


class Prober(threading.Thread):
    """A connected host's 4 KiB write, read and Keep Alive, over and over,
    noting how long each round took."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.adm, cntlid = controller(port, 99999, kato=30000)
        self.io = io_queue(port, 99999, cntlid)
        self.rounds, self.longest, self.failed = 0, 0.0, ""
        self.stopping = threading.Event()

    def run(self):
        data = b"\xa5" * 4096
        while not self.stopping.is_set():
            t0 = time.monotonic()
            try:
                w = self.io.command(write_sqe(0, 8), data, in_capsule=True)[0]
                r = self.io.command(read_sqe(0, 8), length=4096)[0]
                k = self.adm.command(sqe(0x18, 0))[0]
            except (Closed, OSError) as e:
                self.failed = str(e)
                return
            if w or r or k:
                self.failed = f"status write {w:#x} read {r:#x} keep-alive {k:#x}"
                return
            self.rounds += 1
            self.longest = max(self.longest, time.monotonic() - t0)


def storm(program, work, hosts):
    t = Target(program, work, "storm")
    try:
        prober = Prober(t.port)
        prober.start()
        time.sleep(1)
        before, prober.longest = prober.rounds, 0.0
        go = threading.Barrier(hosts + 1)
        results, held, done_at = [], [], []
        lock = threading.Lock()

        def one(n):
            go.wait()
            try:
                adm, cntlid = controller(t.port, n)
                io = io_queue(t.port, n, cntlid)
                outcome = "connected"
            except RuntimeError as e:
                outcome, adm, io = f"refused ({e})", None, None
            except (Closed, OSError) as e:
                outcome, adm, io = f"failed ({e})", None, None
            with lock:
                results.append(outcome)
                done_at.append(time.monotonic())
                held.extend(q for q in (adm, io) if q)
        threads = [threading.Thread(target=one, args=(i + 1,)) for i in range(hosts)]
        for th in threads:
            th.start()
        go.wait()
        start = time.monotonic()
        for th in threads:
            th.join()
        took = max(done_at) - start
        during = prober.rounds - before
        prober.stopping.set()
        prober.join(timeout=30)
        for q in held:
            q.close()
        return {"hosts": hosts, "seconds": took, "connected": results.count("connected"),
                "not": [r for r in results if r != "connected"], "prober_rounds": during, "prober_longest": prober.longest,
                "prober_failed": prober.failed}
    finally:
        t.stop()


def machine(build):
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    mem = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal:"))
    cache = (build / "CMakeCache.txt").read_text() if (build / "CMakeCache.txt").exists() else ""
    kind = re.search(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", cache, re.M)
    sanitized = re.search(r"^MPNVME_SANITIZE:\w+=ON$", cache, re.M)
    return (f"{cpu}, {os.cpu_count()} CPUs, {mem >> 20} GiB, Linux {platform.release()}; build {build.name} "
            f"({kind.group(1) if kind else '?'}{', sanitizers' if sanitized else ''})")


def measure(build, controllers=500, hosts=300, storm_runs=3):
    """Both parts against BUILD's target; the raw figures."""
    build = pathlib.Path(build).resolve()
    program = build / "mpnvme-target" / "mpnvme-target"
    if not program.exists():
        raise SystemExit(f"{program}: not built (cmake --build {build} --target mpnvme-target)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * max(controllers, hosts) + 64
    if hard < need:
        raise SystemExit(f"ulimit -n {hard}: {need} descriptors needed")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with tempfile.TemporaryDirectory(prefix="mpnvme-ceilings.") as tmp:
        work = pathlib.Path(tmp)
        m = memory(program, work, controllers)
        runs = [storm(program, work, hosts) for _ in range(storm_runs)]
    return {"machine": machine(build), "controllers": controllers, "memory": m, "storms": runs}


def report(res):
    """The Markdown table of measure()'s figures."""
    m, n, runs = res["memory"], res["controllers"], res["storms"]
    lines = [f"Machine: {res['machine']}. Target: --transport tcp on 127.0.0.1, one null namespace, queue size 128, "
             "MDTS 1 MiB, one event loop; host: tests/pylib/nvmehost.py.", "",
             "| what | figure | how |", "|---|---|---|",
             f"| target at rest | {m['base'] / 1024:.1f} MiB VmRSS | after one controller and I/O queue came and went |",
             f"| per controller (admin queue, enabled) | {m['controller']:.1f} KiB | VmRSS over {n} controllers |",
             f"| per I/O queue, just connected | {m['io']:.1f} KiB | VmRSS over {n} I/O queues, one per controller |",
             f"| per I/O queue after its first command | +{m['used']:.1f} KiB | a Flush on each: the receive staging "
             "a connected queue widens to |",
             f"| per I/O queue after a 128 KiB write | +{m['written']:.1f} KiB | through an R2T: the command buffer a null "
             "namespace keeps (any but RAM does) |"]
    for i, s in enumerate(runs, 1):
        lines.append(f"| Connect storm {i}: {s['hosts']} hosts at once | all done in {s['seconds']:.2f} s: {s['connected']} "
                     f"connected, {len(s['not'])} refused or failed | ICReq, admin Connect, CC.EN, I/O Connect from "
                     f"{s['hosts']} threads |")
        lines.append(f"| a host doing I/O during storm {i} | {s['prober_rounds']} rounds answered, longest "
                     f"{s['prober_longest'] * 1000:.0f} ms{', FAILED: ' + s['prober_failed'] if s['prober_failed'] else ''} | "
                     "4 KiB write, read and Keep Alive, one round after the other |")
    for s in failed(res):
        lines += ["", f"Not connected: {sorted(set(s['not']))[:5]}"]
    return "\n".join(lines) + "\n"


def failed(res):
    return [s for s in res["storms"] if s["not"] or s["prober_failed"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory holding mpnvme-target/mpnvme-target")
    ap.add_argument("--controllers", type=int, default=500, help="controllers (and I/O queues) for the memory part")
    ap.add_argument("--storm", type=int, default=300, help="hosts connecting at once")
    ap.add_argument("--storm-runs", type=int, default=3, help="storms, each against a target of its own")
    a = ap.parse_args()
    res = measure(a.build, a.controllers, a.storm, a.storm_runs)
    print(report(res))
    sys.exit(1 if failed(res) else 0)


if __name__ == "__main__":
    main()
