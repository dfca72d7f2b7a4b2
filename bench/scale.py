# SPDX-License-Identifier: GPL-2.0-only
"""The engine at scale (issue 44): 64 fio jobs on 4 lab paths, each job
an I/O queue (a connection) of its own on every path beside the admin
queue each path's controller has (260 connections), beside the matrix's 4
jobs in the same lab and the same minute. What it shows: whether the engine keeps the line with 16 times
the jobs and connections, what they cost fio and the target in memory and
descriptors, and how long the connections take to come up.

Per transport (NVMe multipath over TCP, round-robin; over MPTCP, one
connection per path) and job count, --runs interleaved runs of 128 KiB
random reads at QD32 per job on 4 x 1 Gbit lossless paths:
  wire      MiB/s the host's paths received over fio's measured window,
            and / line rate
  last job up  the longest time from a job's start until its I/O queue
            on a path was live (the engine's path_stats down_s)
  connections  established to the target's port: TCP connections, and
            for MPTCP its connections with their subflows (ss, in the
            target's namespace), the most seen while the run lasts
  fio, target  peak VmRSS and open descriptors while the run lasts, sampled
            every 0.2 s (fio with thread=1: one process for all jobs)."""
import os
import json
import pathlib
import subprocess
import threading
import time

import common
import progress
from multipath_lab import JOBS, MatrixLab
from soak import proc_usage

SCALE_JOBS = 64
PATHS, RATE_MBIT, IODEPTH = 4, 1000, 32
CELLS = (("tcp", "round-robin"), ("mptcp", "round-robin"))


def find_process(marker):
    """The pid of the fio whose command line holds `marker` (its output file)."""
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"fio") and any(marker.encode() in a for a in cmd):
            return int(d.name)
    return None


def connections(target_ns):
    """(connections, TCP connections) established to the target's port 4420
    in its namespace: MPTCP's connections and their subflows; for TCP the
    two are the same."""
    def count(flag):
        out = subprocess.run(["ip", "netns", "exec", target_ns, "ss", "-Hn", flag, "state", "established",
                              "( sport = :4420 )"], capture_output=True, text=True).stdout
        return len(out.splitlines())
    tcp, mptcp = count("-t"), count("-M")
    return (mptcp or tcp), tcp


class PeakSampler:
    """Peak VmRSS and descriptors of the fio run whose command line holds
    `marker`, and of the target, and the target's connections, every 0.2 s
    until stop()."""

    def __init__(self, marker, target_pid, target_ns):
        self.marker, self.target_pid, self.target_ns = marker, target_pid, target_ns
        self.peak = {"fio": [0.0, 0], "target": [0.0, 0], "connections": [0, 0]}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        fio = None
        while not self.stopping.wait(0.2):
            fio = fio or find_process(self.marker)
            for who, pid in (("fio", fio), ("target", self.target_pid)):
                got = proc_usage(pid) if pid else (None, None)
                if got[0] is not None:
                    self.peak[who] = [max(self.peak[who][0], got[0]), max(self.peak[who][1], got[1])]
            self.peak["connections"] = [max(a, b) for a, b in zip(self.peak["connections"], connections(self.target_ns))]

    def stop(self):
        self.stopping.set()
        self.thread.join()
        return self.peak


def one(lab, tag, transport, iopolicy, jobs, runtime, ramp):
    sampler = PeakSampler(f"{tag}.json", lab.target.pid, common.lab(lab.name, "names").split()[1])
    started = time.monotonic()
    r = lab.fio(tag, transport, iopolicy, "randread", runtime, ramp, extra=[f"--numjobs={jobs}"])
    wall = time.monotonic() - started
    peak = sampler.stop()
    # Each path's time down counts from the job's start until its I/O queue
    # was live: the longest is when the last job could begin.
    stats = [json.loads(line) for line in (lab.work / f"{tag}-paths.jsonl").read_text().splitlines()]
    return {"wire_mib_s": r["wire"], "last_up_s": max(p["down_s"] for s in stats for p in s["paths"]), "wall_s": wall,
            "fio_rss_mib": peak["fio"][0], "fio_fds": peak["fio"][1], "target_rss_mib": peak["target"][0],
            "target_fds": peak["target"][1], "connections": peak["connections"][0], "subflows": peak["connections"][1],
            "bytes": r["bytes"]}


def run(runs, work, smoke=False):
    """Every cell (transport x job count), the runs of the two job counts
    interleaved so that both see the same lab state."""
    runtime, ramp = (3, 2) if smoke else (15, 5)
    jobs_counts = (JOBS, 16 if smoke else SCALE_JOBS)
    lab = MatrixLab(f"b{os.getpid()}scale", [RATE_MBIT] * PATHS, work, iodepth=IODEPTH)
    bar = progress.Progress("scale", len(CELLS) * len(jobs_counts) * runs)
    res = {"paths": PATHS, "rate_mbit": RATE_MBIT, "iodepth": IODEPTH, "runtime_s": runtime, "ramp_s": ramp,
           "line_mib_s": lab.line_mib_s(), "context": lab.context, "cells": []}
    try:
        n = 0
        for transport, pol in CELLS:
            rows = {j: [] for j in jobs_counts}
            for i in range(runs):
                for j in jobs_counts:
                    bar.step(n, f"{transport}, {j} jobs, run {i + 1}")
                    rows[j].append(one(lab, f"scale-{transport}-{j}-{i}", transport, pol, j, runtime, ramp))
                    n += 1
            for j in jobs_counts:
                res["cells"].append({"transport": transport, "iopolicy": pol, "jobs": j, "runs": rows[j]})
        bar.done()
    finally:
        lab.close()
    return res


def report(res):
    """The Markdown table: medians of the runs with their spread."""
    line = res["line_mib_s"]
    lines = [f"{res['paths']} x {res['rate_mbit']} Mbit lossless lab paths, 128 KiB random reads, QD{res['iodepth']} per "
             f"job, {res['runtime_s']} s after a {res['ramp_s']} s ramp per job; the engine against mpnvme-target (RAM "
             f"namespace); {res['context'].get('cc', '?')}. Medians of {len(res['cells'][0]['runs'])} run(s), "
             "median (min..max). The wire is what the host's paths received over fio's measured window; fio's own "
             "figures are not used: each job's clock starts when its own queues are up, so with jobs starting "
             "apart their per-job rates do not add up to a rate of the whole.", "",
             "| transport | jobs | connections | wire MiB/s | / line | last job up (s) | fio run (s) | fio RSS (MiB) | "
             "fio fds | target RSS (MiB) | target fds |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in res["cells"]:
        def m(key, digits=0):
            vals = [r[key] for r in c["runs"] if r[key] is not None]
            return common.spread_text(common.median_spread(vals), digits) if vals else "-"
        wire = common.median_spread([r["wire_mib_s"] for r in c["runs"]])["median"]
        sub = f" ({m('subflows')} subflows)" if c["transport"] == "mptcp" else ""
        lines.append(f"| {c['transport']} {c['iopolicy']} | {c['jobs']} | {m('connections')}{sub} | {m('wire_mib_s')} | "
                     f"{wire / line:.2f} | {m('last_up_s', 1)} | {m('wall_s')} | {m('fio_rss_mib', 1)} | {m('fio_fds')} | "
                     f"{m('target_rss_mib', 1)} | {m('target_fds')} |")
    return "\n".join(lines) + "\n"
