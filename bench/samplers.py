# SPDX-License-Identifier: GPL-2.0-only
"""What the bench samples while a run goes on: CPU seconds of the machine
and of a process, a process's sleeps, the lab paths' wire bytes, the TCP
flows per path and their round trips, the namespaces' TCP and MPTCP
counters, and the engine's subflows per path."""
import json
import os
import pathlib
import re
import statistics
import subprocess
import threading
import time

from common import LAB, ROOT, die, lab


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
