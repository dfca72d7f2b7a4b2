# SPDX-License-Identifier: GPL-2.0-only
"""The matrix in the qemu kernel lab: the cells this kernel cannot run here,
inside a Debian guest (qemu-lab/lab.sh) that has netem, the nvme-tcp
host and native multipath.

- Delay: the selftest's lossy case is 5 ms + 0.5 % loss per path at
  1 Gbit. The guest is emulated (TCG, one vCPU), so its paths run at
  RATE_MBIT; the delay is scaled up by the same factor (1000 / RATE_MBIT)
  so the bandwidth-delay product, and with it the queue lengths in packets
  and the loss-limited TCP throughput, match the 1 Gbit / 5 ms case (a
  scaled rate with the original delay would flatter TCP). The lossless
  cells check the scale: they should reach 0.9 of the scaled line.
- The kernel host beside the engine: every TCP cell also runs through the
  guest's Linux host (mpnvme-nvmet connect --job, the iopolicy set with
  mpnvme-iopolicy, fio libaio on the multipath device), in the same guest
  run, against the same mpnvme-target --job and the same job file
  (bench/guest-seed.fio); the report gives engine / kernel per cell.
Everything (lab namespaces, target, engine, kernel host, fio) runs in the
guest; bench/guest-bench.sh is its runner."""
import dataclasses
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import time

import common
import loss_model
import guest_pairs
import progress
from published import PUBLISHED, mbit_to_mib_s

# Per path inside the guest: the one emulated vCPU (the 6.12 kernel does
# not boot with 2 under TCG) keeps 4 x 40 Mbit of TCP at 0.95 of the line.
RATE_MBIT = 40
PATHS = 4
LOSS_PCT = 0.5
HERE = pathlib.Path(__file__).resolve().parent
LABSH = common.ROOT / "qemu-lab" / "lab.sh"


ALL_POLICIES = ("numa", "round-robin", "queue-depth")


def cells(full, policies=None):
    """(side, transport, iopolicy): the engine's TCP and MPTCP cells and the
    kernel host's TCP cell for each policy (round-robin, or all three with
    --full or --policies all), and one MPTCP connection for all paths
    (mptcp1: path 1, the subflows join the rest; --full only); a raw
    control (side raw) for every engine cell."""
    policies = policies or (ALL_POLICIES if full else ("round-robin",))
    out = []
    for p in policies:
        # tcp-j1: the engine with the kernel host's flows (one queue per
        # path: the guest has one vCPU), its commands in flight the same.
        out += [("engine", "tcp", p), ("kernel", "tcp", p), ("engine", "tcp-j1", p), ("engine", "mptcp", p)]
    out += [("engine", "mptcp1", "numa")] if full else []
    # Each engine cell's raw control: its connections over bare sockets.
    return out + [("raw", t, p) for side, t, p in out if side == "engine"]


def guest_binaries():
    """What the guest needs from this machine: its tools and our programs."""
    names = ("bash", "ip", "tc", "ss", "nstat", "nft", "ethtool", "jq", "fio")
    progs = [shutil.which(p) for p in names]
    if None in progs:
        common.die(f"the guest needs {', '.join(n for n, p in zip(names, progs) if not p)} on this machine (iproute2, nftables, "
                   "ethtool, jq, fio)")
    b = common.BUILD
    ours = [common.ENGINE, common.TARGET, common.FLOOR, b / "toolkit" / "nvmet" / "mpnvme-nvmet",
            b / "toolkit" / "iopolicy" / "mpnvme-iopolicy"]
    for f in ours:
        if not f.exists():
            common.die(f"{f} is missing: run make first")
    return progs + [str(f) for f in ours]


def asan_runtime():
    """The ASan runtime an ASan-built engine needs preloaded into fio (the
    tests' build), at the path the guest gets it under; empty otherwise."""
    ldd = subprocess.run(["ldd", str(common.ENGINE)], capture_output=True, text=True).stdout
    m = re.search(r"(/\S*libasan\.so\S*)", ldd)
    return m.group(1) if m else ""


@dataclasses.dataclass
class Shape:
    """What one guest run measures: the paths (rate per path; the delay of
    the lossy condition scaled with it from the selftest's 5 ms at 1 Gbit),
    the run's time, and which cells in which conditions and directions."""
    rate_mbit: float = RATE_MBIT
    paths: int = PATHS
    runtime: int = 8
    ramp: int = 3
    conditions: tuple = ("lossless", "lossy")
    # The loss as the upstream selftest makes it: netem on each sender's
    # egress, dropping whole GSO packets (mpnvme-lab --loss-via netem
    # --loss-unit packet).
    loss_via: str = "netem"
    loss_unit: str = "packet"
    rws: tuple = ("randread", "randwrite")
    cells: list = dataclasses.field(default_factory=lambda: cells(False))
    # The four host/target pairs: the engine and the kernel host against
    # nvmet too (SIDE@nvmet), and the unequal condition (the last path at
    # half the rate, round-robin against queue-depth).
    pairs: bool = False
    # Cells of a condition other than `cells` (unequal's).
    cond_cells: dict = dataclasses.field(default_factory=dict)
    # The guest's vCPUs (multi-threaded TCG with more than one). The kernel
    # host opens one I/O queue per CPU and path at most.
    smp: int = 1
    # Both hosts' I/O timeout (the engine's io_timeout, the kernel's
    # nvme_core.io_timeout): 30 s, the kernel's default, unless a case
    # stretches it with the lab's time (guest_depth.py).
    io_timeout_s: int = 30
    # Both hosts' keep-alive timeout (the job's kato, which the engine takes
    # and mpnvme-nvmet connect --job gives the kernel host): 5 s, the
    # default of both, unless a case stretches it as the I/O timeout.
    kato_s: int = 5
    # Each engine run followed by its raw control in the same lab state
    # (the raw cells of the plan's engine cells); False: the raw cells run
    # on their own, as the sweep's one control per transport.
    raw_after_engine: bool = True
    # The guest's memory (MiB). Linux sizes tcp_mem, the one limit on all
    # sockets' buffers of both lab namespaces, from it: pressure at a 16th
    # of its pages, under 96 MiB at 1536.
    mem_mib: int = 1536

    def cells_of(self, cond):
        return self.cond_cells.get(cond, self.cells)

    @property
    def scale(self):
        return 1000 / self.rate_mbit

    @property
    def delay_ms(self):
        return 5 * self.scale


def run(full, runs, work, smoke=False, kernel="6.12", policies=None, out=None):
    """smoke: the lossy condition only, 2 paths, the engine's and the
    kernel's TCP round-robin reads, 2 s runs: the functional check make
    check runs (each controller's set-up costs about ten 250 ms round trips
    under emulation). policies: the iopolicies of the lossless and lossy
    cells (default: round-robin, all three with full)."""
    if smoke:
        shape = Shape(paths=2, runtime=2, ramp=1, conditions=("lossy",), rws=("randread",),
                      cells=[c for c in cells(False) if c[1] == "tcp"])
    else:
        shape = Shape(runtime=15 if full else 8, ramp=5 if full else 3, cells=cells(full, policies), pairs=True,
                      conditions=("lossless", "lossy", "unequal"))
    # Each guest run costs its runtime and about 20 s of set-up under
    # emulation: --full (3 policies, the one-connection cells) takes 3 runs
    # per figure, about 80 minutes, not the 5 of the other experiments.
    return execute(shape, min(runs, 3), work, kernel, out=out)


def pair_cells(chosen, kernel_mptcp):
    """The nvmet side of the four pairs for the policies of `chosen`, and
    the raw controls of the kernel host's connections (one queue per path:
    -j1); MPTCP cells where the kernel has NVMe over MPTCP."""
    transports = ("tcp", "mptcp") if kernel_mptcp else ("tcp",)
    out = []
    for pol in dict.fromkeys(p for _, _, p in chosen):
        out += [(side, t, pol) for t in transports for side in ("engine@nvmet", "kernel@nvmet")]
        out += [("raw", f"{t}-j1", pol) for t in transports if ("raw", f"{t}-j1", pol) not in chosen]
    return out


def unequal_cells(kernel_mptcp):
    """The reviewer's case: 3 paths at full rate and one at half, lossless,
    round-robin against queue-depth: every pair on each transport it has
    (without the series, MPTCP is the engine against mpnvme-target only),
    with the raw controls of the engine's and the kernel host's connections."""
    out = []
    for pol in ("round-robin", "queue-depth"):
        for t in ("tcp", "mptcp"):
            if t == "tcp" or kernel_mptcp:
                out += [(s, t, pol) for s in ("engine", "engine@nvmet", "kernel", "kernel@nvmet")] + [("raw", f"{t}-j1", pol)]
            else:
                out.append(("engine", t, pol))
    return out + [("raw", t, p) for s, t, p in out if s == "engine"]


def kernel_mptcp_host(kernel_dir):
    """Whether the kernel's NVMe host offers an mptcp transport (a kernel
    with the NVMe-over-MPTCP series): a module of drivers/nvme/host that
    names it. Released kernels' nvme-tcp does not."""
    for ko in pathlib.Path(kernel_dir).glob("root/lib/modules/*/kernel/drivers/nvme/host/*.ko"):
        if b"mptcp" in ko.read_bytes():
            return True
    return False


def prepare(kernel, env):
    """Fetch (once) and unpack the guest kernel; its directory."""
    r = subprocess.run([str(LABSH), "prepare"], capture_output=True, text=True, env=env)
    if r.returncode:
        common.die(f"the kernel lab could not be prepared: {r.stderr.strip()[-1500:]}")
    return r.stdout.strip().splitlines()[-1]


def execute(shape, runs, work, kernel, name="guest", out=None):
    """The shape's plan in one guest boot; its results (parse). The guest's
    result lines go to out/NAME-KERNEL-console.log (the results directory),
    and the screen shows where the plan is: run N of M, the cell, the time
    gone and what is left, with the guest's notes and failures above it."""
    paths, runtime, ramp, conditions, rws, chosen = shape.paths, shape.runtime, shape.ramp, shape.conditions, shape.rws, shape.cells
    binaries = guest_binaries()
    # MPNVME_LAB_KERNEL: 6.12, latest (Debian unstable's cloud kernel) or a
    # directory with a kernel the user built.
    env = dict(os.environ, MPNVME_LAB_BINARIES=" ".join(binaries), MPNVME_LAB_MEM=str(shape.mem_mib), MPNVME_LAB_TIMEOUT="300",
               MPNVME_LAB_KERNEL=kernel, MPNVME_LAB_SMP=str(shape.smp))
    # The kernel package is fetched (once) from this machine's network;
    # then the guest's user-mode network stays in a namespace of its own:
    # nothing it does reaches this machine's network.
    kernel_mptcp = kernel_mptcp_host(prepare(kernel, env))
    if kernel_mptcp:  # the kernel's own NVMe over MPTCP beside the engine's, for each kernel TCP cell
        shape = dataclasses.replace(shape, cells=chosen + [("kernel", "mptcp", p) for side, t, p in chosen
                                                           if side == "kernel" and t == "tcp"])
        chosen = shape.cells
    if shape.pairs:
        shape = dataclasses.replace(shape, cells=chosen + pair_cells(chosen, kernel_mptcp),
                                    cond_cells={"unequal": unequal_cells(kernel_mptcp)})
    plan = []
    for cond in conditions:
        cond_cells = shape.cells_of(cond)
        after_engine = {(t, p) for side, t, p in cond_cells if side == "engine"} if shape.raw_after_engine else set()
        for side, transport, pol in cond_cells:
            for rw in rws:
                for i in range(runs):
                    if side == "raw" and (transport, pol) in after_engine:
                        continue  # run right after its engine run: the same lab state for both
                    for s in (side, "raw") if side == "engine" and after_engine else (side,):
                        plan.append(f"{cond} {s} {transport} {pol} {rw} {cond}-{s}-{transport}-{pol}-{rw}-{i}")
    gdir = work / f"{name}-{re.sub(r'[^A-Za-z0-9.]', '_', kernel)}"
    gdir.mkdir()
    (gdir / "plan").write_text("\n".join(plan) + "\n")
    (gdir / "params").write_text(f"PATHS={paths} RATE_MBIT={shape.rate_mbit:g} DELAY_MS={shape.delay_ms:g} LOSS_PCT={LOSS_PCT} LOSS_VIA={shape.loss_via} LOSS_UNIT={shape.loss_unit} RUNTIME={runtime} RAMP={ramp} "
                                 f"IO_TIMEOUT_S={shape.io_timeout_s} KATO_S={shape.kato_s} PRELOAD={asan_runtime()} NVMET_TRTYPE={'mptcp' if kernel_mptcp else 'tcp'}\n")
    setup = gdir / "setup.sh"
    setup.write_text("/usr/local/bin/bash /files/guest-bench.sh > /dev/console 2>&1 &\n")
    files = [gdir / "plan", gdir / "params", common.LAB, HERE / "guest-seed.fio", HERE / "guest-bench.sh", HERE / "flows.awk",
             HERE / "mptcp-stuck.sh"]
    budget = run_budget(shape, plan)
    tags = {p.split()[-1] for p in plan}
    bar = progress.Progress(f"{name} ({kernel})", len(plan))
    kept = (out / f"{name}-{re.sub(r'[^A-Za-z0-9.]', '_', kernel)}-console.log") if out else None
    done = 0

    def follow(lines):
        nonlocal done
        if kept:
            with open(kept, "a") as f:
                f.writelines(x + "\n" for x in lines)
        for x in lines:
            tag = x.split(" ", 2)[1] if " " in x[6:] else ""
            if tag in tags:
                done += 1
                bar.step(done, tag)
            elif re.search(r"fail|note|unfinished", tag) or not kept:
                bar.say(f"  guest: {x[6:200]}")

    started = time.monotonic()
    text, boot_s, finished = boot_and_follow(gdir / "lab", setup, files, env, "BENCH", budget, follow)
    bar.done()
    if not finished:
        # What finished is kept (an hour of runs outlives one that hangs);
        # the report says the rest did not run.
        print(f"bench/run: the guest did not finish its {len(plan)} runs in {budget} s; console tail:\n"
              + "\n".join(text.splitlines()[-30:]), file=sys.stderr, flush=True)
        text += f"\nBENCH unfinished: the guest ran out of its {budget} s for {len(plan)} runs\n"
    res = parse(text, shape, runs, boot_s, time.monotonic() - started)
    res["kernel_asked"] = kernel
    res["kernel_mptcp_host"] = kernel_mptcp
    return res


def boot_and_follow(state, setup, files, env, prefix, budget_s, follow):
    """Boot the lab guest (state: its directory, setup: its /setup.sh,
    files: copied to /files/) in a network namespace of its own, hand
    follow() each new console line that starts with PREFIX + " " as it
    comes, until PREFIX-DONE or budget_s after the boot; then stop it.
    Returns the console text, the boot's seconds and whether it finished."""
    env = dict(env, MPNVME_LAB_FILES=" ".join(map(str, files)))
    netns = f"mpnvme-bench{os.getpid()}"
    subprocess.run(["ip", "netns", "add", netns], check=True)
    console = state / "console.log"
    started = time.monotonic()
    try:
        subprocess.run(["ip", "netns", "exec", netns, "ip", "link", "set", "lo", "up"], check=True)
        r = subprocess.run(["ip", "netns", "exec", netns, str(LABSH), "start", str(state), str(setup)], env=env,
                           capture_output=True, text=True)
        if r.returncode:
            common.die(f"the kernel lab did not boot: {r.stderr[-1500:]}")
        boot_s = time.monotonic() - started
        deadline = time.monotonic() + budget_s
        seen = 0
        while True:
            text = console.read_text(errors="replace")
            lines = [x for x in text.splitlines() if x.startswith(prefix + " ")]
            follow(lines[seen:])
            seen = len(lines)
            if f"{prefix}-DONE" in text:
                return text, boot_s, True
            if time.monotonic() > deadline:
                return text, boot_s, False
            time.sleep(2)
    finally:
        subprocess.run(["ip", "netns", "exec", netns, str(LABSH), "stop", str(state)], capture_output=True)
        subprocess.run(["ip", "netns", "del", netns], capture_output=True)


def run_budget(shape, plan):
    """Seconds the guest gets for its plan: each run's time, set-up under
    emulation (about ten round trips per controller: at long delays most
    of a run), and the drain of the commands still in flight once fio's
    time is up (at 4 x QD256, 128 MiB: counted at a fifth of the line)."""
    line_bytes = shape.paths * shape.rate_mbit * 1e6 / 8
    deepest = max((inflight_of(t) for _, t, _ in shape.cells), default=64) * 128 * 1024
    per_run = shape.runtime + shape.ramp + 30 + 100 * shape.delay_ms / 1000 + deepest / (0.2 * line_bytes)
    return int(len(plan) * per_run * 1.3) + 180


def inflight_of(transport):
    """Commands in flight of a cell from its name: jobs (-jN, default 2) x
    depth (-qdN, default 32 x 2 / jobs), as guest-bench.sh's shape()."""
    m = re.search(r"-j(\d+)", transport)
    jobs = int(m.group(1)) if m else 2
    m = re.search(r"-qd(\d+)", transport)
    depth = int(m.group(1)) if m else 64 // jobs
    return jobs * depth


# Each run's records by the suffix of their tag, and the cell key that keeps
# them (a list by run):
PER_RUN = {
    "-counters": "kernel_counters",  # what the kernel counted (both namespaces)
    "-flows": "flows",  # the TCP flows that carried data on each path (most at once), their median RTT
    "-pathstats": "path_stats",  # the engine's per path: subflows, most commands in flight
    "-drops": "drops",  # what the lab dropped in each direction
    "-links": "links",  # the bytes each lab link carried
    # where the guest's CPU went in the measured window: /proc/stat's split
    # and each role's processes (guest-bench.sh cpu_roles)
    "-cpuroles": "cpu_roles",
    # NVMe/TCP PDU headers seen starting a packet leaving the host namespace:
    # h2cdata and capsule_data (guest-bench.sh pdu_rules)
    "-pdus": "pdus",
    "-dmesg": "kernel_events",  # the kernel host's nvme messages, with counts
}


def parse(text, shape, runs, boot_s, total_s):
    by_tag, notes, counters, splits, labs, cpu_busy = {}, [], {}, {}, [], {}
    # "BENCH TAG-SUFFIX JSON": one run's record of a kind, by tag
    per_run = {kind: {} for kind in PER_RUN.values()}
    for line in text.splitlines():
        m = re.match(r"BENCH (\S+) ([^\s\[{]\S* )?([\[{].*[\]}])\s*$", line.replace("\r", ""))
        suffix = m and re.search(r"-[a-z]+$", m.group(1))
        if re.match(r"BENCH \S+-paths ", line):
            tag, split = line[6:].split(" ", 1)
            splits[tag[:-len("-paths")]] = split.strip()
            try:  # the kernel host's controllers, for the per-path split
                per_run["path_stats"].setdefault(tag[:-len("-paths")], json.loads(split))
            except json.JSONDecodeError:
                pass
        elif m and m.group(1) == "counters":
            counters[m.group(2).strip()] = json.loads(m.group(3))
        elif suffix and suffix.group(0) in PER_RUN:
            per_run[PER_RUN[suffix.group(0)]][m.group(1)[:suffix.start()]] = json.loads(m.group(3))
        elif m and m.group(1).endswith("-cpu"):
            cpu_busy[m.group(1)[:-len("-cpu")]] = json.loads(m.group(3))["busy"]
        elif m and not m.group(2):
            by_tag[m.group(1)] = json.loads(m.group(3))
        elif line.startswith("BENCH lab "):
            labs.append(line[10:].strip())
        elif line.startswith("BENCH "):
            notes.append(line[6:].strip())
    res = {"rate_mbit": shape.rate_mbit, "paths": shape.paths, "smp": shape.smp, "delay_ms": shape.delay_ms, "scale": shape.scale,
           "loss_pct": LOSS_PCT, "loss_unit": shape.loss_unit, "loss_via": shape.loss_via, "runtime_s": shape.runtime, "ramp_s": shape.ramp, "io_timeout_s": shape.io_timeout_s, "kato_s": shape.kato_s, "mem_mib": shape.mem_mib, "runs": runs, "boot_s": boot_s,
           "total_s": total_s, "line_mib_s": mbit_to_mib_s(shape.paths * shape.rate_mbit),
           "notes": notes, "counters": counters,
           "kernel_path_split": splits, "labs": labs, "cells": []}
    for cond in shape.conditions:
        for side, transport, pol in shape.cells_of(cond):
            cell = {"condition": cond, "side": side, "transport": transport, "iopolicy": pol}
            for rw in ("randread", "randwrite"):
                if rw not in shape.rws:
                    cell[rw] = {"mib_s": None, "clat_p99_us": None, "failed": ["not run"]}
                    continue
                tags = [f"{cond}-{side}-{transport}-{pol}-{rw}-{i}" for i in range(runs)]
                rows = [by_tag.get(t, {"failed": "no result"}) for t in tags]
                failed = [r["failed"] for r in rows if "failed" in r or r.get("error")]
                ok = [r for r in rows if "mib_s" in r and not r.get("error")]
                cell[rw] = {"mib_s": common.median_spread([r["mib_s"] for r in ok]) if ok else None,
                            "clat_p99_us": common.median_spread([r["clat_p99_us"] for r in ok]) if ok and side != "raw" else None,
                            "failed": failed,
                            # the second half of each run alone: still ramping up when above mib_s
                            "late_mib_s": common.median_spread([r["late_mib_s"] for r in ok]) if ok and "late_mib_s" in ok[0] else None,
                            **{kind: [per_run[kind].get(t) for t in tags] for kind in PER_RUN.values()},
                            # the emulated CPU's busy fraction over each run's last `runtime` seconds
                            "guest_cpu_busy": common.median_spread([cpu_busy[t] for t in tags if t in cpu_busy])
                            if any(t in cpu_busy for t in tags) else None}
                if side == "raw" and ok:  # measured: the subflows each control connection had
                    cell[rw]["subflows"] = ok[-1]["subflows"]
            res["cells"].append(cell)
    return res


def fmt(d, line):
    if d is None or d["failed"] == ["not run"]:
        return "-"
    if not d["mib_s"]:
        return "failed: " + "; ".join(str(f)[:80] for f in d["failed"])
    m = d["mib_s"]["median"]
    return f"{m:.1f} ({m / line:.2f})"


def kernel_mptcp_table(res, by, ratio, line):
    """The kernel's own NVMe over MPTCP beside the engine's, where the guest
    kernel's NVMe host has the mptcp transport; otherwise a line saying so."""
    if not res.get("kernel_mptcp_host"):
        return ["", f"Linux {guest_kernel(res)}'s NVMe host has no mptcp transport (the NVMe-over-MPTCP series is not in "
                "it): the kernel cells are TCP only. `--kernel PATH` with a kernel built with the series adds them."]
    lines = ["", "The kernel's own NVMe over MPTCP (this kernel's NVMe host has the mptcp transport; mpnvme-nvmet connect "
             "--trtype mptcp) beside the engine over MPTCP:", "",
             "| condition | iopolicy | kernel mptcp read | engine mptcp read | engine / kernel | kernel mptcp write | "
             "engine mptcp write | engine / kernel |", "|---|---|---|---|---|---|---|---|"]
    for (cond, side, transport, pol), k in sorted(by.items()):
        e = by.get((cond, "engine", "mptcp", pol))
        if side != "kernel" or transport != "mptcp" or not e:
            continue
        lines.append(f"| {cond} | {pol} | {fmt(k['randread'], line)} | {fmt(e['randread'], line)} | {ratio(e['randread'], k['randread'])} | "
                     f"{fmt(k['randwrite'], line)} | {fmt(e['randwrite'], line)} | {ratio(e['randwrite'], k['randwrite'])} |")
    return lines


def report(res, runs):
    line = res["line_mib_s"]
    pub_line = mbit_to_mib_s(4000)  # the published setup: 4 x 1 Gbit
    lines = ["## The matrix in the qemu kernel lab: delay, and the kernel host beside the engine", "",
             f"Every cell here ran **inside a Debian guest** (Linux {guest_kernel(res)}, TCG, 1 vCPU) on "
             f"{res['paths']} x **{res['rate_mbit']} Mbit** mpnvme-lab paths (line {line:.1f} MiB/s), not at 1 Gbit. "
             f"Lossy: {res['loss_pct']} % loss + **{res['delay_ms']} ms** delay per path and direction: the selftest's "
             f"5 ms scaled by {res['scale']}, like the rate, so the bandwidth-delay product matches 1 Gbit / 5 ms. "
             "mpnvme-target --job (MPTCP listener; TCP hosts use its fallback) and fio run in the guest; workload "
             "bench/guest-seed.fio (128 KiB, 2 jobs x QD32), "
             f"{res['runtime_s']} s after {res['ramp_s']} s ramp, medians of {res['runs']}. Cells: MiB/s (ratio to line). "
             "kernel: the guest's nvme-tcp host with native multipath, connected by mpnvme-nvmet connect --job to the "
             "same paths, iopolicy set by mpnvme-iopolicy, fio libaio on the multipath device. Published: the "
             "selftest's figures (kernel host and nvmet, 4 x 1 Gbit) as ratios to their line.", "",
             "| condition | iopolicy | engine tcp read | kernel tcp read | engine / kernel | engine tcp write | "
             "kernel tcp write | engine / kernel | engine mptcp read | engine mptcp write | published tcp | published mptcp |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    one = ["", "One MPTCP connection for all paths (the engine on path 1; MPTCP's subflows join the other three):", "",
           "| condition | read | write |", "|---|---|---|"]
    by = {(c["condition"], c["side"], c["transport"], c["iopolicy"]): c for c in res["cells"]}

    def ratio(a, b):
        return f"{a['mib_s']['median'] / b['mib_s']['median']:.2f}" if a["mib_s"] and b["mib_s"] and b["mib_s"]["median"] else "-"

    def pub(t, p, cond):
        v = PUBLISHED.get((t, p, cond))
        return f"{v[0] / pub_line:.2f} / {v[1] / pub_line:.2f}" if v else ""

    for cond in ("lossless", "lossy"):
        for pol in sorted({c["iopolicy"] for c in res["cells"]}, key=["numa", "round-robin", "queue-depth"].index):
            e, k, m = by.get((cond, "engine", "tcp", pol)), by.get((cond, "kernel", "tcp", pol)), by.get((cond, "engine", "mptcp", pol))
            if not (e and k):
                continue
            m = m or {"randread": None, "randwrite": None}
            lines.append(f"| {cond} | {pol} | {fmt(e['randread'], line)} | {fmt(k['randread'], line)} | "
                         f"{ratio(e['randread'], k['randread'])} | {fmt(e['randwrite'], line)} | {fmt(k['randwrite'], line)} | "
                         f"{ratio(e['randwrite'], k['randwrite'])} | {fmt(m['randread'], line)} | {fmt(m['randwrite'], line)} | "
                         f"{pub('tcp', pol, cond)} | {pub('mptcp', pol, cond)} |")
        c = by.get((cond, "engine", "mptcp1", "numa"))
        if c:
            one.append(f"| {cond} | {fmt(c['randread'], line)} | {fmt(c['randwrite'], line)} |")
    if len(one) > 5:  # rows beyond the header: --full ran the one-connection cells
        lines += one
    lines += kernel_mptcp_table(res, by, ratio, line)
    lines += guest_pairs.report(res)
    lines += controls_table(res, by, ratio)
    def lossless(transports):
        return [c[rw]["mib_s"]["median"] / line for c in res["cells"] if c["condition"] == "lossless"
                and c["transport"] in transports for rw in ("randread", "randwrite") if c[rw]["mib_s"]]
    tcp, mptcp = lossless(("tcp",)), lossless(("mptcp", "mptcp1"))
    if tcp:
        lines += ["", f"Scale check: the lossless TCP cells (engine and kernel) reach {min(tcp):.2f}..{max(tcp):.2f} of the "
                  "scaled line: 0.9 or more means the emulated CPU is not what limits them."
                  + (f" The MPTCP cells reach {min(mptcp):.2f}..{max(mptcp):.2f}, as on this machine's 1 Gbit paths "
                     "(the matrix's lossless mptcp rows), where the CPU is not the limit either." if mptcp else "")]
    lines += loss_table(res, by)
    c = res["counters"].get("lossy")
    if c and c["sent"]["tx_packets"]:
        d = c["directions"]
        lines += ["", f"Loss check (lossy condition, {c.get('loss_unit')} by {c.get('loss_via')}, the kernel's own counters): "
                  f"netem dropped {d['to_target']['dropped_packets']} packets on the way to the target, whose sender (the host) "
                  f"retransmitted {d['to_target']['sender_tcp']['TcpRetransSegs']} segments and timed out "
                  f"{d['to_target']['sender_tcp']['TcpExtTCPTimeouts']} times; {d['to_host']['dropped_packets']} on the way to "
                  f"the host, whose sender (the target) retransmitted {d['to_host']['sender_tcp']['TcpRetransSegs']} and timed "
                  f"out {d['to_host']['sender_tcp']['TcpExtTCPTimeouts']} times."]
    lines += ["", f"Guest boot {res['boot_s']:.0f} s, whole guest run {res['total_s']:.0f} s."]
    notes = [n for n in res["notes"] if not n.startswith("kernel ")]
    if notes:
        lines += ["", "Guest notes:", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def run_model(res, d, i, read):
    """One run's loss and flows against the flow-count estimate: the data
    direction's drops per segment its sender sent (p), the sender's
    retransmissions per MiB sent, the flows that carried data on each path
    and their round trip, and what that many flows carry at that p."""
    k, drops, flows = d["kernel_counters"][i], d["drops"][i], d["flows"][i]
    if not (k and drops and flows):
        return None
    sender = "target" if read else "host"
    segs = max(k.get(f"{sender}.Tcp.OutSegs", 0), 1)
    p = drops["to_host" if read else "to_target"] / segs
    line_per_path = res["line_mib_s"] / res["paths"]
    return {"p": p, "retrans_per_mib": k.get(f"{sender}.Tcp.RetransSegs", 0) / (segs * loss_model.MSS / 1048576),
            "flows": flows["flows"], "rtt_ms": flows["rtt_ms"],
            "estimate": loss_model.flow_estimate(p, flows["rtt_ms"], flows["flows"], line_per_path)}


def ratio_to(value, estimate):
    """value / estimate, or '-' where no flow was seen to carry data."""
    return f"{value / estimate:.2f}" if estimate else "-"


def loss_table(res, by):
    """The lossy cells beside the flow-count estimate and the published
    ratios, by side (engine, its raw control, the kernel host)."""
    line = res["line_mib_s"]
    rows = []
    for cell in res["cells"]:
        if not cell["condition"].startswith("lossy"):
            continue
        for rw in ("randread", "randwrite"):
            d = cell[rw]
            if not d.get("mib_s") or not d.get("drops"):
                continue
            m = run_model(res, d, len(d["drops"]) - 1, rw == "randread")
            if not m:
                continue
            v = d["mib_s"]["median"]
            est = "line" if m["estimate"] >= line * 0.999 else f"{m['estimate']:.1f}"
            rtt = statistics.median([t for t in m["rtt_ms"] if t] or [0])
            pub = PUBLISHED.get((cell["transport"].split("-")[0], cell["iopolicy"], "lossy"))
            pub_text = f"{pub[0 if rw == 'randread' else 1] / mbit_to_mib_s(4000):.2f}" if pub else "-"
            rows.append(f"| {cell['condition']} | {cell['side']} | {cell['transport']} | {cell['iopolicy']} | {rw[4:]} | "
                        f"{v:.2f} ({v / line:.2f}) | {'/'.join(map(str, m['flows']))} | {rtt:.0f} | {m['p']:.4f} | "
                        f"{m['retrans_per_mib']:.1f} | {est} | {ratio_to(v, m['estimate'])} | "
                        f"{pub_text} |")
    if not rows:
        return []
    return ["", f"Lossy cells against the flow-count estimate ({res['loss_pct']} % per {res.get('loss_unit')} by "
            f"{res.get('loss_via')}, {res['delay_ms']:g} ms each way). Flows: the TCP flows that carried data on each path "
            "(MPTCP subflows one by one; the most seen at once, sampled every second with ss). p: the loss-event rate the "
            "sender met, drops in its direction per segment it sent. Retransmissions per MiB it sent. Estimate: each path's "
            "flows x one flow's loss-limited rate at that p and their round trip (PFTK: Mathis's square-root law with "
            "retransmission timeouts, RTO = RTT + 200 ms), capped by the path's line. Published: the selftest's figure "
            "as a ratio to its line. Last run of each cell.", "",
            "| condition | side | transport | iopolicy | dir | MiB/s (line) | flows | RTT ms | p | retrans/MiB | estimate | "
            "/ estimate | published |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"] + rows


def controls_table(res, by, ratio):
    """Each engine cell beside its raw control (and the kernel host's TCP
    cell beside the same control), flagged where the engine falls short of
    the transport or beats the control."""
    line = res["line_mib_s"]
    head = ["", "Raw controls: each engine run was followed by the same connections over bare sockets (mpnvme-floor "
            "stream against mpnvme-floor sink in the same lab: 2 per path as the engine's 2 jobs, one path for numa, "
            "the same direction, ramp and time). engine / raw below "
            f"{common.ENGINE_GAP} is an engine gap; the kernel host is set beside the same TCP control.", "",
            "| condition | iopolicy | transport | raw read | engine / raw | kernel / raw | raw write | engine / raw | "
            "kernel / raw | raw subflows |", "|---|---|---|---|---|---|---|---|---|---|"]
    rows = []

    def flagged(a, b):
        r = ratio(a, b)
        return r + (common.control_flag(float(r)) if r != "-" else "")

    for cell in res["cells"]:
        if cell["side"] != "raw" or cell["condition"] == "unequal":  # unequal: guest_pairs, against its own line
            continue
        key = (cell["condition"], cell["transport"], cell["iopolicy"])
        e, k = by.get((key[0], "engine", key[1], key[2])), by.get((key[0], "kernel", key[1], key[2]))
        out = [cell["condition"], cell["iopolicy"], cell["transport"]]
        for rw in ("randread", "randwrite"):
            out += [fmt(cell[rw], line), flagged(e[rw], cell[rw]) if e else "-", ratio(k[rw], cell[rw]) if k else "-"]
        subflows = next((cell[rw].get("subflows") for rw in ("randread", "randwrite") if cell[rw].get("subflows")), None)
        out.append("+".join(map(str, subflows)) if subflows and not cell["transport"].startswith("tcp") else "-")
        rows.append("| " + " | ".join(out) + " |")
    return head + rows if rows else []


def guest_kernel(res):
    for n in res["notes"]:
        if n.startswith("kernel "):
            return n.split()[1]
    return "?"


def compare_kernels(results):
    """The same guest cells on each kernel asked for, side by side: read and
    write MiB/s (ratio to its condition's line) per cell, and the change
    from the first. A cell one kernel cannot run (the kernel's MPTCP
    without the series) is "-" there."""
    first = results[0]
    kernels = [guest_kernel(r) for r in results]
    lines = ["## The guest cells on each kernel", "",
             f"The same plan on {', '.join(kernels)} (first: {kernels[0]}); MiB/s (ratio to line), and the ratio of each "
             "later kernel's median to the first's.", "",
             "| condition | side | transport | iopolicy | direction | " + " | ".join(kernels) + " | " +
             " | ".join(f"{k} / {kernels[0]}" for k in kernels[1:]) + " |",
             "|" + "---|" * (5 + 2 * len(kernels) - 1)]
    key = lambda c: (c["condition"], c["side"], c["transport"], c["iopolicy"])  # noqa: E731
    by = [{key(c): c for c in r["cells"]} for r in results]
    order = list(dict.fromkeys(key(c) for r in results for c in r["cells"]))
    for k in order:
        line = guest_pairs.line_of(first, k[0])
        for rw in ("randread", "randwrite"):
            ds = [b[k][rw] if k in b else None for b in by]
            if all(d is None or d["mib_s"] is None for d in ds):
                continue
            vals = [fmt(d, line) for d in ds]
            base = ds[0]["mib_s"]["median"] if ds[0] and ds[0]["mib_s"] else None
            ratios = [f"{d['mib_s']['median'] / base:.2f}" if base and d and d["mib_s"] else "-" for d in ds[1:]]
            lines.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {rw[4:]} | " + " | ".join(vals) + " | " + " | ".join(ratios) + " |")
    return "\n".join(lines) + "\n"
