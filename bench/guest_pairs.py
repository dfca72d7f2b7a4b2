# SPDX-License-Identifier: GPL-2.0-only
"""The four host/target pairs of the guest matrix (bench/guest.py with
pairs): the engine and the kernel host, each against mpnvme-target and the
kernel's nvmet, over TCP and MPTCP, as ratios to the line beside their raw
controls and the published figures; how the bytes split over NVMe paths and
over links; and the unequal case (the last path at half the rate). Their
lossy cells' flows and estimates are in guest.loss_table."""

from published import PUBLISHED, mbit_to_mib_s

PAIRS = (("engine", "engine -> mpnvme-target"), ("engine@nvmet", "engine -> nvmet"),
         ("kernel", "kernel -> mpnvme-target"), ("kernel@nvmet", "kernel -> nvmet"))
POLICIES = ("numa", "round-robin", "queue-depth")


def median(d):
    return d["mib_s"]["median"] if d and d.get("mib_s") else None


def ratio(v, line):
    return f"{v / line:.2f}" if v is not None else "-"


def line_of(res, cond):
    """The condition's line rate: unequal has its last path at half."""
    paths = res["paths"] - (0.5 if cond == "unequal" else 0)
    return mbit_to_mib_s(paths * res["rate_mbit"])


def control_of(side, transport):
    """The raw control of a cell: the engine's 2 connections per path, the
    kernel host's one queue per path (-j1)."""
    return transport if side.startswith("engine") else f"{transport}-j1"


def matrix(res, by):
    """Ratios to line: every pair on TCP and MPTCP, raw controls, published."""
    pub_line = mbit_to_mib_s(4000)
    head = " | ".join(f"{name} tcp | {name} mptcp" for _, name in PAIRS)
    lines = ["", "### The four pairs", "",
             f"Ratios to the line ({line_of(res, 'lossless'):.1f} MiB/s). Raw: the same connections over bare sockets "
             "(2 per path as the engine's jobs; -j1: one per path, as the kernel host's one queue on the one vCPU). "
             "Published: the selftest (kernel host and nvmet, 4 x 1 Gbit), tcp / mptcp.", "",
             f"| condition | iopolicy | dir | {head} | raw tcp | raw mptcp | raw tcp-j1 | raw mptcp-j1 | published |",
             "|" + "---|" * 16]
    for cond in ("lossless", "lossy"):
        line = line_of(res, cond)
        for pol in POLICIES:
            if not any(k[0] == cond and k[3] == pol for k in by):
                continue
            for rw in ("randread", "randwrite"):
                row = [cond, pol, rw[4:]]
                for side, _ in PAIRS:
                    for t in ("tcp", "mptcp"):
                        c = by.get((cond, side, t, pol))
                        row.append(ratio(median(c[rw]), line) if c else "-")
                for t in ("tcp", "mptcp", "tcp-j1", "mptcp-j1"):
                    c = by.get((cond, "raw", t, pol))
                    row.append(ratio(median(c[rw]), line) if c else "-")
                pt, pm = PUBLISHED.get(("tcp", pol, cond)), PUBLISHED.get(("mptcp", pol, cond))
                i = 0 if rw == "randread" else 1
                row.append(f"{pt[i] / pub_line:.2f} / {pm[i] / pub_line:.2f}" if pt and pm else "-")
                lines.append("| " + " | ".join(row) + " |")
    return lines


def engine_split(d):
    """The engine's bytes per NVMe path (all jobs), last run."""
    ps = d.get("path_stats") and d["path_stats"][-1]
    if not ps or "bytes" not in ps[0]:
        return None
    by_path = {}
    for p in ps:
        by_path[p["path"]] = by_path.get(p["path"], 0) + p["bytes"]
    return [by_path[k] for k in sorted(by_path)]


def kernel_split(d):
    """The kernel host's I/Os per controller, ordered by target address
    (10.1.i.1: path i), last run."""
    ps = d.get("path_stats") and d["path_stats"][-1]
    if not ps or "reads" not in ps[0]:
        return None
    ps = sorted(ps, key=lambda p: p.get("address", ""))
    return [p["reads"] + p["writes"] for p in ps]


def shares(values):
    total = sum(values or [])
    return "/".join(f"{100 * v / total:.0f}" for v in values) if total else "-"


def splits(res, by, conditions, policies, transports):
    """Per NVMe path and per link, in percent of the run, for each pair."""
    lines = ["| condition | iopolicy | transport | dir | pair | MiB/s (line) | NVMe paths % | links % | transport on the paths |",
             "|---|---|---|---|---|---|---|---|---|"]
    for cond in conditions:
        line = line_of(res, cond)
        for pol in policies:
            for t in transports:
                for rw in ("randread", "randwrite"):
                    for side, name in PAIRS:
                        c = by.get((cond, side, t, pol))
                        if not c or not median(c[rw]):
                            continue
                        d = c[rw]
                        split = engine_split(d) if side.startswith("engine") else kernel_split(d)
                        links = d.get("links") and d["links"][-1]
                        seen = ""
                        if not side.startswith("engine") and d.get("path_stats") and d["path_stats"][-1]:
                            seen = ",".join(sorted({p.get("transport", "?") for p in d["path_stats"][-1]}))
                        lines.append(f"| {cond} | {pol} | {t} | {rw[4:]} | {name} | {median(d):.1f} ({median(d) / line:.2f}) | "
                                     f"{shares(split)} | {shares(links)} | {seen or '-'} |")
    return lines


def unequal(res, by):
    """Round-robin against queue-depth with the last path at half the rate."""
    line = line_of(res, "unequal")
    lines = ["", "### Three paths at full rate, one at half (lossless)", "",
             f"Path {res['paths']} at {res['rate_mbit'] / 2:g} Mbit, the others at {res['rate_mbit']:g}: line "
             f"{line:.1f} MiB/s. A policy that spreads commands evenly over NVMe paths waits for the slow one; "
             "MPTCP spreads each connection over every link whatever the policy. NVMe paths %: the share of "
             "bytes (engine) or I/Os (kernel host) each controller carried; links %: of the bytes each link carried "
             "(both directions, set-up included).", ""]
    return lines + splits(res, by, ("unequal",), ("round-robin", "queue-depth"), ("tcp", "mptcp"))


def report(res):
    """The pairs' section of the guest report ([] when the run had none)."""
    by = {(c["condition"], c["side"], c["transport"], c["iopolicy"]): c for c in res["cells"]}
    if not any(k[1].endswith("@nvmet") for k in by):
        return []
    lines = matrix(res, by)
    lines += ["", "Bytes per NVMe path and per link, MPTCP and TCP, lossless: with MPTCP every NVMe path's connection "
              "spans every link, so the links share what the policy put on each NVMe path.", ""]
    lines += splits(res, by, ("lossless",), ("round-robin", "queue-depth"), ("tcp", "mptcp"))
    # The lossy cells' flows, retransmissions and flow-count estimate are
    # in guest.loss_table, every pair's among them.
    return lines + unequal(res, by)


