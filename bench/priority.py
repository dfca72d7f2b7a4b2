# SPDX-License-Identifier: GPL-2.0-only
"""Priority pairs under contention (nvme-tcp: Set SO_PRIORITY for
all sockets). A QD1 4 KiB latency job beside a 128 KiB QD32 bulk job on one
shaped path, in both directions, TCP and MPTCP.

The path is HTB at the line rate with two classes (mpnvme-lab --classes):
what the nftables rule matches goes first. Writes are classified where they
leave the host, by skb->priority (the latency job's sk_priority=io:6).
Reads leave the target: the latency job sets tos=io:0xb8 (DSCP EF), the
target answers each connection with the TOS of its SYN (--reflect-tos) and
the target's side is classified by DSCP. A third case marks writes with
both priority and TOS: Linux MPTCP subflows lose SO_PRIORITY once IP_TOS is
set (docs/measurements.md, "Socket priority and TOS"), TCP keeps it.

Conditions, each the latency job's clat p50/p99/p99.9 as a ratio to idle:
  idle       the latency job alone on the path
  contended  with the bulk job, the latency job unmarked (one FIFO)
  classes    with the bulk job, the latency job marked (its own class)
  separate   the bulk job on a second path of the same rate: no shared
             queue at all, only the shared CPUs. The best any network
             priority can do on this machine; `classes` is also given as a
             ratio to it.
No MPTCP endpoints: each connection stays on its path.

Where the bytes went is measured too: the HTB classes' own byte counters on
the classifying side, per run. They tell whether the marking reached the
classifier (the latency job's bytes in the first-served class when marked,
none there when not) whatever the machine's load does to the latencies."""
import os
import re

import common
import fio_logs

NQN = "nqn.2026-11.io.mpnvme:priority"
RATE_MBIT = 1000
EF = "0xb8"
BULK_LOG_MS = 100  # the bulk job's bandwidth log: rows even in 1 s smoke runs
# case: (direction, lab --classes, the latency job's marking)
CASES = {
    "write, sk_priority": ("write", "priority:6", ["--sk_priority=io:6"]),
    "write, sk_priority + tos": ("write", "priority:6", ["--sk_priority=io:6", f"--tos=io:{EF}"]),
    "read, tos reflected": ("read", "dscp:ef", [f"--tos=io:{EF}"]),
}
CONDITIONS = ("idle", "contended", "classes", "separate")
PERCENTILES = (("p50", "50.000000"), ("p99", "99.000000"), ("p99.9", "99.900000"))


class ClassesLab:
    """Two paths of rate_mbit with --classes MATCH; mpnvme-target on both."""

    def __init__(self, name, match, work, rate_mbit=RATE_MBIT):
        self.name, self.work = name, work
        common.lab(name, "up", "--paths", "2", "--rate", f"{rate_mbit}mbit", "--classes", match, "--cc", "cubic",
                   "--no-mptcp-endpoints")
        self.target = None

    def serve(self, transport):
        self.stop_target()
        self.target = common.start_lab_target(self.name, common.TARGET, 2, NQN, "ram:1g",
                                              self.work / f"target-{self.name}-{transport}.log",
                                              ("--transport", transport, "--reflect-tos"))

    def stop_target(self):
        if self.target:
            common.stop(self.target)
            self.target = None

    def close(self):
        self.stop_target()
        common.lab_down(self.name)


def class_bytes(lab, side, dev):
    """The bytes HTB's first-served class (1:10) and default class (1:20)
    have sent on DEV in the lab's SIDE namespace, as tc counts them."""
    shown = common.lab(lab, "exec", side, "tc", "-s", "class", "show", "dev", dev)
    # Text: Debian 12's tc prints no JSON for classes. Each class is
    # "class htb 1:10 parent ..." with " Sent N bytes ..." on the next line.
    sent = {m[1]: int(m[2]) for m in re.finditer(r"^class htb (\S+) .*\n Sent (\d+) bytes", shown, re.M)}
    if "1:10" not in sent or "1:20" not in sent:
        common.die(f"{side} {dev}: no HTB classes 1:10 and 1:20 (mpnvme-lab --classes): {sorted(sent)}")
    return {"first": sent["1:10"], "rest": sent["1:20"]}


def fio_run(lab, tag, transport, direction, condition, marking, runtime):
    """One run; returns the latency job's percentiles (us), its IOPS, the
    bulk job's MiB/s and the latency job's clat log (every I/O)."""
    out, log = lab.work / f"{tag}.json", lab.work / f"{tag}-lat"
    rw = "randread" if direction == "read" else "randwrite"
    common_opts = [f"--ioengine=external:{common.ENGINE}", f"--subnqn={NQN}", f"--transport={transport}", "--size=1g",
                   "--time_based=1", f"--runtime={runtime}", "--ramp_time=1"]
    lat = ["--name=latency", "--traddr=10.1.1.1", f"--rw={rw}", "--bs=4k", "--iodepth=1", f"--write_lat_log={log}",
           "--log_avg_msec=0", *(marking if condition != "contended" else [])]
    bw = lab.work / f"{tag}-bulk"
    bulk = ["--name=bulk", f"--traddr=10.1.{2 if condition == 'separate' else 1}.1", f"--rw={direction}", "--bs=128k",
            "--iodepth=32", "--sk_priority=0", f"--write_bw_log={bw}", f"--log_avg_msec={BULK_LOG_MS}"]
    cmd = [*common.lab_fio(lab.name), *common_opts, "--output-format=json", f"--output={out}", *lat,
           *(bulk if condition != "idle" else [])]
    # Writes are classified where they leave the host, reads at the target.
    side, dev = ("host", "h1") if direction == "write" else ("target", "t1")
    before = class_bytes(lab.name, side, dev)
    common.run_fio(cmd, tag, cwd=lab.work)
    after = class_bytes(lab.name, side, dev)
    jobs = {j["jobname"]: j for j in fio_logs.fio_json(out)["jobs"]}
    d = jobs["latency"][direction]
    pct = {k: d["clat_ns"]["percentile"][f] / 1000 for k, f in PERCENTILES}
    # Bytes over time from the bandwidth log, as everywhere in the bench.
    bulk_mib_s = fio_logs.steady_mib_s(sorted(lab.work.glob(f"{tag}-bulk_bw.*.log")), BULK_LOG_MS) if "bulk" in jobs else 0.0
    clat_us, times_ms = [], []
    for f in sorted(lab.work.glob(f"{tag}-lat_clat.*.log")):
        rows = fio_logs.log_rows(f)
        clat_us += [ns / 1000 for _, ns in rows]
        times_ms += [t for t, _ in rows]
    # I/Os over time from the same log (every completion is in it).
    if len(times_ms) < 3 or max(times_ms) == min(times_ms):
        common.die(f"{tag}: the latency log has {len(times_ms)} completions, too few to measure")
    iops = (len(times_ms) - 1) / ((max(times_ms) - min(times_ms)) / 1000)
    return {"pct_us": pct, "iops": iops, "bulk_mib_s": bulk_mib_s, "clat_us": clat_us,
            "latency_bytes": d["io_bytes"], "class_bytes": {k: after[k] - before[k] for k in after}}


def run(full, runs, work, smoke=False):
    """smoke: TCP only, one write and one read case, 1 s runs on a 500 Mbit
    path: the functional check make check runs (its sanitizer build under
    make check's load moved 91 MiB/s of 128 KiB reads, short of a gigabit:
    nothing queued, and the classes had nothing to reorder)."""
    runtime = 10 if full else 1 if smoke else 3
    rate = 500 if smoke else RATE_MBIT
    transports = ("tcp",) if smoke else ("tcp", "mptcp")
    cases = {k: v for k, v in CASES.items() if not smoke or k != "write, sk_priority + tos"}
    res = {"rate_mbit": rate, "runtime_s": runtime, "cells": []}
    name = f"p{os.getpid()}"
    for match in ("priority:6", "dscp:ef"):
        lab = ClassesLab(f"{name}{match[0]}", match, work, rate)
        try:
            for transport in transports:
                lab.serve(transport)
                for case, (direction, m, marking) in cases.items():
                    if m != match:
                        continue
                    cell = {"transport": transport, "case": case, "direction": direction, "classes": match,
                            "marking": marking, "conditions": {}}
                    for cond in CONDITIONS:
                        rows = [fio_run(lab, f"{transport}-{direction}-{len(res['cells'])}-{cond}-{i}", transport,
                                        direction, cond, marking, runtime) for i in range(runs)]
                        cell["conditions"][cond] = {
                            **{k: common.median_spread([r["pct_us"][k] for r in rows]) for k, _ in PERCENTILES},
                            "iops": common.median_spread([r["iops"] for r in rows]),
                            "bulk_mib_s": common.median_spread([r["bulk_mib_s"] for r in rows]),
                            # The latency job's bytes (ramp excluded) and what
                            # each HTB class sent over the whole run (ramp in).
                            "latency_bytes": common.median_spread([r["latency_bytes"] for r in rows]),
                            "first_class_bytes": common.median_spread([r["class_bytes"]["first"] for r in rows]),
                            "rest_class_bytes": common.median_spread([r["class_bytes"]["rest"] for r in rows]),
                            # The CDF of the median run by p99.
                            "clat_us": sorted(sorted(rows, key=lambda r: r["pct_us"]["p99"])[len(rows) // 2]["clat_us"])}
                    c = cell["conditions"]
                    print(f"  {transport} {case}: p99 idle {c['idle']['p99']['median']:.0f} contended "
                          f"{c['contended']['p99']['median']:.0f} classes {c['classes']['p99']['median']:.0f} separate "
                          f"{c['separate']['p99']['median']:.0f} us", flush=True)
                    res["cells"].append(cell)
        finally:
            lab.close()
    return res


def classified_share(condition):
    """The first-served class's bytes per byte of the latency job."""
    return condition["first_class_bytes"]["median"] / max(condition["latency_bytes"]["median"], 1)


def report(res, runs, plots):
    lines = ["## Priority pairs under contention", "",
             f"One mpnvme-lab path of {res['rate_mbit']} Mbit, HTB with a first-served class (mpnvme-lab --classes); "
             f"mpnvme-target on CPU {common.TARGET_CPU} (--reflect-tos), fio on CPU {common.FIO_CPU}. Latency job: 4 KiB "
             "QD1; bulk job: 128 KiB QD32 at priority 0, same direction. Writes are classified on the host by "
             "skb->priority, reads on the target by DSCP (TOS reflected from the host's SYN). "
             f"{res['runtime_s']} s per run, medians of {runs}. Cells: the latency job's clat in us (ratio to idle); "
             "`separate` puts the bulk job on a second path of the same rate: only the CPUs are shared, the floor any "
             "network priority can reach here.", "",
             "The last column is where the bytes went: what the first-served class sent over each run, as tc counts "
             "it, per byte the latency job moved after its ramp: none when unmarked; when the marking reaches the "
             "classifier at least 1 (headers and the ramp's bytes count too).", "",
             "| transport | case | | idle | contended | classes | separate | classes / separate | "
             "bulk MiB/s (contended, classes) | first class / latency bytes (contended, classes) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in res["cells"]:
        k = c["conditions"]
        for p, _ in PERCENTILES:
            idle = k["idle"][p]["median"]
            cells = " | ".join(f"{k[cond][p]['median']:.0f} ({k[cond][p]['median'] / idle:.2f})" for cond in CONDITIONS[1:])
            bulk = (f"{k['contended']['bulk_mib_s']['median']:.0f}, {k['classes']['bulk_mib_s']['median']:.0f}"
                    if p == "p50" else "")
            share = (", ".join(f"{classified_share(k[cond]):.2f}" for cond in ("contended", "classes"))
                     if p == "p50" else "")
            lines.append(f"| {c['transport'] if p == 'p50' else ''} | {c['case'] if p == 'p50' else ''} | {p} | "
                         f"{idle:.0f} | {cells} | {k['classes'][p]['median'] / k['separate'][p]['median']:.2f} | {bulk} | {share} |")
    lines += ["", "MPTCP with sk_priority and tos on the same socket: Linux MPTCP subflows lose SO_PRIORITY once IP_TOS is "
              "set, so the priority classifier never sees the latency job (the engine warns about it); TCP keeps both. "
              "Classify such traffic by DSCP instead.", ""]
    lines += [f"![{p.stem}]({p.name})" for p in plots]
    return "\n".join(lines) + "\n"


def plot(res, out):
    """Latency CDFs: one panel per transport and case, one line per condition."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cells = res["cells"]
    fig, axes = plt.subplots(2, (len(cells) + 1) // 2, figsize=(5 * ((len(cells) + 1) // 2), 8), squeeze=False)
    for ax, c in zip(axes.flat, cells):
        for cond in CONDITIONS:
            v = c["conditions"][cond]["clat_us"]
            if v:
                ax.plot(v, [(i + 1) / len(v) for i in range(len(v))], label=cond)
        ax.set_xscale("log")
        ax.set_title(f"{c['transport']}: {c['case']}", fontsize=9)
        ax.set_xlabel("clat (us)")
        ax.set_ylabel("fraction of I/Os")
        ax.grid(True, which="both", alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    f = out / "priority-latency-cdf.png"
    fig.savefig(f, dpi=100)
    plt.close(fig)
    return [f]
