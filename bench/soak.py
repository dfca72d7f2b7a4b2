# SPDX-License-Identifier: GPL-2.0-only
"""bench/run soak: verified I/O for --minutes (default 30) on lossy lab
paths while faults come at random, one at a time, from a seed: silent
blackholes, carrier loss, loss bursts, rate drops, a target killed and
restarted within ctrl_loss_tmo, an ANA group made inaccessible, and
subsystem and host changes through the control socket. Two jobs of one
fio run side by side against mpnvme-target: NVMe multipath over TCP (a
connection per path, round-robin) and one MPTCP connection over both
paths, each on a file namespace of its own (the data outlives a target
restart).

What it records, over time: each job's throughput (fio's 1 s bandwidth
log), RSS and open descriptors of fio and of the target, and the senders'
TCP counters (mpnvme-lab counters: the kernel's own retransmissions and
timeouts, the check that a fault was one); each fault with its time and
what the senders did during it; the engine's path events. The verdict:
no I/O error and no verify failure, and RSS and descriptors flat after
the warm-up. The seed replays the schedule (--seed)."""
import json
import os
import pathlib
import random
import re
import signal
import statistics
import subprocess
import threading
import time

import common
import conditions
import fio_logs
import progress
import published

NQN = "nqn.2026-12.io.mpnvme:soak"
SCRATCH_NQN = "nqn.2026-12.io.mpnvme:soak-scratch"
SCRATCH_HOST = "nqn.2026-12.io.mpnvme:soak-visitor"
PATHS = 2
RATE_MBIT = 200
BASE_LOSS_PCT = 0.2      # real loss on every path, all the time
SAMPLE_S = 5             # RSS, descriptors and counters
CTRL_LOSS_TMO_S = 60     # a target restart is over long before
NS_MIB = 256             # each job's file namespace
# Blocks are read back and checked after every this many writes, while the
# job runs: without it fio checks all it wrote once the namespace's size
# has passed, a phase of reads its bandwidth log does not record (on lossy
# 40 Mbit paths, 28 s without a row: no stall, yet it looked like one).
VERIFY_BACKLOG = 64
KINDS = ("blackhole", "carrier", "loss-burst", "rate", "target-restart", "ana", "control")
# fio's words when a block read back is not what was written.
VERIFY_FAILED = re.compile(r"verify: bad|verify failed|bad magic|verify type mismatch|crc32c: .*(wanted|got)", re.I)
# Flat: after the warm-up, the last tenth of the samples against the
# first tenth may grow by this much, no more.
RSS_SLACK_MIB, RSS_SLACK_FRACTION, FD_SLACK = 4.0, 0.05, 2


def warmup_s(seconds):
    """The first minute, or a tenth of a short soak."""
    return min(60, seconds / 10)


def schedule(seed, seconds, rate_mbit=RATE_MBIT):
    """The faults of a soak of `seconds`, one at a time with 15..45 s of
    quiet between them, from `seed` alone: the same seed, the same faults.
    A rate fault drops a path to a tenth, a quarter or half of rate_mbit
    (the paths' own rate), wherever the soak runs."""
    rng = random.Random(seed)
    out, t = [], warmup_s(seconds)
    while True:
        t += rng.uniform(15, 45)
        kind = rng.choice(KINDS)
        f = {"kind": kind, "at_s": round(t, 1), "path": rng.randint(1, PATHS)}
        if kind in ("blackhole", "carrier"):
            f["seconds"] = rng.randint(2, 8)
        elif kind == "loss-burst":
            f |= {"seconds": rng.randint(5, 20), "loss_pct": rng.choice((2, 5, 10))}
        elif kind == "rate":
            f["seconds"] = rng.randint(10, 30)  # before the rate: the order a seed has always drawn them in
            r = round(rate_mbit * rng.choice((0.1, 0.25, 0.5)), 1)
            f["rate_mbit"] = int(r) if r == int(r) else r
        elif kind == "target-restart":
            f |= {"seconds": rng.randint(1, 5), "path": None}
        elif kind == "ana":
            f["seconds"] = rng.randint(5, 15)
        else:
            f |= {"seconds": 3, "path": None}
        if t + f["seconds"] > seconds - 20:
            return out
        out.append(f)
        t += f["seconds"]


def proc_usage(pid):
    """RSS in MiB and open descriptors of a process, or (None, None) once gone."""
    try:
        rss = int(re.search(r"^VmRSS:\s+(\d+)", pathlib.Path(f"/proc/{pid}/status").read_text(), re.M).group(1)) / 1024
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError, AttributeError):
        return None, None


def sender_counters(lab):
    """Per direction: the lab's drops and the sender's retransmitted
    segments and timeouts, since the lab came up."""
    d = json.loads(common.lab(lab, "counters", "--json"))["directions"]
    return {way: {"dropped": v["dropped_packets"], "retrans": v["sender_tcp"]["TcpRetransSegs"],
                  "timeouts": v["sender_tcp"]["TcpExtTCPTimeouts"]} for way, v in d.items()}


def counters_delta(a, b):
    """What both directions' senders did between two sender_counters()."""
    return {k: sum(b[w][k] - a[w][k] for w in a) for k in ("dropped", "retrans", "timeouts")}


class SoakTarget:
    """mpnvme-target in the lab's target namespace on TARGET_CPU, serving
    both file namespaces on both paths, with a control socket; restartable
    (the files keep the data)."""

    def __init__(self, lab, work):
        self.lab, self.work, self.generation, self.proc = lab, work, 0, None
        self.control = work / "control"
        self.files = []
        for nsid in (1, 2):
            f = work / f"soak-ns{nsid}.img"
            with open(f, "wb") as out:
                out.truncate(NS_MIB << 20)
            self.files.append(f)
        self.start()

    def start(self):
        self.generation += 1
        log = self.work / f"target-{self.generation}.log"
        ns = [a for i, f in enumerate(self.files, 1) for a in ("--ns", f"file:{f},nsid={i}")]
        with open(log, "w") as out:
            self.proc = subprocess.Popen([str(common.LAB), "-n", self.lab, "exec", "target", "taskset", "-c",
                                          str(common.TARGET_CPU), str(common.TARGET), "--listen", common.lab_paths(PATHS),
                                          "--subnqn", NQN, *ns, "--control", str(self.control), "--log-level", "info"],
                                         stdout=out, stderr=subprocess.STDOUT)
        common.wait_ready(log, self.proc)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def ctl(self, *words):
        r = subprocess.run([str(common.TARGET), "ctl", str(self.control), " ".join(words)], capture_output=True, text=True)
        if r.returncode or not r.stdout.startswith("ok"):
            common.die(f"soak: control '{' '.join(words)}' refused: {(r.stdout + r.stderr).strip()}")
        return r.stdout

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()
        return None


def apply(fault, lab, target):
    """Start one fault; returns the call that ends it."""
    k, p = fault["kind"], str(fault.get("path"))
    if k == "blackhole":
        common.lab(lab, "loss", p, "100")
        return lambda: common.lab(lab, "loss", p, str(BASE_LOSS_PCT))
    if k == "carrier":
        common.lab(lab, "link", p, "down")
        return lambda: common.lab(lab, "link", p, "up")
    if k == "loss-burst":
        common.lab(lab, "loss", p, str(fault["loss_pct"]))
        return lambda: common.lab(lab, "loss", p, str(BASE_LOSS_PCT))
    if k == "rate":
        common.lab(lab, "rate", p, f"{fault['rate_mbit']}mbit")
        return lambda: common.lab(lab, "rate", p, f"{RATE_MBIT}mbit")
    if k == "target-restart":
        target.kill()
        return target.start
    if k == "ana":
        target.ctl("ana", p, "1", "inaccessible")
        return lambda: target.ctl("ana", p, "1", "optimized")
    # control: a subsystem and a host come and go beside the soak's.
    target.ctl("subsystem", "add", SCRATCH_NQN, "any-host", "ram:16m")
    target.ctl("host", "allow", SCRATCH_NQN, SCRATCH_HOST)
    target.ctl("subsystems")

    def end():
        target.ctl("host", "deny", SCRATCH_NQN, SCRATCH_HOST)
        target.ctl("subsystem", "remove", SCRATCH_NQN)
    return end


class EngineLog:
    """fio's standard error, each line stamped with the time it came: the
    engine's path events (down, up again, reconnected) and any error."""

    EVENT = re.compile(r"path down|path up again|reconnected after|controller reset|path not usable|verify|error", re.I)

    def __init__(self, stream, path):
        self.events, self.path = [], path
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self._thread.start()

    def _run(self, stream):
        with open(self.path, "w") as out:
            for line in stream:
                out.write(line)
                if self.EVENT.search(line):
                    self.events.append((time.time(), line.strip()))

    def join(self):
        self._thread.join(timeout=10)


def fio_command(lab, work, seconds):
    """One fio, two verifying jobs: multipath over TCP on nsid 1 and one
    MPTCP connection on nsid 2."""
    return [*common.lab_fio(lab), f"--ioengine=external:{common.ENGINE}", f"--subnqn={NQN}", "--rw=randrw",
            "--bsrange=4k-128k", "--iodepth=16", f"--size={NS_MIB}m", "--verify=crc32c", "--verify_fatal=1",
            "--do_verify=1", f"--verify_backlog={VERIFY_BACKLOG}", "--time_based=1", f"--runtime={int(seconds)}", "--thread=1",
            f"--ctrl_loss_tmo={CTRL_LOSS_TMO_S}", "--reconnect_delay=1", "--io_timeout=3000", "--log_level=info",
            f"--write_bw_log={work / 'soak'}", "--log_avg_msec=1000", "--output-format=json",
            f"--output={work / 'fio.json'}", f"--path_stats={work / 'paths.jsonl'}",
            "--name=tcp-multipath", "--transport=tcp", f"--traddr={common.lab_paths(PATHS)}", "--iopolicy=round-robin",
            "--nsid=1",
            "--name=mptcp", "--transport=mptcp", "--traddr=10.1.1.1", "--nsid=2"]


def sample(t0, fio_pid, target, lab):
    fio_rss, fio_fds = proc_usage(fio_pid)
    t_rss, t_fds = proc_usage(target.proc.pid)
    return {"t_s": round(time.time() - t0, 1), "fio_rss_mib": fio_rss, "fio_fds": fio_fds, "target_rss_mib": t_rss,
            "target_fds": t_fds, "target_generation": target.generation, "senders": sender_counters(lab)}


def run_soak(lab, work, seconds, seed):
    """The soak itself, in a lab that is up; the raw record."""
    faults = schedule(seed, seconds)
    target = SoakTarget(lab, work)
    bar = progress.Progress("soak", seconds, seconds=True)
    t0 = time.time()
    fio = subprocess.Popen(fio_command(lab, work, seconds), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           cwd=work, env=common.fio_env(), start_new_session=True)
    log = EngineLog(fio.stderr, work / "fio.log")
    samples, done = [], []
    next_sample = 0.0
    pending = list(faults)
    try:
        while fio.poll() is None:
            now = time.time() - t0
            if pending and now >= pending[0]["at_s"]:
                f = pending.pop(0)
                before = sender_counters(lab)
                started = time.time() - t0
                end = apply(f, lab, target)
                bar.say(f"soak: {progress.clock(started)} {f['kind']}"
                        f"{'' if f.get('path') is None else ' path ' + str(f['path'])} for {f['seconds']} s")
                time.sleep(f["seconds"])
                end()
                ended = time.time() - t0
                done.append(f | {"started_s": round(started, 1), "ended_s": round(ended, 1),
                                 "senders": counters_delta(before, sender_counters(lab))})
            if now >= next_sample:
                samples.append(sample(t0, fio.pid, target, lab))
                next_sample = now + SAMPLE_S
                bar.step(min(now, seconds), f"{len(done)} of {len(faults)} faults")
            if now > seconds + CTRL_LOSS_TMO_S + 120:
                os.killpg(fio.pid, signal.SIGKILL)
                common.die(f"soak: fio still running {int(now - seconds)} s after its runtime (a hang)")
            time.sleep(0.2)
    finally:
        bar.done()
        if fio.poll() is None:
            os.killpg(fio.pid, signal.SIGKILL)
        fio.wait()
        log.join()
        target_rc = target.stop()
    return {"faults": done, "samples": samples, "fio_rc": fio.returncode, "target_rc": target_rc,
            "events": [(round(t - t0, 1), line) for t, line in log.events], "t0": t0}


# Flatness is judged over this much time after the warm-up, or not at
# all: a few minutes show the allocator settling, not a leak. A target
# restarted by the soak is judged in each of its lives of at least
# GENERATION_MIN_S after its own warm-up, together this long.
JUDGED_AFTER_S = 600
GENERATION_MIN_S = 180


def growth(rows, key_rss, key_fds):
    """The median of the last tenth of the rows against the first tenth
    (the most descriptors, when key_fds names them)."""
    n = max(2, len(rows) // 10)
    early, late = rows[:n], rows[-n:]
    rss0, rss1 = statistics.median(s[key_rss] for s in early), statistics.median(s[key_rss] for s in late)
    fd0, fd1 = (max(s[key_fds] for s in early), max(s[key_fds] for s in late)) if key_fds else (None, None)
    g = rss1 - rss0
    flat = g <= max(RSS_SLACK_MIB, RSS_SLACK_FRACTION * rss0) and (fd0 is None or fd1 <= fd0 + FD_SLACK)
    return {"samples": len(rows), "rss_mib": [round(rss0, 1), round(rss1, 1)], "rss_growth_mib": round(g, 1),
            "fds": [fd0, fd1], "flat": flat}


def flatness(samples, key_rss, key_fds, warm):
    """Growth of RSS (or another memory figure) and descriptors (key_fds
    None: none) after the warm-up (growth()). The target (a key starting
    with "target") is judged in each generation the soak's restarts made,
    each after its own warm-up, and the worst is given. Not judged (flat
    None, with why) for a soak too short, or for an ASan build, whose
    quarantine holds freed memory by design."""
    if os.environ.get("MPNVME_PRELOAD"):
        return {"flat": None, "why": "an ASan build (its quarantine keeps freed memory)"}
    rows = [s for s in samples if s["t_s"] >= warm and s.get(key_rss) is not None]
    if not key_rss.startswith("target"):
        if len(rows) < 10 or rows[-1]["t_s"] - rows[0]["t_s"] < JUDGED_AFTER_S:
            return {"flat": None, "why": f"under {JUDGED_AFTER_S // 60} min after the warm-up"}
        return growth(rows, key_rss, key_fds)
    lives = {}
    for s in samples:
        if s.get(key_rss) is not None:
            lives.setdefault(s["target_generation"], []).append(s)
    judged = []
    for life in lives.values():
        kept = [s for s in life if s["t_s"] >= max(warm, life[0]["t_s"] + warm)]
        if len(kept) >= 10 and kept[-1]["t_s"] - kept[0]["t_s"] >= GENERATION_MIN_S:
            judged.append(kept)
    seconds = sum(k[-1]["t_s"] - k[0]["t_s"] for k in judged)
    if seconds < JUDGED_AFTER_S:
        return {"flat": None, "why": f"under {JUDGED_AFTER_S // 60} min in lives of at least {GENERATION_MIN_S // 60} min "
                f"after their warm-up ({len(lives)} generations)"}
    each = [growth(k, key_rss, key_fds) for k in judged]
    worst = max(each, key=lambda g: (not g["flat"], g["rss_growth_mib"]))
    return worst | {"flat": all(g["flat"] for g in each), "generations": len(judged), "judged_s": round(seconds)}


def longest_stall(rows):
    """The longest time without a completion in a 1 s bandwidth log's rows,
    in seconds: fio writes no row for an interval in which nothing
    completed, and a row of 0 is one too."""
    longest = quiet = previous = 0
    for t, rate in rows:
        gap = t - previous
        if rate == 0:
            quiet += gap
        else:
            longest, quiet = max(longest, quiet + max(0, gap - 1000)), 0
        previous = t
    return round(max(longest, quiet) / 1000, 1)


def summarize(raw, work, seconds, seed):
    result = fio_logs.fio_json(work / "fio.json") if (work / "fio.json").exists() else {"jobs": []}
    jobs = []
    logs = sorted(work.glob("soak_bw.*.log"))
    stats = {}
    if (work / "paths.jsonl").exists():
        for line in (work / "paths.jsonl").read_text().splitlines():
            d = json.loads(line)
            stats.setdefault(d["job"], []).extend(d["paths"])
    for i, j in enumerate(result["jobs"]):
        paths = stats.get(j["jobname"], [])
        jobs.append({"name": j["jobname"], "error": j["error"], "written_mib": round(j["write"]["io_bytes"] / 1048576),
                     "read_mib": round(j["read"]["io_bytes"] / 1048576),
                     "failovers": sum(p.get("failovers", 0) for p in paths),
                     "reconnects": sum(p.get("reconnects", 0) for p in paths),
                     "down_s": round(sum(p.get("down_s", 0) for p in paths), 1),
                     "longest_stall_s": longest_stall(fio_logs.log_rows(logs[i])) if i < len(logs) else None})
    verify_failures = sum(1 for _, line in raw["events"] if VERIFY_FAILED.search(line))
    warm = warmup_s(seconds)
    fio_flat = flatness(raw["samples"], "fio_rss_mib", "fio_fds", warm)
    target_flat = flatness(raw["samples"], "target_rss_mib", "target_fds", warm)
    errors = sum(1 for j in jobs if j["error"]) + (raw["fio_rc"] != 0)
    verdict = "pass" if (errors == 0 and verify_failures == 0 and len(jobs) == 2 and fio_flat["flat"] is not False
                         and target_flat["flat"] is not False) else "fail"
    return {"seed": seed, "minutes": round(seconds / 60, 1), "verdict": verdict, "fio_rc": raw["fio_rc"],
            "target_rc": raw["target_rc"], "io_errors": errors, "verify_failures": verify_failures, "jobs": jobs,
            "faults": raw["faults"], "events": raw["events"], "samples": raw["samples"], "fio": fio_flat,
            "target": target_flat, "warmup_s": warm,
            "setting": conditions.cell_context(conditions.DEFAULT_CC, [RATE_MBIT] * PATHS, BASE_LOSS_PCT, 0, "all")
            | {"line_mib_s": round(published.mbit_to_mib_s(RATE_MBIT * PATHS), 1), "ctrl_loss_tmo_s": CTRL_LOSS_TMO_S,
               "io_timeout_ms": 3000, "namespace_mib": NS_MIB},
            "throughput": {pathlib.Path(p).name: fio_logs.log_rows(p) for p in logs}}


def run(minutes, work, seed=None):
    """The lab soak: `minutes` of it, faults from `seed` (random when None)."""
    seed = seed if seed is not None else random.SystemRandom().randrange(1 << 32)
    seconds = minutes * 60
    lab = f"s{os.getpid()}"
    print(f"soak: {minutes} min, seed {seed}: {len(schedule(seed, seconds))} faults", flush=True)
    try:
        common.lab(lab, "up", "--paths", str(PATHS), "--rate", f"{RATE_MBIT}mbit", "--cc", conditions.DEFAULT_CC,
                   "--endpoints", "all")
        for p in range(1, PATHS + 1):
            common.lab(lab, "loss", str(p), str(BASE_LOSS_PCT))
        raw = run_soak(lab, work, seconds, seed)
    finally:
        common.lab_down(lab)
    return summarize(raw, work, seconds, seed)


def per_second(rows):
    """A 1 s bandwidth log as minutes and MiB/s, with the intervals fio left
    out (nothing completed) as zeros: a stall shows as one."""
    t, v, previous = [], [], 0
    for ms, kib_s in rows:
        for gap in range(previous + 1000, ms - 500, 1000):
            t.append(gap / 60000)
            v.append(0)
        t.append(ms / 60000)
        v.append(kib_s / 1024)
        previous = ms
    return t, v


COLORS = {"blackhole": "black", "carrier": "tab:red", "loss-burst": "tab:orange", "rate": "tab:blue",
          "target-restart": "tab:purple", "ana": "tab:green", "control": "tab:gray"}


def plot(res, out):
    """The lab soak's plot (plot_soak)."""
    throughput = {}
    for name, rows in sorted(res["throughput"].items()):
        throughput[res["jobs"][int(name.rsplit(".", 2)[1]) - 1]["name"] if res["jobs"] else name] = rows
    title = (f"soak: {res['minutes']} min, seed {res['seed']}, {len(res['faults'])} faults "
             f"({res['setting']['conditions']}, {PATHS} x {RATE_MBIT} Mbit)")
    return [plot_soak(title, throughput, res["samples"], (("fio_rss_mib", "fio"), ("target_rss_mib", "mpnvme-target")),
                      (("fio_fds", "fio"), ("target_fds", "mpnvme-target")), res["faults"], out / "soak.png")]


def plot_soak(title, throughput, samples, rss, fds, faults, path):
    """Over a soak's minutes: each job's MiB/s (throughput: label -> 1 s
    bandwidth log rows), the memory and descriptors of the processes
    (rss, fds: (sample key, label) pairs), and the senders' retransmissions
    and timeouts per sample; the faults shaded where they were."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(4, 1, figsize=(11, 11), sharex=True)
    for label, rows in throughput.items():
        t, v = per_second(rows)
        axes[0].step(t, v, where="pre", lw=0.6, label=label)
    axes[0].set_ylabel("MiB/s (1 s)")
    m = [x["t_s"] / 60 for x in samples]
    for key, label in rss:
        axes[1].plot(m, [x.get(key) for x in samples], label=label)
    axes[1].set_ylabel("memory (MiB)")
    for key, label in fds:
        axes[2].plot(m, [x.get(key) for x in samples], label=label)
    axes[2].set_ylabel("open descriptors")
    for key, label in (("retrans", "retransmitted segments"), ("timeouts", "retransmission timeouts")):
        per = [0] * min(1, len(samples)) + [sum(b["senders"][w][key] - a["senders"][w][key] for w in a["senders"])
                                            for a, b in zip(samples, samples[1:])]
        axes[3].plot(m, per, label=label, lw=0.8)
    axes[3].set_yscale("symlog")
    axes[3].set_ylabel(f"senders, per {SAMPLE_S} s")
    axes[3].set_xlabel("minutes")
    seen = set()
    for f in faults:
        for ax in axes:
            ax.axvspan(f["started_s"] / 60, f["ended_s"] / 60, color=COLORS[f["kind"]], alpha=0.25,
                       label=None if (ax is not axes[0] or f["kind"] in seen) else f["kind"])
        seen.add(f["kind"])
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper right", ncol=4)
    axes[0].set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# What a host's line says it did, in the fault table's words: the engine's
# and the kernel host's.
DID = (("down", re.compile(r"path down")), ("up again", re.compile(r"up again")),
       ("reset", re.compile(r"error recovery|controller reset", re.I)), ("reconnected", re.compile(r"reconnected", re.I)),
       ("ANA", re.compile(r"not usable|ANA", re.I)))


def fault_row(f, events):
    during = [line for t, line in events if f["started_s"] <= t <= f["ended_s"] + 15]
    did = ", ".join(word for word, pattern in DID if any(pattern.search(line) for line in during)) or "-"
    where = "" if f.get("path") is None else f" path {f['path']}"
    extra = f" {f['loss_pct']} %" if "loss_pct" in f else f" {f['rate_mbit']} Mbit" if "rate_mbit" in f else ""
    d = f["senders"]
    return (f"| {progress.clock(f['started_s'])} | {f['kind']}{where}{extra} | {f['ended_s'] - f['started_s']:.0f} | "
            f"{d['dropped']} | {d['retrans']} | {d['timeouts']} | {did} |")


def target_who(f):
    """The target's row name: in how many of its lives it was judged."""
    return f"mpnvme-target (worst of {f['generations']} lives, {f['judged_s'] // 60} min)" if "generations" in f else "mpnvme-target"


def jobs_table(jobs):
    lines = ["| job | written MiB | read and verified MiB | error | failovers | reconnects | paths down (s) | longest stall (s) |",
             "|---|---|---|---|---|---|---|---|"]
    return lines + [f"| {j['name']} | {j['written_mib']} | {j['read_mib']} | {j['error']} | {j['failovers']} | "
                    f"{j['reconnects']} | {j['down_s']} | {j['longest_stall_s']} |" for j in jobs]


def flatness_table(rows):
    """rows: (who, unit, flatness()) for each process or figure watched."""
    lines = ["| process | after warm-up -> at the end | growth | descriptors | flat |", "|---|---|---|---|---|"]
    for who, unit, f in rows:
        if f["flat"] is None:
            lines.append(f"| {who} | not judged: {f['why']} | | | |")
        else:
            fds = "-" if f["fds"][0] is None else f"{f['fds'][0]} -> {f['fds'][1]}"
            lines.append(f"| {who} | {f['rss_mib'][0]} -> {f['rss_mib'][1]} {unit} | {f['rss_growth_mib']} {unit} | "
                         f"{fds} | {'yes' if f['flat'] else '**no**'} |")
    return lines


def faults_table(faults, events, hosts):
    return ["Each fault, with what both directions' senders did while it lasted (the kernel's own counters: "
            f"a blackhole shows retransmission timeouts) and what {hosts} logged then and in the 15 s after:", "",
            "| at | fault | s | dropped | retransmitted | timeouts | hosts did |", "|---|---|---|---|---|---|---|"] + \
        [fault_row(f, events) for f in faults]


def report(res, plots):
    st = res["setting"]
    lines = [f"## Soak: {res['minutes']} min of verified I/O under faults: {res['verdict'].upper()}", "",
             f"Seed {res['seed']} (`bench/run soak --where lab --minutes {res['minutes']:g} --seed {res['seed']}` "
             f"replays the schedule); {PATHS} x {RATE_MBIT} Mbit lab paths, {st['conditions']}, {st['cc']}, Linux "
             f"{st['kernel']}, MPTCP endpoints `{st['endpoints']}`; ctrl_loss_tmo {st['ctrl_loss_tmo_s']} s, io_timeout "
             f"{st['io_timeout_ms']} ms; two jobs of one fio (randrw 4k-128k, QD16, crc32c verify) on file "
             f"namespaces of {st['namespace_mib']} MiB; warm-up {res['warmup_s']:.0f} s.", "",
             f"I/O errors: {res['io_errors']}; verify failures: {res['verify_failures']}; fio exit status "
             f"{res['fio_rc']}; target exit status {res['target_rc']}.", ""]
    lines += jobs_table(res["jobs"]) + [""]
    lines += flatness_table([("fio", "MiB RSS", res["fio"]), (target_who(res["target"]), "MiB RSS", res["target"])])
    lines += [""] + faults_table(res["faults"], res["events"], "the engine")
    lines += [""] + [f"![{p.stem}]({p.name})" for p in plots] + [""]
    return "\n".join(lines)
