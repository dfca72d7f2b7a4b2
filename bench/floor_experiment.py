# SPDX-License-Identifier: GPL-2.0-only
"""The floor experiment: what the sockets alone can do on this machine
(mpnvme-floor: round trip of a 72-byte request and a 4120-byte answer, one
at a time and 32 outstanding, blocking and busy-polling, TCP and MPTCP;
one-way bulk rate), then the engine against mpnvme-target on loopback: QD1
4 KiB reads for every engine completion mode (poll=) and target mode
(--poll), QD32 with fio's default batching and with batching, 128 KiB
reads, as ratios to the floor, with CPU time per I/O for fio and target."""
import contextlib
import json
import os
import pathlib
import re
import signal
import subprocess

import tls_cost
from common import CONTROL_BEATEN, ENGINE_GAP, check_placement, control_flag, fio_env, ENGINE, FIO_CPU, FLOOR, TARGET, TARGET_CPU, die, free_port, median_spread, stop, wait_ready
from fio_logs import STEADY_LOG_MS, fio_json, log_rate
from samplers import cpu_seconds, sleeps

NQN = "nqn.2026-11.io.mpnvme:bench"
RAMP_S = 1  # fio warm-up before each measured run
READ_DEPTH, READ_BYTES = 16, 128 * 1024  # the large-read workload, and its raw control's exchange
C2H_HEADER = 24


@contextlib.contextmanager
def target(extra, work, program=TARGET):
    port = free_port()
    log = open(work / f"target-{port}.log", "w")
    p = subprocess.Popen(["taskset", "-c", str(TARGET_CPU), str(program), "--listen", f"127.0.0.1:{port}", "--subnqn", NQN,
                          "--ns", "ram:1g", "--log-level", "warn"] + extra, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(work / f"target-{port}.log", p)
        yield port, p.pid
    finally:
        stop(p)
        log.close()


def fio(port, pid, opts, seconds, work, engine=ENGINE):
    """One fio run of the engine on CPU 1; returns (the workload's direction's
    stats, fio CPU s, target CPU s, times the target slept)."""
    out, logs = work / "fio.json", work / "fio-log"
    for old in work.glob("fio-log_*.log"):
        old.unlink()
    t0, s0 = cpu_seconds(pid), sleeps(pid)
    cmd = ["taskset", "-c", str(FIO_CPU), "fio", "--name=bench", f"--ioengine=external:{engine}", "--traddr=127.0.0.1",
           f"--trsvcid={port}", f"--subnqn={NQN}", "--rw=randread", "--size=1g", "--time_based=1", f"--runtime={seconds}",
           f"--ramp_time={RAMP_S}", "--output-format=json", f"--output={out}", f"--write_bw_log={logs}", f"--write_iops_log={logs}",
           f"--log_avg_msec={STEADY_LOG_MS}"] + opts
    r = subprocess.run(cmd, capture_output=True, text=True, env=fio_env())
    if r.returncode != 0:
        die(f"fio failed: {' '.join(cmd)}\n{r.stderr}")
    job = fio_json(out)["jobs"][0]
    # The direction of the workload: the last --rw= wins, as in fio.
    ddir = "write" if "write" in [o for o in cmd if o.startswith("--rw=")][-1] else "read"
    fio_cpu = (job["usr_cpu"] + job["sys_cpu"]) / 100 * job[ddir]["runtime"] / 1000
    # Rates from the interval logs (bytes and I/Os over time), as every
    # experiment reports them; latency percentiles stay fio's.
    rates = {"iops": log_rate(sorted(work.glob("fio-log_iops.*.log"))),
             "bw_bytes": log_rate(sorted(work.glob("fio-log_bw.*.log"))) * 1024}
    return job[ddir] | rates, fio_cpu, cpu_seconds(pid) - t0, sleeps(pid) - s0


def floor_tool(args, server_cpu=TARGET_CPU, client_cpu=FIO_CPU):
    r = subprocess.run([str(FLOOR)] + args + ["--server-cpu", str(server_cpu), "--client-cpu", str(client_cpu)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        die(f"mpnvme-floor {' '.join(args)}: {r.stderr}")
    return json.loads(r.stdout)


FLOOR_KEYS = ("p50_us", "p99_us", "per_second", "client_cpu_us_per_op", "server_cpu_us_per_op")
# The raw round trip measured beside each round of a cell: one at a time for
# QD1 (its p50), 32 outstanding for QD32 (its rate), busy-polling both.
FLOOR_BESIDE = {"qd1": 1, "qd32": 32, "qd32-batched": 32}


# As long as a run: these VMs switch between states whose raw round trips
# differ by almost 2x (5 us and 9 us over TCP) for seconds at a time, and a
# floor of 20000 round trips (0.2 s) taken in the other state than its
# round's 5 s runs had put those rounds at 2x.
def floor_beside(transport, depth, seconds):
    r = floor_tool(["rtt", "--transport", transport, "--wait", "busy", "--depth", str(depth), "--seconds", str(seconds)])
    return {"p50_us": r["p50_us"], "per_second": r["per_second"]}


@contextlib.contextmanager
def signalled(pid, first, then):
    """Signal `first` to the process for the block and `then` to end it
    (None: nothing to do)."""
    if pid is None:
        yield
        return
    os.kill(pid, first)
    try:
        yield
    finally:
        os.kill(pid, then)


def engine_cell(name, tmode, tr, mode, cell, floors):
    """One row of the engine table from its runs; with the floors measured
    beside them, each run's ratio to the floor of its own round: p50 / floor
    p50 at QD1, IOPS / floor round trips per second at QD32."""
    rows = cell["rows"]
    ios = [r[0]["total_ios"] for r in rows]
    e = {"workload": name, "target": tmode, "transport": tr, "poll": mode,
         "iops": median_spread([r[0]["iops"] for r in rows]),
         "mib_s": median_spread([r[0]["bw_bytes"] / 1048576 for r in rows]),
         "p50_us": median_spread([r[0]["clat_ns"]["percentile"]["50.000000"] / 1000 for r in rows]),
         "p99_us": median_spread([r[0]["clat_ns"]["percentile"]["99.000000"] / 1000 for r in rows]),
         "fio_cpu_us_per_io": median_spread([r[1] * 1e6 / n for r, n in zip(rows, ios)]),
         "target_cpu_us_per_io": median_spread([r[2] * 1e6 / n for r, n in zip(rows, ios)]),
         "target_sleeps_per_kio": median_spread([r[3] * 1e3 / n for r, n in zip(rows, ios)])}
    if cell["controls"]:
        e["control_mib_s"] = median_spread(cell["controls"])
    if floors:
        e["floor_beside"] = floors
        if FLOOR_BESIDE[name] == 1:
            e["per_floor"] = median_spread([p / f["p50_us"] for p, f in zip(e["p50_us"]["runs"], floors)])
        else:
            e["per_floor"] = median_spread([i / f["per_second"] for i, f in zip(e["iops"]["runs"], floors)])
    return e


def run(runs, seconds, work, smoke=False, allow_oversubscribe=False):
    """smoke: the shape only (TCP, QD1 and QD32 with busy and block engines, 128 KiB
    reads with a block engine and their control)."""
    # Loopback: no path is shaped, both ends use this machine's congestion
    # control; each cell says so, with its warm-up.
    res = {"floor": {}, "engine": [], "conditions": {
        "where": "loopback, host namespace", "kernel": os.uname().release, "seconds": seconds, "ramp_s": RAMP_S,
        "cc": pathlib.Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()}}
    for tr in ("tcp",) if smoke else ("tcp", "mptcp"):
        for wait in ("block", "busy"):
            count = "2000" if smoke else "20000"
            samples = [floor_tool(["rtt", "--transport", tr, "--wait", wait, "--count", count]) for _ in range(runs)]
            res["floor"][f"rtt {tr} {wait}"] = {k: median_spread([s[k] for s in samples]) for k in FLOOR_KEYS}
            samples = [floor_tool(["rtt", "--transport", tr, "--wait", wait, "--depth", "32", "--count", "20000" if smoke else "200000"])
                       for _ in range(runs)]
            res["floor"][f"rtt {tr} {wait} depth 32"] = {k: median_spread([s[k] for s in samples]) for k in FLOOR_KEYS}
        for wait in ("block", "busy"):
            samples = [bulk_read(tr, wait, seconds) for _ in range(runs)]
            res["floor"][f"bulk {tr} {wait}"] = {"mib_s": median_spread([s["mib_s"] for s in samples])}
    workloads = [("qd1", ["--bs=4k", "--iodepth=1"], ("block", "hybrid", "busy"), ("tcp", "mptcp")),
                 ("qd32", ["--bs=4k", "--iodepth=32"], ("block", "hybrid", "busy"), ("tcp", "mptcp")),
                 ("qd32-batched", ["--bs=4k", "--iodepth=32", "--iodepth_batch_submit=16", "--iodepth_batch_complete_min=8"],
                  ("block", "hybrid"), ("tcp",)),
                 (f"128k-qd{READ_DEPTH}", [f"--bs={READ_BYTES // 1024}k", f"--iodepth={READ_DEPTH}"], ("block", "hybrid"), ("tcp", "mptcp"))]
    if smoke:
        workloads = [(n, o, ("block", "busy"), ("tcp",)) for n, o, _, _ in workloads[:2]] + [
            (n, o, ("block",), ("tcp",)) for n, o, _, _ in workloads[3:]]
    # Both target modes run side by side and take turns within each round
    # (the order alternating), with the raw round trip of the QD1 and QD32
    # cells measured between them: these VMs drift by up to 1.7x within
    # minutes, and a mode or floor measured ten minutes after the other
    # compared the drift. The --poll target spins even when idle, so it is
    # stopped while anything else is measured.
    with target([], work) as (eport, epid), target(["--poll"], work) as (pport, ppid), signalled(ppid, signal.SIGSTOP, signal.SIGCONT):
        ports = {"event": (eport, epid, None), "poll": (pport, ppid, ppid)}
        for name, opts, modes, transports in workloads:
            for tr in transports:
                for mode in modes:
                    cells = {t: {"rows": [], "controls": []} for t in ports}
                    floors = []
                    for r in range(runs):
                        order = ("event", "poll") if r % 2 == 0 else ("poll", "event")
                        for i, tmode in enumerate(order):
                            # a busy-polling engine job and a --poll target each hold a core
                            check_placement((mode == "busy") + (tmode == "poll"), f"{name} target={tmode} poll={mode}",
                                            allow_oversubscribe)
                            port, pid, to_wake = ports[tmode]
                            with signalled(to_wake, signal.SIGCONT, signal.SIGSTOP):
                                cells[tmode]["rows"].append(fio(port, pid, opts + [f"--transport={tr}", f"--poll={mode}"], seconds, work))
                            if name.startswith("128k"):  # its ceiling, measured beside each run
                                cells[tmode]["controls"].append(read_control(tr, mode, seconds))
                            if i == 0 and name in FLOOR_BESIDE:
                                floors.append(floor_beside(tr, FLOOR_BESIDE[name], seconds))
                    for tmode in ports:
                        res["engine"].append(engine_cell(name, tmode, tr, mode, cells[tmode], floors))
                        e = res["engine"][-1]
                        print(f"  {name} target={tmode} {tr} poll={mode}: p50 {e['p50_us']['median']:.1f} us, "
                              f"{e['iops']['median']:.0f} IOPS", flush=True)
    res["target_cost"] = target_cost(res)
    res["poll_vs_event"] = poll_against_event(res)
    res["connect"] = connect_times(runs if not smoke else 1, work)
    res["tls"] = tls_cost.run(runs, seconds, work, fio, smoke)
    return res


AUTH_MODES = ("none", "null", "ffdhe2048", "ffdhe8192")  # DH-HMAC-CHAP as the connect-time rows


def connect_times(runs, work):
    """How long connecting takes, as the engine measures it: the admin
    association (connect, authentication, enable, identify) and one I/O
    queue (connect, authentication), against mpnvme-target on loopback,
    with no authentication and with DH-HMAC-CHAP (SHA-256) without DH and
    with ffdhe2048 and ffdhe8192; medians of `runs` jobs. Reconnect time
    decides how long a failover takes."""
    secret = subprocess.run(["nvme", "gen-dhchap-key", "--nqn=nqn.bench"], capture_output=True, text=True, check=True).stdout.strip()
    key = work / "dhchap.key"
    key.touch(mode=0o600)
    key.write_text(secret + "\n")
    hosts = {m: f"nqn.2026-12.io.mpnvme:bench-{m}" for m in AUTH_MODES}
    extra = [a for m in AUTH_MODES if m != "none" for a in ("--dhchap-key", f"{hosts[m]}=@{key}")]
    extra += ["--allow-host", hosts["none"]]  # beside the keyed hosts, the one without authentication
    out = {}
    with target(extra + ["--dhchap-dhgroup", "null,ffdhe2048,ffdhe8192"], work) as (port, _):
        for m in AUTH_MODES:
            opts = [f"--hostnqn={hosts[m]}", "--transport=tcp", "--number_ios=1", "--size=4k", "--bs=4k", "--log_level=info"]
            if m != "none":
                opts += [f"--dhchap_secret_file={key}", f"--dhchap_dhgroup={m}"]
            admin, io = [], []
            for _ in range(runs):
                log = fio_once(port, opts, work)
                a = re.search(r"association up in ([0-9.]+) ms", log)
                q = re.search(r"I/O queue up in ([0-9.]+) ms", log)
                if not (a and q):
                    die(f"the engine did not log its connect times ({m}):\n{log[-800:]}")
                admin.append(float(a.group(1)))
                io.append(float(q.group(1)))
            out[m] = {"admin_ms": median_spread(admin), "io_queue_ms": median_spread(io),
                      "total_ms": median_spread([x + y for x, y in zip(admin, io)])}
    return out


def fio_once(port, opts, work):
    """One short engine run on CPU 1; its log (standard error)."""
    cmd = ["taskset", "-c", str(FIO_CPU), "fio", "--name=connect", f"--ioengine=external:{ENGINE}", "--traddr=127.0.0.1",
           f"--trsvcid={port}", f"--subnqn={NQN}", "--rw=read", f"--output={work / 'connect.json'}", "--output-format=json"] + opts
    r = subprocess.run(cmd, capture_output=True, text=True, env=fio_env())
    if r.returncode != 0:
        die(f"fio failed: {' '.join(cmd)}\n{r.stderr}")
    return r.stderr


def bulk_read(transport, wait, seconds):
    """One connection streaming from the target's CPU to fio's, as the
    target sends read data; busy spins on non-blocking calls. With the
    socket buffers full it is not the 128 KiB reads' ceiling: see
    read_control."""
    return floor_tool(["bulk", "--transport", transport, "--wait", wait, "--seconds", str(seconds)],
                      server_cpu=FIO_CPU, client_cpu=TARGET_CPU)




def read_control(transport, engine_poll, seconds):
    """The raw ceiling of the engine's 128 KiB reads at QD16: the same
    exchange over bare sockets (a 72-byte request answered with the data
    and a C2HData header, 16 outstanding, both sides batching; sleeping in
    recv for poll=block, spinning for the engine modes that spin), payload
    MiB/s. A plain
    bulk stream is no ceiling here: it keeps the socket buffers full, and
    its skbs' working set falls out of the cache that the 2 MiB in flight
    of the engine's exchange stays in (the engine beat it by 1.2-2x)."""
    wait = "block" if engine_poll == "block" else "busy"
    r = floor_tool(["rtt", "--transport", transport, "--wait", wait, "--depth", str(READ_DEPTH), "--response",
                    str(READ_BYTES + C2H_HEADER), "--count", str(int(seconds * 15000))])
    return r["per_second"] * READ_BYTES / 1048576


def target_cost(res):
    """The target's own time per command: the busy-polling engine's QD1 p50
    against mpnvme-target minus the busy-polling raw round trip of the same
    transport (the same request and answer sizes, the same CPUs) measured in
    the same round, per target mode; with the ratio engine p50 / floor.
    Medians (with their spread) of the rounds' differences and ratios."""
    rows = []
    for e in res["engine"]:
        if e["workload"] != "qd1" or e["poll"] != "busy":
            continue
        rounds = [{"engine_p50_us": p, "floor_p50_us": f["p50_us"]} for p, f in zip(e["p50_us"]["runs"], e["floor_beside"])]
        rows.append({"target": e["target"], "transport": e["transport"], "rounds": rounds,
                     "engine_p50_us": e["p50_us"]["median"],
                     "floor_p50_us": median_spread([r["floor_p50_us"] for r in rounds])["median"],
                     "cost_us": median_spread([r["engine_p50_us"] - r["floor_p50_us"] for r in rounds]),
                     "per_floor": e["per_floor"]})
    return rows


def poll_against_event(res):
    """--poll against the event loop, run by run (both ran in each round):
    IOPS of --poll / IOPS of the event loop, medians with their spread. Above
    1: --poll was faster."""
    by = {(e["workload"], e["target"], e["transport"], e["poll"]): e for e in res["engine"]}
    rows = []
    for (w, t, tr, m), ev in by.items():
        po = by.get((w, "poll", tr, m))
        if t != "event" or not po:
            continue
        rows.append({"workload": w, "transport": tr, "poll": m,
                     "iops_ratio": median_spread([p / q for p, q in zip(po["iops"]["runs"], ev["iops"]["runs"])]),
                     "event_sleeps_per_kio": ev.get("target_sleeps_per_kio", {}).get("median")})
    return rows


def fmt_ratio(m):
    return f"{m['median']:.2f} ({m['min']:.2f}..{m['max']:.2f})"


def fmt_ms(m):
    return f"{m['median']:.1f} ({m['min']:.1f}..{m['max']:.1f})"


def report(res, runs):
    f = res["floor"]
    lines = ["## Floor: raw sockets and the engine on loopback", "",
             f"Target on CPU {TARGET_CPU}, fio on CPU {FIO_CPU}; medians (min..max) of {runs} runs. "
             f"{res['conditions']['where'].capitalize()}, Linux {res['conditions']['kernel']}, congestion control "
             f"{res['conditions']['cc']} at both ends (the machine's default; no path is shaped), fio runs of "
             f"{res['conditions']['seconds']} s after a {res['conditions']['ramp_s']} s warm-up. Round trips: a "
             "72-byte request answered with 4120 bytes, one at a time or 32 outstanding (both sides sending in batches).", "",
             "| floor | p50 us | p99 us | round trips/s | client CPU us/op | server CPU us/op |", "|---|---|---|---|---|---|"]
    for k, v in f.items():
        if k.startswith("rtt"):
            lines.append(f"| {k} | {fmt_ms(v['p50_us'])} | {fmt_ms(v['p99_us'])} | {v['per_second']['median']:.0f} | "
                         f"{v['client_cpu_us_per_op']['median']:.2f} | {v['server_cpu_us_per_op']['median']:.2f} |")
    for k, v in f.items():
        if k.startswith("bulk"):
            lines.append(f"| {k}, target CPU to fio CPU (MiB/s) | {fmt_ms(v['mib_s'])} | | | | |")
    lines += ["", "The raw floors above were measured first. Each engine cell's ratio is to the busy-polling raw round trip "
              "of the same transport measured in the same round for as long as a run, between the two target modes' runs "
              "(which alternate their order): the p50 over the floor's p50 at QD1, IOPS over the floor's round trips per second with 32 "
              "outstanding at QD32; medians (min..max) of the rounds' ratios.", "",
              "| workload | target | transport | poll | IOPS | IOPS / floor | MiB/s | p50 us | p50 / floor | p99 us | "
              "fio CPU us/IO | target CPU us/IO |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in res["engine"]:
        ratio = fmt_ratio(e["per_floor"]) if "per_floor" in e else ""
        qd1 = FLOOR_BESIDE.get(e["workload"]) == 1
        lines.append(f"| {e['workload']} | {e['target']} | {e['transport']} | {e['poll']} | {fmt_ms(e['iops'])} | "
                     f"{'' if qd1 else ratio} | {e['mib_s']['median']:.0f} | {fmt_ms(e['p50_us'])} | {ratio if qd1 else ''} | "
                     f"{e['p99_us']['median']:.1f} | {e['fio_cpu_us_per_io']['median']:.2f} | {e['target_cpu_us_per_io']['median']:.2f} |")
    by = {(e["workload"], e["target"], e["transport"], e["poll"]): e["iops"]["median"] for e in res["engine"]}
    ratios = [f"{w} target={t} poll={m}: {by[(w, t, 'mptcp', m)] / by[(w, t, 'tcp', m)]:.2f}"
              for (w, t, tr, m) in by if tr == "tcp" and (w, t, "mptcp", m) in by]
    tc = f["rtt tcp busy depth 32"]["per_second"]["median"]
    mp = f.get("rtt mptcp busy depth 32", {}).get("per_second", {}).get("median")
    if mp:
        lines += ["", f"MPTCP / TCP: raw sockets at depth 32 (busy) {mp / tc:.2f}; engine " + "; ".join(ratios) + "."]
    bulk = [e for e in res["engine"] if "control_mib_s" in e]
    if bulk:
        lines += ["", "### 128 KiB reads against their raw ceiling", "",
                  "Each engine run was followed by its raw control (the --poll target stopped, the event loop idle): the same exchange over bare sockets of the same "
                  f"transport (mpnvme-floor rtt --depth {READ_DEPTH} --response {READ_BYTES + C2H_HEADER}: a "
                  "72-byte request answered with 128 KiB and a C2HData header from the target's CPU, 16 outstanding, "
                  "both sides batching; --wait block for the engine's poll=block, busy for the modes that spin), payload MiB/s. Below "
                  f"{ENGINE_GAP} of it is an engine gap; above {CONTROL_BEATEN} the control is beaten and is no ceiling. The bulk "
                  "floors above keep the socket buffers full and run slower than this bounded exchange on loopback "
                  "(their buffers' working set leaves the cache): they are not the ceiling of these reads.", "",
                  "| target | transport | poll | engine MiB/s | control MiB/s | engine / control |", "|---|---|---|---|---|---|"]
        for e in bulk:
            r = e["mib_s"]["median"] / e["control_mib_s"]["median"]
            lines.append(f"| {e['target']} | {e['transport']} | {e['poll']} | {fmt_ms(e['mib_s'])} | "
                         f"{fmt_ms(e['control_mib_s'])} | {r:.2f}{control_flag(r)} |")
    lines += ["", "### The target's own cost per command", "",
              "The busy-polling engine's QD1 p50 (4 KiB reads) against mpnvme-target, minus the busy-polling raw round "
              "trip of the same transport (72 B request, 4120 B answer) measured in the same round for as long as a run; "
              "medians (min..max) "
              "of the rounds:", "",
              "| target | transport | engine p50 us | floor p50 us | target cost us | engine / floor |", "|---|---|---|---|---|---|"]
    for r in res["target_cost"]:
        lines.append(f"| {r['target']} | {r['transport']} | {r['engine_p50_us']:.1f} | {r['floor_p50_us']:.1f} | "
                     f"{fmt_ms(r['cost_us'])} | {fmt_ratio(r['per_floor'])} |")
    lines += ["", "### --poll against the event loop", "",
              "IOPS of `--poll` over the event loop's, run by run (the two took turns in every round); above 1 --poll "
              "was faster. Both run one loop; --poll only never sleeps, so where the event loop slept about never "
              "(its sleeps per 1000 I/Os, all its threads, median) the two run the same code and the ratio is this "
              "machine's drift between turns:", "",
              "| workload | transport | engine poll | --poll / event loop | event loop sleeps / 1k I/O |", "|---|---|---|---|---|"]
    for r in res["poll_vs_event"]:
        lines.append(f"| {r['workload']} | {r['transport']} | {r['poll']} | {fmt_ratio(r['iops_ratio'])} | "
                     f"{'?' if r['event_sleeps_per_kio'] is None else format(r['event_sleeps_per_kio'], '.2f')} |")
    if res.get("connect"):
        c = res["connect"]
        lines += ["", "### Time to connect, with and without DH-HMAC-CHAP", "",
                  "As the engine measures it against the event-loop target on loopback (TCP): the admin association "
                  "(connect, authentication, enable, identify) and one I/O queue (connect, authentication); DH-HMAC-CHAP "
                  "with SHA-256. Every reconnect of a failover pays this.", "",
                  "| authentication | admin association ms | I/O queue ms | total ms |", "|---|---|---|---|"]
        for m in AUTH_MODES:
            lines.append(f"| {m} | {fmt_ms(c[m]['admin_ms'])} | {fmt_ms(c[m]['io_queue_ms'])} | {fmt_ms(c[m]['total_ms'])} |")
    if res.get("tls"):
        lines += ["", tls_cost.report(res["tls"], runs).rstrip()]
    return "\n".join(lines) + "\n"


