# SPDX-License-Identifier: GPL-2.0-only
"""The guest's lossy cells at two scales, to explain them with numbers.

The guest runs the selftest's lossy condition (1 Gbit, 5 ms, 0.5 % per
path) with rate and delay scaled together, which keeps the
bandwidth-delay product in bytes. That is not all a run depends on: its
length counts in round trips, cubic grows its window with wall-clock
time rather than per round trip, and MPTCP's joins and its retransmission
timer take round trips too. This experiment runs the same lossy read
cells (the engine over TCP and MPTCP, NVMe multipath round-robin, each
followed by its raw control; the kernel host over TCP) on the guest's
4 paths at 40 Mbit / 125 ms (the matrix's scale) and at 20 Mbit / 250 ms
(the same bytes in flight, half the rate, twice the round trip, and the
run twice as long so it spans the same number of round trips), and at
40 Mbit with the longer run (twice the round trips). Every run records
the kernel's TCP and MPTCP counters of both namespaces, the second half's
rate on its own (whether the run was still ramping up) and the emulated
CPU's busy fraction; then the engine over MPTCP at QD32 and QD128 beside
its raw control (whether the commands in flight bound the cell)."""
import guest
from seed000 import PUBLISHED, mbit_to_mib_s

CELLS = [("engine", "tcp", "round-robin"), ("kernel", "tcp", "round-robin"), ("engine", "mptcp", "round-robin")]
SHAPES = (  # (label, rate per path, runtime, ramp): the second keeps the first's round trips per run
    ("40 Mbit, 8 s", 40, 8, 3),
    ("20 Mbit, 16 s", 20, 16, 6),
    ("40 Mbit, 16 s", 40, 16, 6),
)
# The counters the table shows, per MiB moved (reads: the target sends).
SHOWN = (("target.Tcp.RetransSegs", "TCP retransmitted segments"),
         ("target.MPTcpExt.MPTCPRetrans", "MPTCP-level retransmissions"),
         ("host.MPTcpExt.OFOQueue", "MPTCP out-of-order queued"),
         ("host.TcpExt.TCPOFOQueue", "TCP out-of-order queued (subflows)"),
         ("target.TcpExt.TCPTimeouts", "retransmission timeouts"))


def run(runs, work, kernel="6.12"):
    out = []
    for label, rate, runtime, ramp in SHAPES:
        shape = guest.Shape(rate_mbit=rate, runtime=runtime, ramp=ramp, conditions=("lossy",), rws=("randread",),
                            cells=CELLS + [("raw", t, p) for side, t, p in CELLS if side == "engine"])
        print(f"  scale: {label} ({shape.delay_ms:g} ms)", flush=True)
        res = guest.execute(shape, min(runs, 3), work, kernel, name=f"scale{rate}-{runtime}")
        res["label"] = label
        out.append(res)
    # The depth check: the engine over MPTCP at 4 times the queue depth,
    # beside QD32 and their raw controls, at the first scale.
    depth_cells = [("engine", "mptcp", "round-robin"), ("engine", f"mptcp-qd{DEEP}", "round-robin"),
                   ("raw", "mptcp", "round-robin")]
    label, rate, runtime, ramp = SHAPES[0]
    print(f"  scale: {label}, MPTCP at QD32 and QD{DEEP}", flush=True)
    depth = guest.execute(guest.Shape(rate_mbit=rate, runtime=runtime, ramp=ramp, conditions=("lossy",), rws=("randread",),
                                      cells=depth_cells), min(runs, 3), work, kernel, name="depth")
    depth["label"] = label
    return {"shapes": out, "depth": depth}


DEEP = 128  # the depth check's iodepth per job (the seed's guest workload: 32)


def per_mib(cell, key, seconds):
    """The counter's median over the runs, per MiB a run moved in `seconds`
    (the counters cover the ramp too: an upper bound)."""
    d = cell["randread"]
    if not d["mib_s"]:
        return None
    vals = sorted(c.get(key, 0) for c in d["kernel_counters"])
    moved = d["mib_s"]["median"] * seconds
    return vals[len(vals) // 2] / moved if moved else None


def report(res):
    pub_line = mbit_to_mib_s(4000)
    lines = ["## The lossy guest cells at two scales", "",
             "The guest's lossy condition (0.5 % loss per path and direction, delay scaled with the rate from the "
             "selftest's 5 ms at 1 Gbit) on 4 paths: 40 Mbit / 125 ms, 20 Mbit / 250 ms with twice the run (the same "
             "bytes in flight and round trips per run), and 40 Mbit with twice the run. 128 KiB random reads, 2 jobs x "
             "QD32, NVMe multipath round-robin; raw: the engine's connections over bare sockets right after each "
             f"engine run. Inside the qemu lab guest (Linux {guest.guest_kernel(res['shapes'][0])}), cubic on every path "
             "(mpnvme-lab --cc cubic), the selftest's MPTCP endpoints (--endpoints all). MiB/s medians (ratio to line); "
             "late: the second half of each run alone.", "",
             "| scale | warm-up s | round trips per run | engine tcp | kernel tcp | raw tcp | engine mptcp | raw mptcp | "
             "engine mptcp late | raw mptcp late | published tcp / mptcp |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    cpu = ["", "The emulated CPU's busy fraction over each run's measured window (its last seconds; medians; near 1: the "
           "emulation, not the paths, is the limit):",
           "", "| scale | engine tcp | kernel tcp | raw tcp | engine mptcp | raw mptcp |", "|---|---|---|---|---|---|"]
    ctr = ["", "Kernel counters per MiB moved (medians of the runs, counted over ramp and run; reads, so the target sends):", "",
           "| scale | cell | " + " | ".join(name for _, name in SHOWN) + " |", "|---|---|" + "---|" * len(SHOWN)]
    pub_tcp, pub_mptcp = PUBLISHED[("tcp", "round-robin", "lossy")][0], PUBLISHED[("mptcp", "round-robin", "lossy")][0]
    for s in res["shapes"]:
        line = s["line_mib_s"]
        by = {(c["side"], c["transport"]): c for c in s["cells"]}

        def cellv(side, tr, key="mib_s"):
            c = by.get((side, tr))
            d = c and c["randread"].get(key)
            return f"{d['median']:.1f} ({d['median'] / line:.2f})" if d else "-"

        rtts = s["runtime_s"] / (2 * s["delay_ms"] / 1000)
        lines.append(f"| {s['label']} ({s['delay_ms']:g} ms) | {s['ramp_s']} | {rtts:.0f} | {cellv('engine', 'tcp')} | {cellv('kernel', 'tcp')} | "
                     f"{cellv('raw', 'tcp')} | {cellv('engine', 'mptcp')} | {cellv('raw', 'mptcp')} | "
                     f"{cellv('engine', 'mptcp', 'late_mib_s')} | {cellv('raw', 'mptcp', 'late_mib_s')} | "
                     f"{pub_tcp / pub_line:.2f} / {pub_mptcp / pub_line:.2f} |")
        def busy(side, tr):
            c = by.get((side, tr))
            d = c and c["randread"].get("guest_cpu_busy")
            return f"{d['median']:.2f}" if d else "-"

        cpu.append(f"| {s['label']} | {busy('engine', 'tcp')} | {busy('kernel', 'tcp')} | {busy('raw', 'tcp')} | "
                   f"{busy('engine', 'mptcp')} | {busy('raw', 'mptcp')} |")
        for side, tr in (("engine", "tcp"), ("raw", "tcp"), ("engine", "mptcp"), ("raw", "mptcp")):
            c = by.get((side, tr))
            if c:
                vals = [per_mib(c, k, s["runtime_s"] + s["ramp_s"]) for k, _ in SHOWN]
                ctr.append(f"| {s['label']} | {side} {tr} | " + " | ".join("-" if v is None else f"{v:.2f}" for v in vals) + " |")
    return "\n".join(lines + cpu + ctr + depth_table(res.get("depth"))) + "\n"


def depth_table(d):
    """Engine MPTCP at QD32 and at 4x that, beside the raw control: whether
    the commands in flight, not the transport or the CPU, bound the cell."""
    if not d:
        return []
    line = d["line_mib_s"]
    by = {(c["side"], c["transport"]): c["randread"] for c in d["cells"]}

    def v(side, tr, key="mib_s"):
        x = by.get((side, tr), {}).get(key)
        return f"{x['median']:.1f} ({x['median'] / line:.2f})" if x else "-"

    def busy(side, tr):
        x = by.get((side, tr), {}).get("guest_cpu_busy")
        return f"{x['median']:.2f}" if x else "-"

    return ["", f"Queue depth at {d['label']} (lossy, MPTCP round-robin, 2 jobs): MiB/s (ratio to line), the emulated "
            "CPU's busy fraction.", "",
            "| cell | MiB/s | CPU busy |", "|---|---|---|",
            f"| engine QD32 | {v('engine', 'mptcp')} | {busy('engine', 'mptcp')} |",
            f"| engine QD{DEEP} | {v('engine', f'mptcp-qd{DEEP}')} | {busy('engine', f'mptcp-qd{DEEP}')} |",
            f"| raw control | {v('raw', 'mptcp')} | {busy('raw', 'mptcp')} |"]
