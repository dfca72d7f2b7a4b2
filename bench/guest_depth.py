# SPDX-License-Identifier: GPL-2.0-only
"""NVMe over lossy MPTCP at the published depth, in the qemu kernel lab.

The upstream selftest runs 4 jobs x iodepth 256 x 128 KiB: 128 MiB in
flight, 25 times the bandwidth-delay product of its 4 paths. The guest's
paths (4 x 40 Mbit, 125 ms each way, 0.5 % loss per GSO packet by netem)
keep that product per path, so the same depth means the same thing here.

Cases (--case picks by name; each runs in a guest boot of its own):
- cpu: the published depth, round-robin, reads and writes: the engine
  (its default poll=hybrid and poll=block), its raw control (16
  connections over bare sockets, as the engine's 4 jobs x 4 paths) and
  the kernel host, each with where the guest's CPU went in the measured
  window (fio, mpnvme-target, the raw control, kworkers, softirq). It
  decides whether the emulated CPU, not the network, limits a cell.
- sweep-mptcp, sweep-tcp (--case sweep runs both, a guest boot each): line
  share against commands in flight, 4 jobs x QD 32, 64, 128, 256; reads
  and writes; round-robin and queue-depth; the engine and the kernel host;
  the transport's raw control (16 connections) beside them; reported as
  one sweep, drawn with the bandwidth-delay product and the service-time
  model.
- headline: the published depth over MPTCP round-robin, the engine with
  its 4 jobs and at the kernel host's flows, the kernel host, raw controls.
- tcp: lossy TCP at the published depth, both hosts, raw control.
- equal: the same flows on both hosts: one connection per path each (the
  kernel host opens one I/O queue per path and vCPU), 1024 commands in
  flight each (the engine one job at QD1024, the kernel host 4 x 256).
- inline: writes with 128 KiB in the capsule on both targets
  (mpnvme-target --inline-data-size, nvmet's param_inline_data_size by
  mpnvme-nvmet apply), both hosts, with the PDUs seen on the wire.
- host: the cross-check on this machine's own CPUs, not emulated: the
  selftest's 4 x 1 Gbit paths and loss in an mpnvme-lab of the host (no
  delay: this kernel has no netem), the engine at the published depth over
  MPTCP round-robin beside its raw control, with fio's and mpnvme-target's
  CPU per GiB. Where the engine meets its raw control here but not in the
  guest, the guest's gap is its CPU.
Each engine run against mpnvme-target is followed by its raw control in
the same lab state, but in the sweep (one raw control per transport)."""
import dataclasses
import os
import pathlib
import re

import guest
import matrix
import multipath_lab

PUBLISHED_JOBS, PUBLISHED_DEPTH = 4, 256
DEEP = f"j{PUBLISHED_JOBS}-qd{PUBLISHED_DEPTH}"
SWEEP_DEPTHS = (32, 64, 128, 256)
BLOCK = 128 * 1024
# The guest's memory at depth. Linux's tcp_mem (one limit on the socket
# buffers of both lab namespaces: they share the guest's kernel) is a
# sixteenth of its pages to pressure: under 96 MiB at the guest bench's
# 1536 MiB, under the 128 MiB the published depth keeps in flight. At
# 1536 the deepest cells met memory pressure (TCPMemoryPressures, pruned
# out-of-order queues) and fell in their second half. A machine with
# 16 GiB has up to 1 GiB before pressure; 4 GiB gives the guest up to
# 256 MiB.
DEPTH_MEM_MIB = 4096


def cpu_cells(smp):
    out = []
    for t in ("mptcp",):
        out += [("engine", f"{t}-{DEEP}", "round-robin"), ("engine", f"{t}-{DEEP}-pblock", "round-robin"),
                ("kernel", f"{t}-{DEEP}", "round-robin")]
    return out + [("raw", t, p) for s, t, p in out if s == "engine"]


def sweep_cells(transport):
    """One transport's half of the sweep: each half boots a guest of its
    own, so either can be run, or run again, alone (--case sweep-tcp)."""
    def cells(smp):
        out = []
        for qd in SWEEP_DEPTHS:
            for pol in ("round-robin", "queue-depth"):
                out += [(side, f"{transport}-j{PUBLISHED_JOBS}-qd{qd}", pol) for side in ("engine", "kernel")]
        # The raw control depends on neither depth nor policy: one per
        # transport, 4 connections per path as the engine's 4 jobs.
        return out + [("raw", f"{transport}-j{PUBLISHED_JOBS}", "round-robin")]
    return cells


def at_kernel_flows(smp):
    """The engine cell with the kernel host's connections (one per path per
    vCPU: its I/O queues) and the published depth's commands in flight."""
    return f"mptcp-j{smp}-qd{PUBLISHED_JOBS * PUBLISHED_DEPTH // smp}"


def equal_cells(smp):
    """The same flows on both hosts, the same commands in flight."""
    out = []
    for pol in ("round-robin", "queue-depth"):
        out += [("engine", at_kernel_flows(smp), pol), ("kernel", f"mptcp-{DEEP}", pol)]
    return out + [("raw", t, p) for s, t, p in out if s == "engine"]


def headline_cells(smp):
    """The published depth over MPTCP round-robin: the engine (4 jobs, 4
    connections per path), the engine at the kernel host's flows (one
    connection per path per vCPU, the same 1024 commands in flight) and
    the kernel host, with the engine cells' raw controls."""
    out = [("engine", f"mptcp-{DEEP}", "round-robin"), ("engine", at_kernel_flows(smp), "round-robin"),
           ("kernel", f"mptcp-{DEEP}", "round-robin")]
    return out + [("raw", t, p) for s, t, p in out if s == "engine"]


def tcp_cells(smp):
    """Lossy TCP at the published depth, beside the published 0.30 / 0.21."""
    out = [("engine", f"tcp-{DEEP}", "round-robin"), ("kernel", f"tcp-{DEEP}", "round-robin")]
    return out + [("raw", t, p) for s, t, p in out if s == "engine"]


def inline_cells(smp):
    out = [(side, f"mptcp-{DEEP}", "round-robin") for side in ("engine", "kernel", "engine@nvmet", "kernel@nvmet")]
    return out + [("raw", f"mptcp-{DEEP}", "round-robin")]  # run after each engine run against mpnvme-target


# name: (cells, conditions, directions)
CASES = {"cpu": (cpu_cells, ("lossy",), ("randread", "randwrite")),
         "headline": (headline_cells, ("lossy",), ("randread", "randwrite")),
         "tcp": (tcp_cells, ("lossy",), ("randread", "randwrite")),
         "sweep-mptcp": (sweep_cells("mptcp"), ("lossy",), ("randread", "randwrite")),
         "sweep-tcp": (sweep_cells("tcp"), ("lossy",), ("randread", "randwrite")),
         "equal": (equal_cells, ("lossy",), ("randread", "randwrite")),
         "inline": (inline_cells, ("lossy-inline",), ("randwrite",))}


def stretched_timeouts(shape):
    """Both hosts' I/O and keep-alive timeouts in seconds: the kernel's
    defaults (30 s, 5 s) stretched as the lab stretches time. The lab keeps
    the selftest's bandwidth-delay product per path at a 25th of its rate,
    so the published depth's queue drains 25 times slower: lossy TCP at a
    fifth of line holds a command for 128 MiB / 3.8 MiB/s, about 34 s,
    which the selftest's paths drain in 1.4 s. At 30 s both hosts time
    commands out and reset paths in the middle of a cell, and the cell
    measures the timeout, not the transport. A keep-alive of 5 s is 20 of
    this lab's round trips (1000 of the selftest's): the kernel host's
    keep-alives failed in every lossy TCP run and reset its controllers."""
    return {"io_timeout_s": int(30 * shape.scale), "kato_s": int(5 * shape.scale)}


def host_cross_check(runs, work):
    """The cpu case's engine cell and its raw control on this machine's
    lab: the selftest's 4 x 1 Gbit and 0.5 % loss per GSO packet (nft:
    this kernel has no netem, so no delay), cubic, its endpoints."""
    lab = multipath_lab.MatrixLab(f"dh{os.getpid()}", [1000] * guest.PATHS, work, loss=guest.LOSS_PCT,
                                  iodepth=PUBLISHED_DEPTH, loss_unit="packet", endpoints="all")
    try:
        return matrix.cell(lab, "depth-host", "mptcp", "round-robin", runs, 15, 5, "lossy")
    finally:
        lab.close()


def run(runs, work, kernel, case="", smp=1, keep=None, out=None):
    """keep(out) is called after each case, so a long run that is stopped
    keeps the cases it finished in results.json."""
    out = {}
    if case == "host":
        print(f"  depth: host cross-check (this machine's lab, {runs} run(s))", flush=True)
        out["host"] = host_cross_check(runs, work)
    for name, (cells, conditions, rws) in CASES.items():
        if case and case not in name:
            continue
        # The sweep is one run per point (its curve is the repetition); the
        # others take the runs asked for (bench/run's default: 3).
        sweep = name.startswith("sweep")
        n = 1 if sweep else runs
        shape = guest.Shape(conditions=conditions, rws=rws, cells=cells(smp), runtime=15, ramp=5, smp=smp)
        # The sweep's raw controls are one per transport (they depend on
        # neither depth nor policy): not one after each of its engine runs.
        shape = dataclasses.replace(shape, raw_after_engine=not sweep, mem_mib=DEPTH_MEM_MIB,
                                    **stretched_timeouts(shape))
        print(f"  depth: {name} ({len(shape.cells)} cells x {len(rws)} directions x {n} run(s), {smp} vCPU)", flush=True)
        out[name] = guest.execute(shape, n, work, kernel, name=f"depth-{name}", out=out)
        if keep:
            keep(out)
    return out


def last(d, key):
    return next((x for x in reversed(d.get(key) or []) if x), None)


def roles_text(d):
    """The last run's CPU split: busy, then the roles that used any of it."""
    r = last(d, "cpu_roles")
    if not r or "roles" not in r:
        return "-"
    parts = [f"{k} {v:.2f}" for k, v in r["roles"].items() if v >= 0.01]
    return f"busy {r['busy']:.2f}, softirq {r['softirq']:.2f}; of task time: " + ", ".join(parts)


def flows_text(d):
    f = last(d, "flows")
    return "/".join(map(str, f["flows"])) if f else "-"


def pdus_text(d):
    p = last(d, "pdus")
    return ", ".join(f"{k} {v}" for k, v in sorted(p.items())) if p else "-"


def pressure_flag(d):
    """" [!tcp memory pressure in N of M]" where the guest's kernel entered
    TCP memory pressure (tcp_mem) during a run: its sockets' buffers were
    clamped and out-of-order queues pruned, which the paths did not do."""
    runs = [k for k in d.get("kernel_counters") or [] if k is not None]
    hit = sum(1 for k in runs if k.get("host.TcpExt.TCPMemoryPressures", 0) + k.get("target.TcpExt.TCPMemoryPressures", 0))
    return f" [!tcp memory pressure in {hit} of {len(runs)}]" if hit else ""


def raw_for(res, cell):
    """The raw control a cell is set beside: the kernel host's is the one
    with its connections (one per path per vCPU) where the plan has it;
    an engine cell's its own (run right after it, the poll mode aside);
    else the transport's 4-per-path one."""
    raws = {c["transport"]: c for c in res["cells"] if c["side"] == "raw"}
    t = cell["transport"].replace("-pblock", "")
    if cell["side"].startswith("kernel") and t.startswith("mptcp") and at_kernel_flows(res.get("smp", 1)) in raws:
        return raws[at_kernel_flows(res.get("smp", 1))]
    return raws.get(t) or raws.get(f"{t.split('-')[0]}-j{PUBLISHED_JOBS}")


def table(res, with_pdus=False):
    line = res["line_mib_s"]
    rows = ["| side | cell | iopolicy | dir | in flight | MiB/s (line) [min..max] | / raw | model (bound) | held per command (RTTs) | flows per path | CPU |"
            + (" PDUs seen |" if with_pdus else ""), "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if with_pdus else "")]
    for c in res["cells"]:
        raw = raw_for(res, c) if c["side"] != "raw" else None
        for rw in ("randread", "randwrite"):
            d = c[rw]
            if d is None or d.get("failed") == ["not run"]:
                continue
            m = d["mib_s"]
            val = guest.fmt(d, line) + (f" [{m['min']:.1f}..{m['max']:.1f}]" if m and len(m["runs"]) > 1 else "") + pressure_flag(d)
            r = raw[rw]["mib_s"] if raw and raw[rw] else None
            ratio = f"{m['median'] / r['median']:.2f}" if m and r and r["median"] else "-"
            rows.append(f"| {c['side']} | {c['transport']} | {c['iopolicy']} | {rw[4:]} | "
                        f"{guest.inflight_of(c['transport']) if c['side'] != 'raw' else '-'} | {val} | {ratio} | "
                        f"{model_text(res, c, rw) if c['side'] != 'raw' else '-'} | {held_text(res, c, rw) if c['side'] != 'raw' else '-'} | "
                        f"{flows_text(d)} | "
                        f"{roles_text(d)} |" + (f" {pdus_text(d)} |" if with_pdus else ""))
    return rows


# What every connect and disconnect says: left out of the events.
ROUTINE = re.compile(r"new ctrl: |creating \d+ I/O queues|mapped \d+/\d+/\d+ default|Removing ctrl: |clamping down|"
                     r"Created nvm controller")


def events(res):
    """The kernel host's nvme messages in each of its cells, summed over the
    runs: the resets and timeouts behind a run that fell short."""
    out = []
    for c in res["cells"]:
        for rw in ("randread", "randwrite"):
            d = c[rw] or {}
            total = {}
            for run in filter(None, d.get("kernel_events") or []):
                for msg, n in run.items():
                    if not ROUTINE.search(msg):
                        msg = re.sub(r"tag \d+ \(\w+\)", "tag T", msg)  # one line per command tag otherwise
                        total[msg] = total.get(msg, 0) + n
            if total:
                out.append(f"- {c['side']} {c['transport']} {c['iopolicy']} {rw[4:]}: "
                           + "; ".join(f"{m} x{n}" for m, n in sorted(total.items(), key=lambda x: -x[1])[:6]))
    return ["", "The kernel host's messages during its runs (dmesg, summed over the runs):", ""] + out if out else []


def stuck(res):
    """The stalled kernel host runs' MPTCP connections (guest-bench.sh's
    kernel_cell: receiver and sender side by side)."""
    out = [f"- {n}" for n in res.get("notes", []) if "-note stuck " in n]
    return ["", "Stalled runs' MPTCP connections with data their receiver cannot read (target side; "
            "bench/mptcp-rcvbuf-stall-repro):", ""] + out if out else []


def timeout_text(res):
    defaults = (guest.Shape.io_timeout_s, guest.Shape.kato_s)  # the kernel's
    t, k = res.get("io_timeout_s", defaults[0]), res.get("kato_s", defaults[1])
    why = f"the kernel's {defaults[0]} s and {defaults[1]} s stretched with the lab's time" if (t, k) != defaults \
        else "the kernel's defaults"
    return f"{t} s, keep-alive {k} s ({why})"


def memory_text(res):
    """The guest's memory and the TCP memory pressure threshold its kernel
    set from it (tcp_mem's second value, pages), where the guest said."""
    mem = f"{res.get('mem_mib', guest.Shape.mem_mib)} MiB"
    tcp_mem = next((n.split()[1:] for n in res.get("notes", []) if n.startswith("tcp_mem ")), None)
    return mem + (f" (TCP memory pressure from {int(tcp_mem[1]) * 4096 / 1048576:.0f} MiB of socket buffers)"
                  if tcp_mem and len(tcp_mem) == 3 else "")


def header(res):
    line = res["line_mib_s"]
    return (f"Linux {guest.guest_kernel(res)} guest, {res.get('smp', 1)} vCPU (TCG), {memory_text(res)}, {res['paths']} x {res['rate_mbit']:g} Mbit "
            f"(line {line:.1f} MiB/s), {res['delay_ms']:g} ms each way, {res['loss_pct']} % loss per {res['loss_unit']} by "
            f"{res['loss_via']}, cubic, the selftest's MPTCP endpoints; 128 KiB random I/O; {res['runtime_s']} s after "
            f"{res['ramp_s']} s, medians of {res['runs']} run(s); both hosts' I/O timeout {timeout_text(res)}. Cells: TRANSPORT-jJOBS-qdDEPTH (-pblock: the engine's "
            "poll=block). Flows: the TCP flows that carried data on each path (MPTCP subflows one by one; the most seen at "
            "once). CPU, the last run's measured window: busy, the share of the guest's CPU time not idle, softirq of its "
            "ticks, then each role's share of the time tasks ran (fio is the engine in engine cells; a task's time "
            "includes softirq work done while it ran).")


def sweep_pivot(res):
    """The sweep at a glance: per direction, line share by depth (rows) for
    each host, transport and policy (columns), the raw controls last."""
    line = res["line_mib_s"]
    cols = [(side, t, pol) for t in ("mptcp", "tcp") for side in ("engine", "kernel") for pol in ("round-robin", "queue-depth")]
    by = {(c["side"], c["transport"], c["iopolicy"]): c for c in res["cells"]}
    head = "| 4 jobs x | " + " | ".join(f"{s} {t} {'rr' if p == 'round-robin' else 'qd'}" for s, t, p in cols) + " |"
    out = []
    for rw in ("randread", "randwrite"):
        out += ["", f"{rw[4:].capitalize()}s, share of the line ({line:.1f} MiB/s); rr round-robin, qd queue-depth:", "",
                head, "|---|" + "---|" * len(cols)]
        for qd in SWEEP_DEPTHS:
            vals = []
            for s_, t, p in cols:
                d = (by.get((s_, f"{t}-j{PUBLISHED_JOBS}-qd{qd}", p)) or {}).get(rw) or {}
                vals.append(f"{d['mib_s']['median'] / line:.2f}" if d.get("mib_s") else "-")
            out.append(f"| QD{qd} | " + " | ".join(vals) + " |")
        raws = []
        for s_, t, p in cols:
            d = (by.get(("raw", f"{t}-j{PUBLISHED_JOBS}", "round-robin")) or {}).get(rw) or {}
            raws.append(f"{d['mib_s']['median'] / line:.2f}" if d.get("mib_s") and s_ == "engine" and p == "round-robin" else "")
        out.append("| raw, 16 connections | " + " | ".join(raws) + " |")
    return out


def model(res, cell, rw):
    """The service-time model of a cell, MiB/s, and the bound that sets it:
    - depth: N commands of 128 KiB, each taking k round trips (reads 1,
      writes 2: the R2T's, then the data's) of the loss-stretched round
      trip its flows measured: N x 128 KiB / (k x RTT);
    - loss: what its flows carry at the loss the sender met and that round
      trip (loss_model.flow_estimate, PFTK per flow, each path capped by its
      line): the bound deep queues meet;
    - line: the paths' rate.
    None where the run recorded no round trip."""
    d = cell[rw]
    last_rtt = rtt_run(d)
    if not last_rtt:
        return None
    i, rtt = last_rtt
    k = 1 if rw == "randread" else 2
    bounds = {"depth": guest.inflight_of(cell["transport"]) * BLOCK / (k * rtt) / 1048576, "line": res["line_mib_s"]}
    flows = guest.run_model(res, d, i, rw == "randread") if d.get("drops") and d.get("kernel_counters") else None
    if flows:
        bounds["loss"] = flows["estimate"]
    name = min(bounds, key=bounds.get)
    return bounds[name], name


def rtt_run(d):
    """The last run that measured a round trip, and its median round trip
    in seconds; None where no run did."""
    runs = [i for i, f in enumerate(d.get("flows") or []) if f and any(f.get("rtt_ms", []))]
    if not runs:
        return None
    rtts = sorted(t for t in d["flows"][runs[-1]]["rtt_ms"] if t)
    return runs[-1], rtts[len(rtts) // 2] / 1000


def held_text(res, cell, rw):
    """How long each command held its slot, by Little's law: the commands
    in flight over the rate they completed at, in seconds and in round
    trips. A lossless read holds one round trip and a write two; what is
    above that waited behind holes its connection was repairing."""
    d = cell[rw]
    m, last_rtt = (d.get("mib_s") or {}).get("median"), rtt_run(d)
    if not m or not last_rtt:
        return "-"
    rtt = last_rtt[1]
    t = guest.inflight_of(cell["transport"]) * BLOCK / (m * 1048576)
    return f"{t:.2f} s ({t / rtt:.1f})"


def model_text(res, cell, rw):
    m = model(res, cell, rw)
    return f"{m[0]:.1f} ({m[1]})" if m else "-"


def plot(res, out):
    """Line share against commands in flight: one panel per direction and
    transport, a line per host and policy, the raw control, the
    bandwidth-delay product and the service-time model."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    line = res["line_mib_s"]
    bdp = res["paths"] * res["rate_mbit"] * 1e6 / 8 * 2 * res["delay_ms"] / 1000 / BLOCK
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), squeeze=False)
    for i, rw in enumerate(("randread", "randwrite")):
        for j, t in enumerate(("mptcp", "tcp")):
            ax = axes[i][j]
            for side in ("engine", "kernel"):
                for pol, style in (("round-robin", "-"), ("queue-depth", "--")):
                    pts = sorted((guest.inflight_of(c["transport"]), c[rw]["mib_s"]["median"] / line) for c in res["cells"]
                                 if c["side"] == side and c["iopolicy"] == pol and c["transport"].startswith(t + "-")
                                 and c[rw] and c[rw]["mib_s"])
                    if pts:
                        ax.plot(*zip(*pts), style, marker="o", label=f"{side} {pol}")
            raw = next((c for c in res["cells"] if c["side"] == "raw" and c["transport"].startswith(t + "-")), None)
            if raw and raw[rw] and raw[rw]["mib_s"]:
                ax.axhline(raw[rw]["mib_s"]["median"] / line, color="gray", label="raw control")
            ax.axvline(bdp, color="gray", linestyle=":", label=f"BDP ({bdp:.0f} commands)")
            mod = sorted((guest.inflight_of(c["transport"]), m[0] / line) for c in res["cells"]
                         if c["side"] == "engine" and c["iopolicy"] == "round-robin" and c["transport"].startswith(t + "-")
                         and c[rw] and (m := model(res, c, rw)))
            if mod:
                ax.plot(*zip(*mod), ":", color="black", label="model: min(N x 128 KiB / (k x RTT), flows at the loss, line)")
            ax.set_xscale("log", base=2)
            ax.set_ylim(0, 1.1)
            ax.set_title(f"{t} {rw[4:]}s", fontsize=10)
            ax.set_xlabel("commands in flight (4 jobs x depth)")
            ax.set_ylabel("share of line")
            ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    f = pathlib.Path(out) / "depth-sweep.png"
    fig.savefig(f, dpi=100)
    plt.close(fig)
    return f


def host_report(c):
    lines = ["### The cross-check on this machine's CPUs", "",
             f"{c['conditions']}; the engine (4 jobs x QD256, MPTCP round-robin) and its raw control (16 connections), "
             f"{c['randread']['runs']} run(s) each, interleaved; medians [min..max]; CPU: fio's and mpnvme-target's "
             "seconds per GiB moved.", "",
             "| dir | engine MiB/s (line) | raw | engine / raw | fio CPU s/GiB | target CPU s/GiB | flows per path |",
             "|---|---|---|---|---|---|---|"]
    line = c["line_mib_s"]
    for rw in ("randread", "randwrite"):
        d = c[rw]
        e, r = d["mib_s"], d["raw_mib_s"]
        flows = "/".join(map(str, d["flows"]["flows"])) if d.get("flows") else "-"
        lines.append(f"| {rw[4:]} | {e['median']:.1f} ({e['median'] / line:.2f}) [{e['min']:.1f}..{e['max']:.1f}] | "
                     f"{r['median']:.1f} | {d['engine_per_raw']:.2f} | {d['fio_cpu_s_per_gib']['median']:.2f} | "
                     f"{d['target_cpu_s_per_gib']['median']:.2f} | {flows} |")
    return lines + [""]


def joined_sweep(results):
    """The sweep's halves (sweep-mptcp, sweep-tcp) as one result: the
    first half's setting, both halves' cells. Only halves measured in the
    same setting join; the settings are the header's."""
    halves = [results[k] for k in results if k.startswith("sweep-")]
    if not halves:
        return results
    keys = ("line_mib_s", "paths", "rate_mbit", "delay_ms", "loss_pct", "smp", "mem_mib", "runtime_s", "ramp_s")
    differ = [k for k in keys if len({str(h.get(k)) for h in halves}) > 1]
    if differ:
        raise ValueError(f"the sweep's halves were measured in different settings: {', '.join(differ)}")
    sweep = dict(halves[0], cells=[c for h in halves for c in h["cells"]],
                 notes=[n for h in halves for n in h.get("notes", [])])
    out = {k: v for k, v in results.items() if not k.startswith("sweep-")}
    out["sweep"] = sweep
    return out


def report(results, out=None):
    lines = ["## NVMe over lossy MPTCP at the published depth", ""]
    results = joined_sweep(results)
    if "host" in results:
        lines += host_report(results["host"])
        results = {k: v for k, v in results.items() if k != "host"}
    titles = {"cpu": "The published depth and where the guest's CPU goes",
              "headline": "The published depth over MPTCP: the engine, at equal flows, and the kernel host",
              "tcp": "Lossy TCP at the published depth",
              "sweep": "Line share against commands in flight", "equal": "Equal flows: the engine and the kernel host",
              "inline": "Writes with 128 KiB in the capsule, both targets"}
    for name, res in results.items():
        lines += [f"### {titles.get(name, name)}", "", header(res), ""]
        lines += table(res, with_pdus=name == "inline")
        lines += events(res)
        lines += stuck(res)
        if name == "sweep":
            lines += sweep_pivot(res)
        if name == "sweep" and out:
            try:
                lines += ["", f"Plot: {plot(res, out).name}. Model: the least of three bounds, named in the table: depth, each "
                          "command's 128 KiB in k round trips of the median round trip its flows measured (reads k = 1, "
                          "writes k = 2); loss, what its flows carry at the loss their sender met and that round trip "
                          "(PFTK per flow, each path capped by its line); line."]
            except ImportError:
                lines += ["", "(no plot: python3-matplotlib is not installed)"]
        lines.append("")
    return "\n".join(lines) + "\n"

