# SPDX-License-Identifier: GPL-2.0-only
"""What every bench experiment shares: where the programs are, CPU
placement, process CPU time, medians with their spread, fio's JSON."""
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("MPNVME_BUILD", ROOT / "build"))
ENGINE = BUILD / "engine" / "fio-mpnvme.so"
TARGET = BUILD / "toolkit" / "target" / "mpnvme-target"
FLOOR = BUILD / "bench" / "mpnvme-floor"
LAB = ROOT / "toolkit" / "lab" / "mpnvme-lab"
# The target and fio on different CPUs (seed 004: never share a core).
TARGET_CPU, FIO_CPU = 0, 1


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
    """Seed 004: a figure measured with more spinning threads than cores
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


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_ready(log, proc, seconds=10):
    """Until mpnvme-target says ready; dies with its log if it exits or takes too long."""
    deadline = time.time() + seconds
    while "mpnvme-target: ready" not in log.read_text():
        if proc.poll() is not None or time.time() > deadline:
            die(f"mpnvme-target did not start: {log.read_text()}")
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


def run_fio(cmd, tag, cwd=None):
    """fio's command line `cmd` in fio_env(); dies with the end of fio's
    errors, naming the run `tag`, when fio fails."""
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=fio_env())
    if r.returncode:
        die(f"fio failed ({tag}): {r.stderr[-2000:]}")


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


STEADY_LOG_MS = 500  # fio --log_avg_msec of the throughput logs steady_mib_s reads


def steady_mib_s(paths):
    """Throughput of a time-based run from its fio bandwidth logs (one per
    job, NAME_bw.N.log: time in ms from the end of ramp_time, KiB/s over
    the interval ending there), the first interval left out: the bytes of
    the later intervals (rate x length) over their time, summed over the
    jobs. Not the mean of the rates: an interval the process was late to
    close is long and slow, the next one short and fast, and their mean
    reads above the line. And not fio's own figure, which divides every
    byte completed by the runtime, including the commands still in flight
    when the time is up (4 jobs x 256 x 128 KiB is 128 MiB, 9 % of a 3 s
    run at 477 MiB/s)."""
    total = 0.0
    for p in paths:
        rows = [line.split(",") for line in p.read_text().splitlines() if line.strip()]
        t = [int(r[0]) for r in rows]
        kib_s = [int(r[1]) for r in rows]
        if len(t) < 2:
            continue
        kib = sum(kib_s[i] * (t[i] - t[i - 1]) / 1000 for i in range(1, len(t)))
        total += kib / ((t[-1] - t[0]) / 1000)
    return total / 1024


def median_spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def fio_json(path):
    """fio's JSON output (fio may print other lines before it)."""
    text = path.read_text()
    return json.loads(text[text.index("{"):])
