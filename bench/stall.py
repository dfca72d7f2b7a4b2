# SPDX-License-Identifier: GPL-2.0-only
"""bench/run stall: how often an MPTCP run starts stalled. Issue 7's notes
saw the first 0.5-2 s of about a third of 4-path MPTCP read runs carry almost
nothing. This counts it: N runs (40) of the selftest's workload (128 KiB random
reads, 4 jobs x QD256, 4 s, no ramp) over MPTCP with NVMe multipath
round-robin on 4 x 1 Gbit paths, under cubic with the selftest's endpoints,
a fresh target connection each run; a run is stalled when its first second
moves less than half the line rate. Each run also records the kernel's
MPTCP and TCP counters (nstat, both namespaces) that the candidate causes
move: MPTCP-level retransmissions, joins, out-of-order and pruned data, so
stalled and clean runs can be set side by side.

--variants adds conditions (one MPTCP connection for all paths, without and
with the engine's mptcp_join_wait=1000; the lab's older endpoint setup, under
cubic and under bbr, this machine's default: the conditions issue 7's runs
had, so the counts before and after the bench's fixes come from one run);
--case TEXT keeps only the cases whose name contains TEXT."""
import os

import common
import conditions
import fio_logs
import samplers
import multipath_lab

def one(lab, tag, traddr_paths, seconds, extra=()):
    """First-second and whole-run MiB/s of one run, with the counters it moved."""
    bwlog = lab.work / f"{tag}-bw"
    out = lab.work / f"{tag}.json"
    for side in ("host", "target"):
        samplers.nstat(lab.name, side)  # reset the history: the next read is this run's
    common.run_fio([*common.lab_fio(lab.name), f"--write_bw_log={bwlog}", "--log_avg_msec=250", "--name=stall",
                    f"--ioengine=external:{common.ENGINE}", f"--traddr={common.lab_paths(traddr_paths)}",
                    f"--subnqn={multipath_lab.NQN}", "--transport=mptcp", "--iopolicy=round-robin", "--rw=randread", "--bs=128k",
                    "--numjobs=4", "--iodepth=256", "--thread=1", "--group_reporting=1", "--time_based=1",
                    f"--runtime={seconds}", "--size=2g", "--output-format=json", f"--output={out}", *extra], tag)
    counters = {side: samplers.nstat(lab.name, side) for side in ("host", "target")}
    per_quarter = fio_logs.log_buckets(lab.work.glob(f"{tag}-bw_bw.*.log"), 250)
    first = sum(per_quarter.get(q, 0) for q in range(1, 5)) / 4
    return {"first_s_mib_s": first, "quarters": [per_quarter.get(q, 0) for q in range(1, 4 * seconds + 1)],
            "counters": counters}


def run(runs, work, variants=False, seconds=4, only=""):
    res = {"runs": runs, "seconds": seconds, "conditions": []}
    cubic = conditions.DEFAULT_CC
    cases = [("round-robin, one connection per path, endpoints all", 4, "all", cubic, ())]
    if variants:
        cases += [("one MPTCP connection, endpoints all", 1, "all", cubic, ()),
                  ("one MPTCP connection, endpoints all, mptcp_join_wait=1000", 1, "all", cubic, ("--mptcp_join_wait=1000",)),
                  ("round-robin, endpoints others", 4, "others", cubic, ()),
                  ("round-robin, endpoints others, bbr", 4, "others", "bbr", ())]
    if only:
        cases = [c for c in cases if only in c[0]]
    for name, traddr_paths, endpoints, cc, extra in cases:
        lab = multipath_lab.MatrixLab(f"s{os.getpid()}{endpoints[:3]}{traddr_paths}{cc[0]}", [1000] * 4, work, cc=cc,
                                endpoints=endpoints)
        try:
            line = lab.line_mib_s()
            tag = f"stall-{cc}-{endpoints}-{traddr_paths}{'-wait' if extra else ''}"
            rows = [one(lab, f"{tag}-{i}", traddr_paths, seconds, extra) for i in range(runs)]
        finally:
            lab.close()
        stalled = [r for r in rows if r["first_s_mib_s"] < line / 2]
        print(f"  {name}: {len(stalled)} of {runs} runs below half the line in their first second", flush=True)
        res["conditions"].append({"case": name, "line_mib_s": line, "stalled": len(stalled), "runs": rows,
                                  **lab.context})
    return res


def report(res):
    lines = ["## MPTCP start-up stalls", "",
             f"{res['runs']} runs of {res['seconds']} s each (128 KiB random reads, 4 jobs x QD256, MPTCP, 4 x 1 Gbit, "
             "cubic unless the case names another); stalled: the first second below half the line rate. Counters: sums over the stalled and the clean "
             "runs (nstat, host and target namespaces).", "",
             "| case | stalled | first second MiB/s median (min..max) | MPTCP retrans (target) stalled / clean |",
             "|---|---|---|---|"]
    for c in res["conditions"]:
        firsts = common.median_spread([r["first_s_mib_s"] for r in c["runs"]])
        half = c["line_mib_s"] / 2
        st = [r for r in c["runs"] if r["first_s_mib_s"] < half]
        ok = [r for r in c["runs"] if r["first_s_mib_s"] >= half]

        def retrans(rows):
            return sum(r["counters"]["target"]["MPTcpExtMPTCPRetrans"] for r in rows)
        lines.append(f"| {c['case']} | {c['stalled']} of {len(c['runs'])} | {common.spread_text(firsts)} | "
                     f"{retrans(st)} / {retrans(ok)} |")
    return "\n".join(lines) + "\n"
