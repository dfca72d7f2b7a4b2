# SPDX-License-Identifier: GPL-2.0-only
"""What every bench experiment shares: where the programs are, CPU
placement, process CPU time, medians with their spread, fio's JSON."""
import json
import math
import os
import pathlib
import re
import socket
import statistics
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("MPNVME_BUILD", ROOT / "build"))
ENGINE = BUILD / "engine" / "fio-mpnvme.so"
TARGET = BUILD / "mpnvme-target" / "mpnvme-target"
FLOOR = BUILD / "bench" / "mpnvme-floor"
LAB = ROOT / "toolkit" / "lab" / "mpnvme-lab"
# The target and fio on different CPUs: a shared core measures the scheduler, not either.
TARGET_CPU, FIO_CPU = 0, 1
# Like with like: the published runs used Linux's default congestion
# control, cubic; this machine's default may be another (bbr, which does not
# back off on loss). Every shaped experiment runs under cubic; bench/run
# --cc ALG adds ALG as extra cells, never in place of cubic.
DEFAULT_CC = "cubic"
CCS = [DEFAULT_CC]
# The upstream selftest's MPTCP endpoints (mpnvme-lab --endpoints all).
ENDPOINTS = "all"


def condition_text(loss_pct, delay_ms, loss_unit="segment", loss_via="nft"):
    """What a cell's paths did, said in the cell itself: the loss model too
    (per wire segment or per GSO packet, dropped on arrival or by netem)."""
    if not loss_pct:
        return "lossless" + (f", {delay_ms} ms delay" if delay_ms else "")
    loss = f"{loss_pct} % loss per {loss_unit} ({loss_via})"
    return f"{loss} + {delay_ms} ms delay" if delay_ms else f"{loss}, no delay"


def cell_context(cc, rates_mbit, loss_pct, delay_ms, endpoints, where="host: mpnvme-lab namespaces", kernel=None,
                 loss_unit="segment", loss_via="nft"):
    """The conditions a cell ran under, stored with the cell (results.json)
    and shown beside it: a figure is only comparable with one measured the
    same way."""
    return {"cc": cc, "kernel": kernel or os.uname().release, "where": where, "rates_mbit": list(rates_mbit),
            "loss_pct": loss_pct, "delay_ms": delay_ms, "endpoints": endpoints,
            "loss_unit": loss_unit if loss_pct else None, "loss_via": loss_via if loss_pct else None,
            "conditions": condition_text(loss_pct, delay_ms, loss_unit, loss_via)}


def lab_conditions(name, cc, endpoints):
    """Read back from the lab's namespaces what a cell claims: the
    congestion control each side runs and the MPTCP endpoints each has. Dies
    when the congestion control is not the one asked for."""
    got = {}
    for side in ("host", "target"):
        got[side] = lab(name, "exec", side, "sysctl", "-n", "net.ipv4.tcp_congestion_control").strip()
        if got[side] != cc:
            die(f"lab {name}: the {side} namespace runs {got[side]}, not {cc}")
    count = {side: len(lab(name, "exec", side, "ip", "mptcp", "endpoint", "show").splitlines()) for side in ("host", "target")}
    return {"cc_measured": got, "endpoint_count": count, "endpoints": endpoints}


def path_subflows(stats_file):
    """Subflows of each path's connection (MPTCP_INFO at job end, from the
    engine's path_stats): the largest any job saw, per path."""
    per_path = {}
    if not stats_file.exists():
        die(f"{stats_file}: the engine wrote no path statistics")
    for line in stats_file.read_text().splitlines():
        for p in json.loads(line)["paths"]:
            per_path[p["path"]] = max(per_path.get(p["path"], 0), p["subflows"])
    return [per_path[k] for k in sorted(per_path)]


def fio_env():
    """fio's environment: an ASan-built engine (MPNVME_PRELOAD, as the tests
    set it) needs its runtime preloaded."""
    env = dict(os.environ)
    if os.environ.get("MPNVME_PRELOAD"):
        env["LD_PRELOAD"] = os.environ["MPNVME_PRELOAD"]
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1")
    return env


ALLOW_OVERSUBSCRIBE = False  # bench/run --allow-oversubscribe


def check_placement(busy_threads, what):
    """A figure measured with more spinning threads than cores
    measures the scheduler, not the I/O path. Refused unless asked for."""
    cpus = os.cpu_count() or 1
    if busy_threads > cpus and not ALLOW_OVERSUBSCRIBE:
        die(f"{what}: {busy_threads} busy-polling threads on {cpus} CPUs would oversubscribe the machine "
            "(--allow-oversubscribe to measure it anyway)")


def die(msg):
    sys.exit(f"bench/run: {msg}")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def machine_busy_seconds():
    """CPU seconds every CPU of the machine has been busy so far
    (/proc/stat: all but idle and iowait)."""
    fields = [int(x) for x in pathlib.Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sleeps(pid):
    """Times the threads of a process have slept so far (voluntary context
    switches, summed over /proc/PID/task: the event loops are threads of
    their own)."""
    total = 0
    for status in pathlib.Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            total += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", status.read_text(), re.M).group(1))
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return total


class Samples:
    """A counter sampled against wall-clock time: (time, value) pairs, read
    at any time in between by interpolation."""

    def __init__(self):
        self.samples = []

    def at(self, t):
        """The value at wall-clock time t, interpolated between samples."""
        s = self.samples
        if t <= s[0][0]:
            return s[0][1]
        for (t0, c0), (t1, c1) in zip(s, s[1:]):
            if t <= t1:
                return c0 + (c1 - c0) * (t - t0) / (t1 - t0) if t1 > t0 else c1
        return s[-1][1]

    def between(self, t0, t1):
        return self.at(t1) - self.at(t0)


class CpuSampler(Samples):
    """A process's CPU seconds sampled every 50 ms against wall-clock time,
    so that CPU can be taken over exactly the window fio measured bytes in
    (after its ramp, up to its end), not over fio's whole life."""

    def __init__(self, pid):
        super().__init__()
        self.pid, self._stop = pid, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            self.samples.append((time.time(), cpu_seconds(self.pid)))
            self._stop.wait(0.05)

    def stop(self):
        self._stop.set()
        self._thread.join()
        self.samples.append((time.time(), cpu_seconds(self.pid)))


class WireSampler(Samples):
    """The bytes a lab's host side received (reads) or sent (writes) on each
    of its paths, every 100 ms against wall-clock time, by one shell loop in
    the host namespace: the wire over the window fio measured in, and each
    path's bytes over the whole run. An engine figure above the wire holds
    data the paths carried before the window (socket buffers, MPTCP's
    out-of-order queue)."""

    def __init__(self, name, paths, read):
        super().__init__()
        self.per_path = []  # [(time, [bytes of each path])]; samples hold their sums
        ns = lab(name, "names").split()[0]
        key = "rx_bytes" if read else "tx_bytes"
        files = " ".join(f"/sys/class/net/h{p}/statistics/{key}" for p in range(1, paths + 1))
        loop = f'while :; do echo $(date +%s.%N) $(cat {files}); sleep 0.1; done'  # one line per sample
        self._proc = subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-c", loop], stdout=subprocess.PIPE, text=True)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        for line in self._proc.stdout:
            fields = line.split()
            if len(fields) >= 2:
                values = [int(x) for x in fields[1:]]
                self.per_path.append((float(fields[0]), values))
                self.samples.append((float(fields[0]), sum(values)))

    def stop(self):
        """After one more sample (the run's last bytes in it), or a second."""
        now, deadline = time.time(), time.time() + 1
        while not (self.samples and self.samples[-1][0] > now) and time.time() < deadline:
            time.sleep(0.02)
        self._proc.terminate()
        self._proc.wait()
        self._thread.join()
        if len(self.samples) < 2:
            die("the wire sampler read no counters")

    def path_bytes(self):
        """Each path's bytes from the first sample to the last."""
        return [b - a for a, b in zip(self.per_path[0][1], self.per_path[-1][1])]

    @staticmethod
    def _mib_s(a, b):
        """MiB/s between two (time, bytes) samples."""
        return (b[1] - a[1]) / (b[0] - a[0]) / 1048576 if b[0] > a[0] else 0.0

    def mib_s(self, t0, t1):
        return self.between(t0, t1) / (t1 - t0) / 1048576

    def first_flow(self, line_mib_s):
        """When data first moved at a quarter of the line or more (the
        connections are up and I/O runs; set-up before it moves only a few
        capsules), or None."""
        for a, b in zip(self.samples, self.samples[1:]):
            if self._mib_s(a, b) >= 0.25 * line_mib_s:
                return a[0]
        return None

    def holes(self, t0, t1, line_mib_s, shortest_s=0.25):
        """Stalls between t0 and t1: stretches of at least shortest_s in
        which the paths carried under 5 % of the line; [(start, seconds)]."""
        out, start = [], None
        pts = [(t, v) for t, v in self.samples if t0 <= t <= t1]
        for a, b in zip(pts, pts[1:]):
            slow = b[0] > a[0] and self._mib_s(a, b) < 0.05 * line_mib_s
            if slow and start is None:
                start = a[0]
            if not slow and start is not None:
                if a[0] - start >= shortest_s:
                    out.append((start, a[0] - start))
                start = None
        if start is not None and pts and pts[-1][0] - start >= shortest_s:
            out.append((start, pts[-1][0] - start))
        return out


def fio_window(result, ddir):
    """The wall-clock window fio measured a job's `ddir` in: its runtime
    (after ramp_time), ending when fio wrote its JSON (timestamp_ms). It
    includes the time the commands in flight took to complete after the
    time was up: on a slow path that can be seconds."""
    end = result["timestamp_ms"] / 1000
    return end - result["jobs"][0][ddir]["runtime"] / 1000, end


def log_window(result, ddir, paths, interval_ms=None):
    """The wall-clock window log_rate measures in: from the end of the
    jobs' first interval to the start of their last (the times count from
    the end of the ramp, where fio's runtime starts), not the drain after
    them. A run in which nothing completed has no rows: then fio's own
    window."""
    fio = fio_window(result, ddir)
    window = jobs_window([log_rows(p) for p in paths], interval_ms or STEADY_LOG_MS)
    if window is None:
        return fio
    return fio[0] + window[0] / 1000, fio[0] + window[1] / 1000


def wait_ready(log, proc, seconds=10, line="mpnvme-target: ready", what="mpnvme-target"):
    """Until the program writing `log` prints its ready line; dies with its
    log if it exits or takes too long."""
    deadline = time.time() + seconds
    while line not in log.read_text():
        if proc.poll() is not None or time.time() > deadline:
            die(f"{what} did not start: {log.read_text()}")
        time.sleep(0.05)


def lab(name, *args):
    """mpnvme-lab -n NAME ARGS; its standard output, or die with its error."""
    r = subprocess.run([str(LAB), "-n", name, *args], capture_output=True, text=True)
    if r.returncode:
        die(f"mpnvme-lab {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def lab_down(name):
    """Remove lab NAME (and whatever still runs in it); quiet, as at the end
    of an experiment that may have failed half-way."""
    subprocess.run([str(LAB), "-n", name, "down"], capture_output=True)


def stop(proc):
    """End a process this bench started (mpnvme-target) and reap it."""
    proc.terminate()
    proc.wait()


# What a fio run may take beyond its ramp and runtime (connect, the
# commands in flight draining, the report) before it counts as hung.
FIO_GRACE_S = 120


def fio_limit_s(cmd):
    """The longest a fio run of `cmd` may take: its --ramp_time and
    --runtime (the largest of each, in seconds) plus FIO_GRACE_S."""
    args = [str(a) for a in cmd]

    def largest(opt):
        values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{opt}=")]
        return max((int(v.rstrip("s")) for v in values if re.fullmatch(r"\d+s?", v)), default=0)
    return largest("ramp_time") + largest("runtime") + FIO_GRACE_S


def run_fio(cmd, tag, cwd=None):
    """fio's command line `cmd` in fio_env(); dies with the end of fio's
    errors, naming the run `tag`, when fio fails, and when it has not ended
    within fio_limit_s (its whole process group is killed then: a hung run
    ends the bench with its name, not the caller's timeout with nothing)."""
    limit = fio_limit_s(cmd)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=fio_env(),
                         start_new_session=True)
    try:
        _, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        _, err = p.communicate()
        die(f"fio did not end within {limit} s ({tag}): {err[-2000:]}")
    if p.returncode:
        die(f"fio failed ({tag}): {err[-2000:]}")


def lab_paths(paths):
    """The target addresses of paths 1..N: 10.1.1.1,10.1.2.1,..."""
    return ",".join(f"10.1.{p}.1" for p in range(1, paths + 1))


def lab_fio(name):
    """The command prefix of fio in the lab's host namespace on FIO_CPU."""
    return [str(LAB), "-n", name, "exec", "host", "taskset", "-c", str(FIO_CPU), "fio"]


def start_lab_target(name, target, paths, nqn, ns, log, extra=()):
    """mpnvme-target (the binary `target`) in the lab's target namespace on
    TARGET_CPU, one port per path; returns the process once it is ready."""
    with open(log, "w") as out:
        proc = subprocess.Popen([str(LAB), "-n", name, "exec", "target", "taskset", "-c", str(TARGET_CPU), str(target),
                                 "--listen", lab_paths(paths), "--subnqn", nqn, "--ns", ns, "--log-level", "warn", *extra],
                                stdout=out, stderr=subprocess.STDOUT)
    wait_ready(log, proc)
    return proc


CONTROL_PORT = 5201  # mpnvme-floor sink, beside the target's 4420 on every path
ENGINE_GAP = 0.9     # engine / raw control below this: the engine, not the transport, is the limit
CONTROL_BEATEN = 1.02  # engine / raw control above this: the control is no ceiling and must not be quoted as one


def control_flag(engine_per_raw):
    """The report's mark on engine / raw control: an engine gap, a beaten
    control, or nothing."""
    if engine_per_raw is None:
        return ""
    return " **engine gap**" if engine_per_raw < ENGINE_GAP else " **control beaten**" if engine_per_raw > CONTROL_BEATEN else ""


def start_control_sink(name, paths, log):
    """mpnvme-floor sink in the lab's target namespace on TARGET_CPU,
    listening on every path (MPTCP: plain TCP clients fall back, as against
    the target); returns the process once it is ready."""
    listen = ",".join(f"10.1.{p}.1:{CONTROL_PORT}" for p in range(1, paths + 1))
    with open(log, "w") as out:
        proc = subprocess.Popen([str(LAB), "-n", name, "exec", "target", "taskset", "-c", str(TARGET_CPU), str(FLOOR), "sink",
                                 "--listen", listen, "--transport", "mptcp"], stdout=out, stderr=subprocess.STDOUT)
    wait_ready(log, proc, line="mpnvme-floor: sink ready", what="mpnvme-floor sink")
    return proc


def control_stream(name, paths, transport, read, ramp, seconds, per_path=1):
    """The raw-transport control of a cell: `per_path` connections (the
    engine's jobs: one I/O queue each) to each of the first `paths` paths,
    the same direction, ramp and time, from the host namespace on FIO_CPU.
    mpnvme-floor's JSON."""
    connect = ",".join(f"10.1.{p}.1:{CONTROL_PORT}" for p in range(1, paths + 1) for _ in range(per_path))
    r = subprocess.run([str(LAB), "-n", name, "exec", "host", "taskset", "-c", str(FIO_CPU), str(FLOOR), "stream",
                        "--connect", connect, "--transport", transport, "--direction", "read" if read else "write",
                        "--ramp", str(ramp), "--seconds", str(seconds)], capture_output=True, text=True)
    if r.returncode:
        die(f"mpnvme-floor stream ({transport}, {paths} connection(s)): {r.stderr.strip()}")
    return json.loads(r.stdout)


STEADY_LOG_MS = 500  # fio --log_avg_msec of the throughput logs steady_mib_s reads


def steady_mib_s(paths, interval_ms=None):
    """Throughput of a time-based run from its fio bandwidth logs (one per
    job, NAME_bw.N.log: time in ms from the end of ramp_time, KiB/s over
    the interval ending there), the first and the last interval left out:
    the bytes of the intervals between (rate x length) over their time,
    summed over the jobs. Not the mean of the rates: an interval the
    process was late to close is long and slow, the next one short and
    fast, and their mean reads above the line. And not fio's own figure, which divides every
    byte completed by the runtime, including the commands still in flight
    when the time is up (4 jobs x 256 x 128 KiB is 128 MiB, 9 % of a 3 s
    run at 477 MiB/s)."""
    return log_rate(paths, interval_ms) / 1024


def log_rows(path):
    """A fio interval log's rows as (ms from the end of the ramp, value)."""
    rows = [line.split(",") for line in path.read_text().splitlines() if line.strip()]
    return [(int(r[0]), int(r[1])) for r in rows]


def first_kept(rows, interval_ms):
    """Where a job's measured time starts and the index of its first row
    counted: its first interval is left out (the ramp's end is in it); a
    job whose first row comes later than that (nothing completed at first)
    is measured from the end of the first interval, the empty ones in it."""
    if rows and rows[0][0] <= 1.5 * interval_ms:
        return rows[0][0], 1
    return interval_ms, 0


def jobs_window(logs, interval_ms):
    """(start, end) in ms that the jobs' logs are measured over together:
    from the end of their first interval to the start of their last, None
    without a row. The last interval is left out too: its row is written
    after the time is up and holds completions of the commands then in
    flight (4 jobs x QD16 x 128 KiB on 2 x 200 Mbit: that row summed to 67
    MiB/s over the jobs where the wire carried 45.7 and the rows before it
    45.5)."""
    if not any(logs):
        return None
    last = max(rows[-1][0] for rows in logs if rows)
    return min(first_kept(rows, interval_ms)[0] for rows in logs), last - interval_ms


def log_rate(paths, interval_ms=None):
    """The rate of fio interval logs written every `interval_ms` (bandwidth:
    KiB/s; IOPS: I/Os per second), as what the intervals between the first
    and the last (jobs_window) moved, rate x length, over their time,
    summed over the jobs.

    fio writes no row for an interval in which nothing completed, and the
    row after such a gap holds the rate of its own interval only: it is
    credited with one interval, and the gap with nothing, not with the
    row's rate over the whole gap (a job that stalled for a second then
    read above the line). A row that comes a little late (up to half an
    interval) keeps its own length, as fio measured it. A stall at the
    start (the first rows missing) or of one job at the end counts as
    nothing moved too; a run in which nothing completed reads 0."""
    if not paths:
        die("no fio interval log to read (did the job write one?)")
    interval_ms = interval_ms or STEADY_LOG_MS
    logs = [log_rows(p) for p in paths]
    window = jobs_window(logs, interval_ms)
    if window is None:
        return 0.0
    total = 0.0
    for p, rows in zip(paths, logs):
        start, kept = first_kept(rows, interval_ms)
        if window[1] - start < interval_ms / 2:
            # Too short to measure: a silent skip would report the other
            # jobs' throughput as the whole. Half an interval, not one: rows
            # drift by a millisecond or two (501, 1000, 1500 is one interval
            # measured, 499 ms long; the floor smoke of 24a68c1 was refused
            # on exactly that).
            die(f"{p}: {window[1] - start} ms between the first interval and the last, at least one interval "
                f"({interval_ms} ms) needed (run longer)")
        # The job's own row closing the window, if it has one (fio's rows
        # drift by a few ms), else the window's end: its gap moved nothing.
        middle = [r for r in rows[kept:] if r[0] <= window[1] + interval_ms / 2]
        end = middle[-1][0] if middle and middle[-1][0] >= window[1] - interval_ms / 2 else window[1]
        moved, previous = 0.0, rows[kept - 1][0] if kept else 0
        for t, rate in middle:
            span = t - previous
            moved += rate * (span if span <= 1.5 * interval_ms else interval_ms) / 1000
            previous = t
        total += moved / ((end - start) / 1000)
    return total


def log_buckets(paths, width_ms):
    """MiB/s of fio bandwidth logs (KiB/s rows) summed over the jobs, per
    interval of `width_ms` (a row goes to the interval its time is nearest
    the end of): {interval number: MiB/s}."""
    buckets = {}
    for p in paths:
        for t_ms, kib_s in log_rows(p):
            k = (t_ms + width_ms // 2) // width_ms
            buckets[k] = buckets.get(k, 0) + kib_s / 1024
    return buckets


def median_spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def spread_text(m, digits=0):
    """'median (min..max)' of a median_spread, for tables."""
    f = f"{{:.{digits}f}}"
    if len(m["runs"]) < 2:
        return f.format(m["median"])
    return f"{f.format(m['median'])} ({f.format(m['min'])}..{f.format(m['max'])})"


def fio_json(path):
    """fio's JSON output (fio may print other lines before it)."""
    text = path.read_text()
    return json.loads(text[text.index("{"):])


NSTAT_COUNTERS = ("MPTcpExtMPTCPRetrans", "MPTcpExtMPJoinSynRx", "MPTcpExtMPJoinAckRx", "MPTcpExtMPJoinSynAckRx",
                  "MPTcpExtOFOQueue", "MPTcpExtOFOMerge", "MPTcpExtDuplicateData", "MPTcpExtRcvPruned",
                  "MPTcpExtSubflowStale", "MPTcpExtSubflowRecover", "MPTcpExtRcvWndShared", "MPTcpExtRcvWndConflict",
                  "TcpExtTCPOFOQueue", "TcpExtPruneCalled", "TcpExtTCPRcvQDrop", "TcpRetransSegs",
                  "TcpExtTCPLostRetransmit", "TcpExtTCPTimeouts", "MPTcpExtRmSubflow", "MPTcpExtMPFailTx", "MPTcpExtMPRstTx")


def nstat(lab, side):
    """The namespace's counters since the last call (nstat keeps its own history per namespace)."""
    # nstat's history file is per user, not per namespace: one per side.
    env = dict(os.environ, NSTAT_HISTORY=f"/tmp/mpnvme-nstat-{lab}-{side}")
    r = subprocess.run([str(LAB), "-n", lab, "exec", side, "nstat", "-z", "--json"], capture_output=True, text=True,
                       env=env)
    if r.returncode:
        die(f"nstat in {side}: {r.stderr.strip()}")
    data = json.loads(r.stdout)
    flat = {}
    for group in data.values():
        flat.update(group)
    return {k: flat.get(k, 0) for k in NSTAT_COUNTERS}


FLOWS_AWK = ROOT / "bench" / "flows.awk"


class FlowSampler:
    """Every second while a run goes on, the TCP flows that carried data on
    each path to `port` (MPTCP subflows one by one) and their round trip,
    from ss in the lab's host namespace (bench/flows.awk, which the guest
    runs too). `seen()`: each path's most flows at once and the median of
    the sampled round trips in ms."""

    def __init__(self, name, paths, port):
        self.paths, self.rows, self._stop = paths, [], threading.Event()
        ns = lab(name, "names").split()[0]
        self._cmd = ["ip", "netns", "exec", ns, "sh", "-c",
                     f"ss -tinH state established '( dport = :{port} )' | awk -v paths={paths} -f {FLOWS_AWK}"]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            out = subprocess.run(self._cmd, capture_output=True, text=True).stdout.split()
            if len(out) == 2 * self.paths:
                self.rows.append([float(x) for x in out])
            self._stop.wait(1)

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.seen()

    def seen(self):
        n = self.paths
        flows = [int(max((r[i] for r in self.rows), default=0)) for i in range(n)]
        rtts = [[r[n + i] for r in self.rows if r[n + i] > 0] for i in range(n)]
        return {"flows": flows, "rtt_ms": [statistics.median(v) if v else 0 for v in rtts]}


def lab_loss(name):
    """The lab's loss record (mpnvme-lab counters --json): per direction the
    packets dropped and the sender's TCP counters."""
    return json.loads(lab(name, "counters", "--json"))["directions"]


def loss_delta(before, after, read):
    """What one run did in its data direction (reads: the target sends):
    the lab's drops and the sender's segments, retransmissions, timeouts
    and MPTCP-level retransmissions."""
    way = "to_host" if read else "to_target"
    a, b = before[way], after[way]
    out = {"dropped": b["dropped_packets"] - a["dropped_packets"]}
    for k in ("TcpOutSegs", "TcpRetransSegs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes", "MPTcpExtMPTCPRetrans"):
        out[k] = b["sender_tcp"][k] - a["sender_tcp"][k]
    return out


MSS = 1448  # bytes of TCP payload per segment on the lab's 1500-byte paths


def flow_rate_mib_s(p, rtt_s, rto_s=None):
    """The rate one Reno-like flow sustains at loss-event rate `p` per
    segment and round trip `rtt_s`, timeouts included: the PFTK model
    (Padhye, Firoiu, Towsley, Kurose 1998) with one segment per ACK, which
    reduces to Mathis's MSS / RTT x sqrt(3/2) / sqrt(p) when timeouts are
    rare. Linux's cubic runs in its Reno-friendly region at these windows
    (a few tens of segments). The retransmission timeout is Linux's with a
    steady round trip: RTT + 200 ms."""
    if p <= 0 or rtt_s <= 0:
        return math.inf
    t0 = rto_s if rto_s else rtt_s + 0.2
    per_segment = rtt_s * math.sqrt(2 * p / 3) + t0 * min(1.0, 3 * math.sqrt(3 * p / 8)) * p * (1 + 32 * p * p)
    return MSS / per_segment / 1048576


def flow_estimate(p, rtt_ms, flows, line_per_path_mib_s):
    """What `flows` (data flows per path) at loss rate `p` and round trips
    `rtt_ms` (per path) can carry, each path capped by its line: MiB/s."""
    total = 0.0
    for f, rtt in zip(flows, rtt_ms):
        if f:
            total += min(line_per_path_mib_s, f * flow_rate_mib_s(p, rtt / 1000))
    return total


# The published NVMe-over-MPTCP figures (MiB/s read, write) from the
# upstream selftest's commit message: 4 x 1 Gbit veth, kernel host and
# nvmet, round-robin. Every report sets them beside ours as ratios to line.
PUBLISHED = {
    ("tcp", "round-robin", "lossless"): (455, 455),
    ("mptcp", "round-robin", "lossless"): (445, 445),
    ("tcp", "round-robin", "lossy"): (144, 100),
    ("mptcp", "round-robin", "lossy"): (428, 431),
}


def mbit_to_mib_s(mbit):
    """A link rate in Mbit/s as MiB/s of payload ceiling."""
    return mbit * 1e6 / 8 / 1048576
