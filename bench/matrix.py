# SPDX-License-Identifier: GPL-2.0-only
"""The matrix: NVMe multipath over TCP and MPTCP as the upstream selftest
(mptcp_nvme.sh), on mpnvme-lab paths against mpnvme-target.

Workload as in jobs/mptcp-nvme-seed.fio: 128 KiB random reads, then random
writes, 4 jobs x iodepth 256. Cells: transport {tcp: engine NVMe multipath
over one TCP connection per path; mptcp: engine NVMe multipath over one
MPTCP connection per path (the selftest's mptcp rows)} x iopolicy {numa,
round-robin, queue-depth, service-time} x {lossless, lossy}, plus the cases
the upstream review asked for: one MPTCP connection for all paths (MPTCP
spreads one association), unequal paths (1000 and 100 Mbit), and a path
cut mid-run (throughput every second, what each path carried and the
kernel's counters before, during and after; again with the older endpoints).

The published figures (4 x 1 Gbit veth, kernel host and nvmet, round-robin)
are printed beside ours with both as ratios to the line rate. Like with
like: every cell runs under cubic (the Linux default the published runs
used; bench/run --cc ALG adds cells under ALG) with the selftest's MPTCP
endpoints (mpnvme-lab --endpoints all), and records its conditions: the
congestion control, the kernel, rates, loss and delay, the endpoint setup,
where it ran, the subflows each connection had and the bytes each path
carried. The selftest's lossy case is 5 ms delay + 0.5 % loss per veth;
a kernel without sch_netem cannot delay packets: then the lossy cells here
are 0.5 % loss without delay, and every such cell says so (bench/run
guest runs them with delay in the qemu kernel lab). Lossy cells run per
wire segment and per GSO packet (mpnvme-lab --loss-unit)."""
import json
import os
import statistics
import subprocess
import time

import common
import conditions
import fio_logs
import loss_model
import progress
import samplers
from published import PUBLISHED, mbit_to_mib_s  # noqa: F401 (the report uses both)
from multipath_lab import JOBS, NQN, MatrixLab

POLICIES = ("numa", "round-robin", "queue-depth", "service-time")
HEADLINE_RUNS = 3


def netem_available():
    return subprocess.run(["modprobe", "-n", "sch_netem"], capture_output=True).returncode == 0 and \
        subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"], capture_output=True).returncode == 0 \
        and subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], capture_output=True).returncode == 0


def cell(lab, tag, transport, iopolicy, runs, runtime, ramp, condition, paths=None):
    res = {}
    for rw in ("randread", "randwrite"):
        rows, raw = [], []
        for i in range(runs):  # engine and control interleaved: the same lab state for both
            rows.append(lab.fio(f"{tag}-{rw}-{i}", transport, iopolicy, rw, runtime, ramp, paths))
            # numa sends every command down one path: its control is one
            # connection, as what the engine really used.
            raw.append(lab.control(transport, rw, runtime, ramp, 1 if iopolicy == "numa" else paths))
        gib = [r["bytes"] / 2**30 for r in rows]
        engine = common.median_spread([r["steady"] for r in rows])
        control = common.median_spread([c["mib_s"] for c in raw])
        res[rw] = {"mib_s": engine,
                   # What the transport alone carried: the same connections,
                   # direction and time (mpnvme-floor stream).
                   "raw_mib_s": control, "raw_subflows": raw[-1]["subflows"],
                   "engine_per_raw": engine["median"] / control["median"] if control["median"] else None,
                   "fio_mib_s": common.median_spread([r["fio_mib_s"] for r in rows]),
                   "wire_mib_s": common.median_spread([r["wire"] for r in rows]),
                   "fio_cpu_s_per_gib": common.median_spread([r["fio_cpu"] / g for r, g in zip(rows, gib)]),
                   "target_cpu_s_per_gib": common.median_spread([r["target_cpu"] / g for r, g in zip(rows, gib)]),
                   # Measured, not assumed: the last run's bytes per path and
                   # the subflows each connection had at its end.
                   "path_bytes": rows[-1]["path_bytes"], "subflows": rows[-1]["subflows"],
                   # Runs with a stall on the wire, in the ramp and in the window.
                   "stalls": {where: sum(1 for r in rows if r["stalls"][where]) for where in ("ramp", "window")},
                   "runs": len(rows),
                   # The TCP flows that carried data on each path (MPTCP subflows one by one) and
                   # what the loss did (the lab's drops, the sender's retransmissions): the last run's,
                   # engine and raw control.
                   "flows": rows[-1]["flows"], "loss": rows[-1]["loss"],
                   "raw_flows": raw[-1]["flows"], "raw_loss": raw[-1]["loss"]}
        if lab.context.get("loss_pct"):
            res[rw] |= against_flow_model(res[rw], lab.line_mib_s() / lab.paths)
    line = lab.line_mib_s()
    print(f"  {tag}: read {res['randread']['mib_s']['median']:.0f} write {res['randwrite']['mib_s']['median']:.0f} MiB/s "
          f"(line {line:.0f})", flush=True)
    return {"transport": transport, "iopolicy": iopolicy, "condition": condition, "paths": paths or lab.paths,
            "line_mib_s": line, **lab.context, **res}


def segment_cost(lab, runtime, ramp):
    """What --loss-unit segment costs: the raw control (reads, 4
    connections per path) with segmentation offloads on and off (the lab
    turns them off on a lossy path; 0.001 % loss, one packet in 100000,
    keeps the path otherwise lossless), the rate and the machine's CPU
    seconds per GiB moved (both namespaces, both CPUs: sender, receiver
    and the veth between them)."""
    out = {}
    for label, pct in (("offloads on (GSO packets)", "0"), ("offloads off (one segment a packet)", "0.001")):
        for p in range(1, lab.paths + 1):
            lab.lab("loss", str(p), pct)
        for transport in ("tcp", "mptcp"):
            busy0 = samplers.machine_busy_seconds()
            r = common.control_stream(lab.name, lab.paths, transport, True, ramp, runtime, per_path=JOBS)
            busy = samplers.machine_busy_seconds() - busy0
            gib = r["mib_s"] * (runtime + ramp) / 1024
            out[f"{transport}, {label}"] = {"mib_s": r["mib_s"], "cpu_s_per_gib": busy / gib if gib else None}
            print(f"  segment cost: {transport}, {label}: {r['mib_s']:.0f} MiB/s, "
                  f"{out[f'{transport}, {label}']['cpu_s_per_gib'] or 0:.2f} CPU s/GiB", flush=True)
    for p in range(1, lab.paths + 1):
        lab.lab("loss", str(p), "0")
    return out


def against_flow_model(d, line_per_path):
    """A lossy cell against the flow-count estimate: the loss-event rate the
    sender met (the lab's drops per segment it sent), its retransmissions
    per MiB sent, and what that many flows at that loss and round trip carry
    (loss_model.flow_estimate), for the engine and for its raw control."""
    out = {}
    for who, flows, loss in (("engine", d["flows"], d["loss"]), ("raw", d["raw_flows"], d["raw_loss"])):
        segs = max(loss["TcpOutSegs"], 1)
        p = loss["dropped"] / segs
        est = loss_model.flow_estimate(p, flows["rtt_ms"], flows["flows"], line_per_path)
        out[f"{who}_model"] = {"loss_event_rate": p, "retrans_per_mib": loss["TcpRetransSegs"] / (segs * loss_model.MSS / 1048576),
                               "flows": flows["flows"], "rtt_ms": flows["rtt_ms"], "estimate_mib_s": est}
    return out


CUT_COUNTERS = ("MPTcpExtMPTCPRetrans", "MPTcpExtSubflowStale", "MPTcpExtSubflowRecover", "MPTcpExtDuplicateData",
                "TcpExtTCPTimeouts", "TcpRetransSegs")


def path_cut(lab, tag, transport, iopolicy, seconds, paths=None, fault="link"):
    """Throughput each second while path 2 fails at 1/3 and comes back at
    2/3, with what explains it for each third (before, down, after): the
    kernel's counters in both namespaces, the bytes each path carried, and
    the engine's per-path I/O counts at the end. `fault`: link (carrier
    loss: the interfaces go down, sends fail locally) or blackhole (loss
    100: the packets vanish after they were sent, only timers notice)."""
    down, up = (("link", "2", "down"), ("link", "2", "up")) if fault == "link" else (("loss", "2", "100"), ("loss", "2", "0"))
    out = lab.work / f"{tag}.json"
    log = lab.work / f"{tag}-bw"
    stats = lab.work / f"{tag}-paths.jsonl"
    cmd = [*common.lab_fio(lab.name), "--name=cut",
           f"--ioengine=external:{common.ENGINE}", f"--traddr={common.lab_paths(paths or lab.paths)}", f"--subnqn={NQN}",
           f"--transport={transport}", f"--iopolicy={iopolicy}", "--rw=randread", "--bs=128k", "--numjobs=4",
           "--iodepth=64", "--thread=1", "--group_reporting=1", "--time_based=1", f"--runtime={seconds}", "--size=2g",
           f"--write_bw_log={log}", "--log_avg_msec=250", "--io_timeout=2000", "--reconnect_delay=0.5",
           f"--path_stats={stats}", "--output-format=json", f"--output={out}"]
    for side in ("host", "target"):
        samplers.nstat(lab.name, side)  # reset the history: the next read is the first third's
    wire = [(time.monotonic(), lab.wire_bytes("randread"))]
    phases = []

    def phase(name):
        counters = {side: samplers.nstat(lab.name, side) for side in ("host", "target")}
        wire.append((time.monotonic(), lab.wire_bytes("randread")))
        (t0, w0), (t1, w1) = wire[-2:]
        phases.append({"phase": name, "seconds": t1 - t0, "wire_mib_per_path": [(b - a) / 1048576 for a, b in zip(w0, w1)],
                       "counters": {side: {k: counters[side][k] for k in CUT_COUNTERS} for side in counters}})

    fio = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=lab.work, env=common.fio_env())
    time.sleep(seconds / 3)
    phase("before")
    lab.lab(*down)
    time.sleep(seconds / 3)
    phase("down")
    lab.lab(*up)
    _, err = fio.communicate()
    phase("after")
    if fio.returncode:
        common.die(f"fio failed ({tag}): {err[-2000:]}")
    quarters = fio_logs.log_buckets(lab.work.glob(f"{tag}-bw_bw.*.log"), 250)
    series = [sum(quarters.get(4 * s + q, 0.0) for q in range(1, 5)) / 4 for s in range(0, max(quarters or [0]) // 4)]
    print(f"  {tag}: MiB/s per second {' '.join(f'{v:.0f}' for v in series)}", flush=True)
    return {"transport": transport, "iopolicy": iopolicy, "fault": fault, "mib_s_per_second": series,
            "mib_s_per_250ms": [quarters.get(q, 0.0) for q in range(1, max(quarters or [0]) + 1)], "cut_at_s": seconds / 3,
            "back_at_s": 2 * seconds / 3, "line_mib_s": lab.line_mib_s(), "phases": phases,
            "endpoints": lab.context["endpoints"],
            "engine_paths": [json.loads(line) for line in stats.read_text().splitlines() if line.strip()],
            "stale_loss_cnt": lab.lab("exec", "host", "sysctl", "-n", "net.mptcp.stale_loss_cnt").strip()}


class Cells:
    """The cells of a matrix run, counted as they finish, for bench/progress."""

    def __init__(self, total):
        self.done, self.bar = 0, progress.Progress("matrix", total)

    def finished(self, tag):
        self.done += 1
        self.bar.step(self.done, tag)


def planned_cells(smoke, ccs, policies):
    """How many cells run() measures: per congestion control, each loss
    shape's transports x policies and its one-connection cell (and, for
    cubic's lossless shape outside smoke, the four path cuts and the
    segment cost, and the cut with the older endpoint setup); the TLS
    cells; the unequal paths outside smoke."""
    shapes = 2 if smoke else 3
    per_cc = shapes * (2 * len(policies) + 1)
    cuts = 0 if smoke else 6
    return len(ccs) * per_cc + cuts + (1 if smoke else 2) + (0 if smoke else 6)


def matrix(res, cc, full, runs, work, smoke, runtime, ramp, rate, npaths, policies, lossy_delay, cells):
    """The lossless and lossy matrix under congestion control `cc`."""
    name = f"b{os.getpid()}{cc[:4]}"
    pre = "" if cc == conditions.DEFAULT_CC else f"{cc}-"
    # Lossy twice: per wire segment (offloads off, as a network loses) and
    # per GSO packet (whole packets, as the upstream selftest's netem on veth).
    shapes = (("lossless", 0, 0, "segment"), ("lossy", 0.5, lossy_delay, "segment"), ("lossy", 0.5, lossy_delay, "packet"))
    for condition, loss, delay, unit in shapes[:2] if smoke else shapes:
        # smoke: QD16, so that what is in flight (4 x 256 x 128 KiB would be
        # 2.7 s of the 2 x 200 Mbit line) does not dominate a 2 s run.
        lab = MatrixLab(f"{name}{condition[:4]}{unit[0]}", [rate] * npaths, work, loss=loss, delay_ms=delay,
                        iodepth=16 if smoke else 256, cc=cc, loss_unit=unit)
        condition_tag = condition if not loss or unit == "segment" else f"{condition}-{unit}"
        try:
            for transport in ("tcp", "mptcp"):
                for pol in policies:
                    # The headline rows (round-robin, the published figures'
                    # policy) get at least 3 runs, so they have a spread.
                    n = runs if smoke or pol != "round-robin" else max(runs, HEADLINE_RUNS)
                    res["matrix"].append(cell(lab, f"{pre}{condition_tag}-{transport}-{pol}", transport, pol, n, runtime, ramp,
                                              condition))
                    cells.finished(f"{pre}{condition_tag}-{transport}-{pol}")
            # MPTCP alone: one connection (path 1), the subflows spread it over all paths.
            res["extra"].append(cell(lab, f"{pre}{condition_tag}-mptcp-one-connection", "mptcp", "numa", runs, runtime, ramp,
                                     condition, paths=1) | {"case": f"one MPTCP connection for {npaths} paths"})
            cells.finished(f"{pre}{condition_tag}-mptcp-one-connection")
            if condition == "lossless" and not smoke and cc == conditions.DEFAULT_CC:
                for transport, pol in (("tcp", "round-robin"), ("mptcp", "round-robin")):
                    for fault in ("link", "blackhole"):
                        res["path_cut"].append(path_cut(lab, f"cut-{fault}-{transport}-{pol}", transport, pol, 12 if full else 9,
                                                        fault=fault))
                        cells.finished(f"cut-{fault}-{transport}-{pol}")
                res["segment_cost"] = segment_cost(lab, runtime, ramp)
                cells.finished("segment cost")
        finally:
            lab.close()




def tls_cells(res, runs, work, runtime, ramp, rate, npaths, smoke, cells):
    """The lossless round-robin cells again with every port requiring TLS 1.3
    (TLS_AES_128_GCM_SHA256; user-space records: kernel TLS takes no MPTCP
    socket and this kernel may have no tls module), beside their plaintext
    cells of the matrix."""
    secret = subprocess.run(["nvme", "gen-tls-key"], capture_output=True, text=True, check=True).stdout.strip()
    key = work / "tls.key"
    key.touch(mode=0o600)
    key.write_text(secret + "\n")
    lab = MatrixLab(f"b{os.getpid()}tls", [rate] * npaths, work, iodepth=16 if smoke else 256, tls_key=key)
    try:
        for transport in ("mptcp",) if smoke else ("tcp", "mptcp"):
            res["tls"].append(cell(lab, f"tls-lossless-{transport}-round-robin", transport, "round-robin", runs, runtime, ramp,
                                   "lossless") | {"case": "TLS 1.3, user-space records"})
            cells.finished(f"tls-lossless-{transport}-round-robin")
    finally:
        lab.close()


def run(full, runs, work, smoke=False, ccs=(conditions.DEFAULT_CC,)):
    """smoke: 2 paths of 200 Mbit, QD16, round-robin and numa only, 2 s runs, no
    unequal-path or cut cases: the functional check make check runs. ccs:
    the congestion controls, cubic first (bench/run --cc adds others)."""
    runtime, ramp = (10, 2) if full else (2, 1) if smoke else (3, 1)
    rate, npaths = (200, 2) if smoke else (1000, 4)
    policies = ("numa", "round-robin") if smoke else POLICIES
    lossy_delay = 5 if netem_available() else 0
    res = {"matrix": [], "extra": [], "path_cut": [], "tls": [], "lossy": {"loss_pct": 0.5, "delay_ms": lossy_delay},
           "runtime_s": runtime, "rate_mbit": rate, "paths": npaths}
    res["ccs"] = list(ccs)
    cells = Cells(planned_cells(smoke, ccs, policies))
    for cc in ccs:
        matrix(res, cc, full, runs, work, smoke, runtime, ramp, rate, npaths, policies, lossy_delay, cells)
    tls_cells(res, runs, work, runtime, ramp, rate, npaths, smoke, cells)
    if smoke:
        cells.bar.done()
        return res
    lab = MatrixLab(f"b{os.getpid()}uneq", [1000, 100], work)
    try:
        for transport, pol in (("tcp", "round-robin"), ("tcp", "queue-depth"), ("tcp", "service-time"),
                               ("mptcp", "round-robin"), ("mptcp", "service-time")):
            res["extra"].append(cell(lab, f"unequal-{transport}-{pol}", transport, pol, runs, runtime, ramp, "lossless")
                                | {"case": "unequal paths 1000 + 100 Mbit"})
            cells.finished(f"unequal-{transport}-{pol}")
        res["extra"].append(cell(lab, "unequal-mptcp-one-connection", "mptcp", "numa", runs, runtime, ramp, "lossless", paths=1)
                            | {"case": "unequal paths 1000 + 100 Mbit, one MPTCP connection"})
        cells.finished("unequal-mptcp-one-connection")
    finally:
        lab.close()
    # The MPTCP cut again with the lab's older endpoint setup (none on path
    # 1): what the selftest's endpoints change when a path dies.
    lab = MatrixLab(f"b{os.getpid()}oth", [rate] * npaths, work, endpoints="others")
    try:
        res["path_cut"].append(path_cut(lab, "cut-link-mptcp-round-robin-others", "mptcp", "round-robin", 12 if full else 9))
        cells.finished("cut-link-mptcp-round-robin-others")
    finally:
        lab.close()
    cells.bar.done()
    return res


def fmt_cell(d, line):
    """MiB/s median (min..max) and its ratio to the line rate; a figure above
    what the paths carried in the same window (frames, headers included) by
    more than 3 % is flagged with that wire rate."""
    m = d["mib_s"]["median"]
    # 3 %: the commands in flight at the window's edges move a few percent either way.
    flag = f" [!wire {d['wire_mib_s']['median']:.0f}]" if m > 1.03 * d["wire_mib_s"]["median"] else ""
    stalls = d.get("stalls", {})
    if stalls.get("window"):
        flag += f" [!stalled in {stalls['window']} of {d['runs']}]"
    return f"{common.spread_text(d['mib_s'])} ({m / line:.2f}){flag}"


def fmt_raw(d):
    """The raw control (MiB/s median, min..max) and engine / raw, flagged
    where the engine falls short of the transport (an engine gap) or beats
    the control (which then is no ceiling and must not be quoted as one)."""
    r = d["engine_per_raw"]
    return f"{common.spread_text(d['raw_mib_s'])} | {'-' if r is None else f'{r:.2f}'}{common.control_flag(r)}"


def fmt_paths(d):
    """Subflows per connection and each path's share of the bytes."""
    total = sum(d["path_bytes"]) or 1
    share = "/".join(f"{100 * b / total:.0f}" for b in d["path_bytes"])
    return f"{'+'.join(str(n) for n in d['subflows'])} | {share}"


def report(res, runs, plots):
    rr = [c for c in res["matrix"] if c["iopolicy"] == "round-robin"]
    rr_runs = len(rr[0]["randread"]["mib_s"]["runs"]) if rr else runs
    runs = f"{runs}" if rr_runs == runs else f"{runs} ({rr_runs} for round-robin)"
    lossy = res["lossy"]
    where = (f"loss {lossy['loss_pct']} % + delay {lossy['delay_ms']} ms per path" if lossy["delay_ms"] else
             f"loss {lossy['loss_pct']} % per path, **no delay** (this kernel has no netem; the selftest adds 5 ms: "
             "`bench/run guest` runs the lossy cells with delay in the qemu kernel lab)")
    first = (res["matrix"] or res["extra"])[0]
    lines = ["## The matrix: NVMe multipath over TCP and MPTCP (the upstream selftest's)", "",
             f"mpnvme-lab on this machine (Linux {first['kernel']}): {res['paths']} x {res['rate_mbit']} Mbit veth paths "
             f"(line {mbit_to_mib_s(res['paths'] * res['rate_mbit']):.1f} MiB/s), MPTCP endpoints `{first['endpoints']}` "
             f"(the selftest's), mpnvme-target (RAM) on CPU {common.TARGET_CPU}, the engine in fio on CPU {common.FIO_CPU}; "
             f"128 KiB, 4 jobs x QD256, {res['runtime_s']} s per run, medians of {runs} (min..max). Lossy: {where}. "
             "Published: the selftest's commit message (kernel host and nvmet, 4 x 1 Gbit veth, round-robin, cubic, "
             "5 ms + 0.5 %). Cells: MiB/s (ratio to line rate), from fio's bandwidth log after its first "
             f"{fio_logs.STEADY_LOG_MS} ms (bytes over time); fio's own figure (in results.json) also counts the commands in "
             "flight when the time is up. Raw: the same connections (one per job on each path the engine used: all, or "
             "path 1 for numa and the one-connection case), direction, ramp and time with "
             "nothing but sockets (mpnvme-floor stream against mpnvme-floor sink in the same lab), run after each engine "
             f"run; an engine below {common.ENGINE_GAP} of it is an engine gap, above it the control is no ceiling. "
             "Subflows: per connection (path) at the end of the last run (MPTCP_INFO), 0 for "
             "TCP; share: each path's percentage of the bytes the lab counted in the last read run.", "",
             "| cc | transport | iopolicy | conditions | read | raw read | read / raw | write | raw write | write / raw | "
             "published read | published write | subflows (read) | path share % (read) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    line4 = mbit_to_mib_s(4000)  # the published setup: 4 x 1 Gbit

    def pub(c, i):
        v = PUBLISHED.get((c["transport"], c["iopolicy"], c["condition"]))
        return f"{v[i]} ({v[i] / line4:.2f})" if v else ""

    order = {p: i for i, p in enumerate(POLICIES)}
    for c in sorted(res["matrix"], key=lambda c: (res.get("ccs", [c["cc"]]).index(c["cc"]), c["condition"] != "lossless",
                                                     c.get("loss_unit") or "", c["transport"] != "tcp", order[c["iopolicy"]])):
        lines.append(f"| {c['cc']} | {c['transport']} | {c['iopolicy']} | {c['conditions']} | "
                     f"{fmt_cell(c['randread'], c['line_mib_s'])} | {fmt_raw(c['randread'])} | "
                     f"{fmt_cell(c['randwrite'], c['line_mib_s'])} | {fmt_raw(c['randwrite'])} | "
                     f"{pub(c, 0)} | {pub(c, 1)} | {fmt_paths(c['randread'])} |")
    lines += ["", "Cases the upstream review asked for:", "",
              "| case | cc | conditions | transport | iopolicy | line MiB/s | read | raw read | read / raw | write | raw write | "
              "write / raw | target CPU s/GiB (read) | subflows (read) | path share % (read) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in res["extra"]:
        lines.append(f"| {c['case']} | {c['cc']} | {c['conditions']} | {c['transport']} | "
                     f"{c['iopolicy'] if c['paths'] > 1 else '-'} | {c['line_mib_s']:.0f} | "
                     f"{fmt_cell(c['randread'], c['line_mib_s'])} | {fmt_raw(c['randread'])} | "
                     f"{fmt_cell(c['randwrite'], c['line_mib_s'])} | {fmt_raw(c['randwrite'])} | "
                     f"{common.spread_text(c['randread']['target_cpu_s_per_gib'], 2)} | {fmt_paths(c['randread'])} |")
    if res.get("tls"):
        plain = {(c["transport"], c["iopolicy"]): c for c in res["matrix"]
                 if c["condition"] == "lossless" and c["cc"] == conditions.DEFAULT_CC}
        lines += ["", "TLS 1.3 on the same paths (TLS_AES_128_GCM_SHA256, user-space records on both sides), each beside "
                  "its plaintext cell above: MiB/s (ratio to line), the ratio to plaintext, and CPU seconds per GiB of fio "
                  "and of the target (plaintext in brackets):", "",
                  "| transport | iopolicy | read | read / plaintext | write | write / plaintext | fio CPU s/GiB (read) | "
                  "target CPU s/GiB (read) | fio CPU s/GiB (write) | target CPU s/GiB (write) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for c in res["tls"]:
            p = plain.get((c["transport"], c["iopolicy"]))

            def ratio(rw):
                return f"{c[rw]['mib_s']['median'] / p[rw]['mib_s']['median']:.2f}" if p and p[rw]["mib_s"]["median"] else ""

            def cpu(rw, who):
                k = f"{who}_cpu_s_per_gib"
                base = f" ({p[rw][k]['median']:.2f})" if p else ""
                return f"{c[rw][k]['median']:.2f}{base}"

            lines.append(f"| {c['transport']} | {c['iopolicy']} | {fmt_cell(c['randread'], c['line_mib_s'])} | {ratio('randread')} | "
                         f"{fmt_cell(c['randwrite'], c['line_mib_s'])} | {ratio('randwrite')} | {cpu('randread', 'fio')} | "
                         f"{cpu('randread', 'target')} | {cpu('randwrite', 'fio')} | {cpu('randwrite', 'target')} |")
    lines += loss_report(res)
    lines += segment_cost_report(res.get("segment_cost"))
    lines += cut_report(res["path_cut"])
    lines += ["", "[!wire N]: the figure exceeds by more than 3 % N, what the paths carried in the same window (Ethernet frames, "
              "headers included, from the host side's interface counters every 100 ms): the engine completed data that "
              "crossed before the window (held in socket buffers or MPTCP's out-of-order queue), so the cell overstates "
              "its rate; longer runs (--full) shrink the effect. [!stalled in N of M]: in N of the cell's M runs the "
              "paths carried under 5 % of the line for 250 ms or more inside the measured window (a start-up stall the "
              "ramp did not outlast, or a later one), which lowers the cell."]
    ramp = sum(c[rw].get("stalls", {}).get("ramp", 0) for c in res["matrix"] + res["extra"] for rw in ("randread", "randwrite"))
    runs = sum(c[rw].get("runs", 0) for c in res["matrix"] + res["extra"] for rw in ("randread", "randwrite"))
    lines += ["", f"Stalls in the ramp (before the window, once I/O first ran at a quarter of the line): {ramp} of {runs} engine runs."]
    lines += [""] + [f"![{p.stem}]({p.name})" for p in plots]
    return "\n".join(lines) + "\n"


def loss_report(res):
    """Every lossy cell beside the flow-count estimate: the flows that
    carried it, the loss they met, and what that many loss-limited flows
    carry (loss_model.flow_estimate), for the engine and its raw control."""
    cells = [c for c in res["matrix"] + res["extra"] if c.get("loss_pct")]
    if not cells:
        return []
    lines = ["", "Lossy cells and the flow-count estimate. Flows: the TCP flows that carried data on each path "
             "(connections x subflows, MPTCP subflows counted one by one; the most seen at once, sampled every second with "
             "ss). p: the loss-event rate the sender met, the lab's drops per segment it sent (per GSO packet dropped whole, "
             "fewer events than segments lost). Retransmissions per MiB the sender sent (its own TcpRetransSegs). "
             "Estimate: each path's flows x one flow's loss-limited rate at that p and their median round trip (PFTK: "
             "Mathis's square-root law with retransmission timeouts, RTO = RTT + 200 ms), capped by the path's line. "
             "Last run of each cell.", "",
             "| unit | transport | iopolicy | case | dir | MiB/s (line) | flows | RTT ms | p | retrans/MiB | estimate | "
             "/ estimate | raw MiB/s | raw flows | raw estimate | raw / estimate |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in sorted(cells, key=lambda c: (c.get("loss_unit") or "", c["transport"], c["iopolicy"])):
        for rw in ("randread", "randwrite"):
            d = c[rw]
            e, r = d.get("engine_model"), d.get("raw_model")
            if not e:
                continue
            m, raw = d["mib_s"]["median"], d["raw_mib_s"]["median"]

            def ratio(a, b):
                return f"{a / b:.2f}" if b and b != float("inf") else "-"

            def est(x):
                return "line" if x >= c["line_mib_s"] * 0.999 else f"{x:.0f}"

            rtt = statistics.median([t for t in e["rtt_ms"] if t] or [0])
            lines.append(f"| {c.get('loss_unit')} | {c['transport']} | {c['iopolicy'] if c['paths'] > 1 else '-'} | "
                         f"{c.get('case', '')} | {rw[4:]} | {m:.0f} ({m / c['line_mib_s']:.2f}) | "
                         f"{'/'.join(map(str, e['flows']))} | {rtt:.2f} | {e['loss_event_rate']:.5f} | "
                         f"{e['retrans_per_mib']:.1f} | {est(e['estimate_mib_s'])} | {ratio(m, e['estimate_mib_s'])} | "
                         f"{raw:.0f} | {'/'.join(map(str, r['flows']))} | {est(r['estimate_mib_s'])} | "
                         f"{ratio(raw, r['estimate_mib_s'])} |")
    return lines


def segment_cost_report(cost):
    if not cost:
        return []
    lines = ["", "What per-segment loss costs (--loss-unit segment turns segmentation offloads off on a lossy path): the raw "
             "control's reads on the lossless paths with offloads on and off, MiB/s and the machine's CPU seconds per GiB "
             "(both CPUs: sender, receiver, veth):", "", "| transport, offloads | MiB/s | CPU s/GiB |", "|---|---|---|"]
    for k, v in cost.items():
        lines.append(f"| {k} | {v['mib_s']:.0f} | {v['cpu_s_per_gib']:.2f} |")
    return lines


def cut_report(cuts):
    """Each cut's throughput, then per third (before, down, after) what the
    paths carried and the kernel counters that explain a recovery."""
    if not cuts:
        return []
    lines = []
    for c in cuts:
        how = "a silent blackhole (loss 100)" if c.get("fault") == "blackhole" else "link down (carrier loss)"
        lines += ["", f"Path 2 cut ({how}) at {c['cut_at_s']:.0f} s and back at {c['back_at_s']:.0f} s, {c['transport']} "
                  f"{c['iopolicy']}, endpoints `{c.get('endpoints', conditions.ENDPOINTS)}`, MiB/s each second: "
                  + " ".join(f"{v:.0f}" for v in c["mib_s_per_second"])
                  + "; each 250 ms: " + " ".join(f"{v:.0f}" for v in c.get("mib_s_per_250ms", []))]
    line3 = cuts[0]["line_mib_s"] * 3 / 4
    lines += ["", f"What each third of the cut runs carried and counted (the paths' MiB, the kernel's counters: target / "
              f"host namespace; net.mptcp.stale_loss_cnt {cuts[0].get('stale_loss_cnt', '?')}; three paths allow "
              f"{line3:.0f} MiB/s):", "",
              "| fault | transport | endpoints | third | MiB per path | wire MiB/s | MPTCP retransmits | stale subflows | "
              "recovered subflows | TCP timeouts | duplicate data |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cuts:
        for ph in c.get("phases", []):
            k = ph["counters"]

            def both(name):
                return f"{k['target'][name]} / {k['host'][name]}"

            lines.append(f"| {c.get('fault', 'link')} | {c['transport']} | {c.get('endpoints', conditions.ENDPOINTS)} | {ph['phase']} | "
                         + "/".join(f"{v:.0f}" for v in ph["wire_mib_per_path"]) + f" | {sum(ph['wire_mib_per_path']) / ph['seconds']:.0f} | "
                         f"{both('MPTcpExtMPTCPRetrans')} | {both('MPTcpExtSubflowStale')} | {both('MPTcpExtSubflowRecover')} | "
                         f"{both('TcpExtTCPTimeouts')} | {both('MPTcpExtDuplicateData')} |")
    return lines


def plot(res, out):
    """Bar chart of the matrix beside the published figures, throughput over
    time for the path cut. Returns the PNG paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = []
    line = mbit_to_mib_s(res["paths"] * res["rate_mbit"])
    panels = [("lossless", None)] + [("lossy", u) for u in ("segment", "packet")
                                     if any(c.get("loss_unit") == u for c in res["matrix"] if c["condition"] == "lossy")]
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5), sharey=True)
    for ax, (cond, unit) in zip(axes, panels):
        cells = [c for c in res["matrix"] if c["condition"] == cond and c["cc"] == conditions.DEFAULT_CC
                 and (unit is None or c.get("loss_unit") == unit)]
        labels = [f"{c['transport']}\n{c['iopolicy']}" for c in cells]
        x = range(len(cells))
        ax.bar([i - 0.3 for i in x], [c["randread"]["mib_s"]["median"] for c in cells], 0.3, label="read (mpnvme)")
        ax.bar([i for i in x], [c["randwrite"]["mib_s"]["median"] for c in cells], 0.3, label="write (mpnvme)")
        pub = [PUBLISHED.get((c["transport"], c["iopolicy"], cond), (0, 0))[0] for c in cells]
        ax.bar([i + 0.3 for i in x], pub, 0.3, label="read, published (kernel)", color="grey")
        ax.axhline(line, color="black", linestyle=":", linewidth=1, label="line rate")
        ax.set_xticks(list(x), labels, fontsize=7)
        ax.set_title(cond if cond == "lossless" else
                     f"lossy ({res['lossy']['loss_pct']} % loss per {unit}, {res['lossy']['delay_ms']} ms delay)")
    axes[0].set_ylabel("MiB/s")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    files.append(out / "matrix.png")
    fig.savefig(files[-1], dpi=100)
    plt.close(fig)
    if res["path_cut"]:
        fig, ax = plt.subplots(figsize=(7, 4))
        for c in res["path_cut"]:
            ax.plot(range(1, len(c["mib_s_per_second"]) + 1), c["mib_s_per_second"], marker="o",
                    label=f"{c.get('fault', 'link')}: {c['transport']} {c['iopolicy']} ({c.get('endpoints', conditions.ENDPOINTS)})")
        c = res["path_cut"][0]
        ax.axvspan(c["cut_at_s"], c["back_at_s"], color="red", alpha=0.1, label="path 2 down")
        ax.set_xlabel("s")
        ax.set_ylabel("MiB/s (1 s averages)")
        ax.legend()
        fig.tight_layout()
        files.append(out / "matrix-path-cut.png")
        fig.savefig(files[-1], dpi=100)
        plt.close(fig)
    return files
