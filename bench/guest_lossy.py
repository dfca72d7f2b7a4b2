# SPDX-License-Identifier: GPL-2.0-only
"""What explains the guest's lossy cells: the engine against its raw
control under real loss (netem, 0.5 % per GSO packet, 125 ms each way on
4 x 40 Mbit, as bench/run guest), varying one thing at a time.

- Queue depth: 2 jobs x QD32 (the matrix's cell: 8 MiB in flight for a 5
  MB bandwidth-delay product) against QD128. A request-bounded sender
  keeps only its commands in flight; the raw control always has more
  bytes queued.
- Path policy: round-robin against queue-depth. Round-robin gives every
  path its share of a job's commands whatever the path does, so a path
  stalled by a loss (a retransmission timeout, or MPTCP holding its
  in-order delivery) collects the job's commands while the other paths
  run dry; queue-depth sends to the path with the fewest in flight.
- Writes: each needs an R2T round trip before its data leaves (a target
  takes 16 KiB in the capsule, nvmet's default). The same write cells with
  the target taking 128 KiB in the capsule (--inline-data-size) show what
  that round trip costs.
Each engine run is followed by its raw control (the same connections over
bare sockets); every run records the kernel's TCP and MPTCP counters of
both namespaces, the lab's drops, the flows on each path and the engine's
most commands in flight per path."""
import guest
import loss_model

DEEP = 128  # the depth check's iodepth per job (the guest matrix's workload: 32)
ENGINE = [("engine", t, p) for t in ("tcp", "mptcp", f"tcp-qd{DEEP}", f"mptcp-qd{DEEP}") for p in ("round-robin", "queue-depth")
          if not (t.endswith(f"qd{DEEP}") and p == "queue-depth")]
# Each engine cell's raw control runs right after it (guest.execute).
CELLS = ENGINE + [("raw", t, p) for _, t, p in ENGINE]
INLINE = [("engine", t, "round-robin") for t in ("tcp", "mptcp")] + [("raw", t, "round-robin") for t in ("tcp", "mptcp")]


def run(runs, work, kernel="6.12", out=None):
    print("  lossy: depth and policy, reads and writes", flush=True)
    main = guest.execute(guest.Shape(conditions=("lossy",), cells=list(CELLS)), min(runs, 3), work, kernel, name="lossy", out=out)
    print("  lossy: writes with 128 KiB in the capsule (no R2T)", flush=True)
    inline = guest.execute(guest.Shape(conditions=("lossy-inline",), rws=("randwrite",), cells=list(INLINE)), min(runs, 3), work,
                           kernel, name="lossy-inline", out=out)
    return {"main": main, "inline": inline}


def in_flight(d):
    """The most commands one path had in flight at once, over its jobs (last run)."""
    ps = d.get("path_stats") and d["path_stats"][-1]
    return max((p["inflight_max"] for p in ps), default=0) if ps else 0


def counters(d, read):
    """The sender's retransmitted segments, timeouts and MPTCP-level
    retransmissions per MiB it sent (median run)."""
    sender = "target" if read else "host"
    out = []
    for k in ("Tcp.RetransSegs", "TcpExt.TCPTimeouts", "MPTcpExt.MPTCPRetrans"):
        vals = []
        for c in filter(None, d["kernel_counters"]):
            segs = c.get(f"{sender}.Tcp.OutSegs", 0)
            if segs:
                vals.append(c.get(f"{sender}.{k}", 0) / (segs * loss_model.MSS / 1048576))
        out.append(sorted(vals)[len(vals) // 2] if vals else None)
    return out


def report(res):
    m = res["main"]
    line = m["line_mib_s"]
    raw = {(c["transport"], c["iopolicy"], rw): c[rw]["mib_s"] for c in m["cells"] if c["side"] == "raw"
           for rw in ("randread", "randwrite")}
    lines = ["## What explains the lossy guest cells", "",
             f"Inside the qemu lab guest (Linux {guest.guest_kernel(m)}), {m['paths']} x {m['rate_mbit']:g} Mbit (line "
             f"{line:.1f} MiB/s), {m['loss_pct']} % loss per {m.get('loss_unit')} by {m.get('loss_via')} and "
             f"{m['delay_ms']:g} ms each way on every path, cubic, the selftest's MPTCP endpoints; 128 KiB random I/O, "
             f"2 jobs; {m['runtime_s']} s after {m['ramp_s']} s, medians of {m['runs']}. Raw: the same connections over bare "
             "sockets right after each engine run. In flight: the most commands one path held at once. Counters: the "
             "sender's, per MiB it sent.", "",
             "| transport | depth | iopolicy | dir | engine MiB/s (line) | raw | engine / raw | in flight (max per path) | "
             "retrans/MiB | timeouts/MiB | MPTCP retrans/MiB |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in m["cells"]:
        if c["side"] != "engine":
            continue
        tr = c["transport"].split("-")[0]
        depth = c["transport"].split("-qd")[1] if "-qd" in c["transport"] else "32"
        for rw in ("randread", "randwrite"):
            d = c[rw]
            if not d["mib_s"]:
                continue
            v, r = d["mib_s"]["median"], raw.get((c["transport"], c["iopolicy"], rw))
            raw_text = f"{r['median']:.2f} | {v / r['median']:.2f}" if r and r["median"] else "- | -"
            ctr = " | ".join("-" if x is None else f"{x:.2f}" for x in counters(d, rw == "randread"))
            lines.append(f"| {tr} | {depth} | {c['iopolicy']} | {rw[4:]} | {v:.2f} ({v / line:.2f}) | {raw_text} | "
                         f"{in_flight(d)} | {ctr} |")
    inl = res["inline"]
    lines += ["", "Writes with the data in the capsule (the target takes 128 KiB in-capsule, so no R2T round trip), "
              "round-robin, QD32, beside the R2T writes above:", "", "| transport | in-capsule write MiB/s (line) | raw |",
              "|---|---|---|"]
    iraw = {c["transport"]: c["randwrite"]["mib_s"] for c in inl["cells"] if c["side"] == "raw"}
    for c in inl["cells"]:
        if c["side"] == "engine" and c["randwrite"]["mib_s"]:
            v, r = c["randwrite"]["mib_s"]["median"], iraw.get(c["transport"])
            raw_text = f"{r['median']:.2f}" if r else "-"
            lines.append(f"| {c['transport']} | {v:.2f} ({v / line:.2f}) | {raw_text} |")
    return "\n".join(lines) + "\n"

