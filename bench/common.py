# SPDX-License-Identifier: GPL-2.0-only
"""What every bench experiment shares: where the programs are, CPU
placement, starting and stopping the target, fio and the raw-transport
control in the lab, and medians with their spread. The rest lives by
concern: conditions.py (what a cell ran under), samplers.py (what is
sampled during a run), fio_logs.py (fio's results), loss_model.py and
published.py. No module-level state changes: what the command line
chooses travels in experiments.Context."""
import json
import os
import pathlib
import re
import socket
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("MPNVME_BUILD", ROOT / "build"))
ENGINE = BUILD / "engine" / "fio-mpnvme.so"
TARGET = BUILD / "mpnvme-target" / "mpnvme-target"
FLOOR = BUILD / "bench" / "mpnvme-floor"
LAB = ROOT / "toolkit" / "lab" / "mpnvme-lab"
# The target and fio on different CPUs: a shared core measures the scheduler, not either.
TARGET_CPU, FIO_CPU = 0, 1


def fio_env():
    """fio's environment: an ASan-built engine (MPNVME_PRELOAD, as the tests
    set it) needs its runtime preloaded."""
    env = dict(os.environ)
    if os.environ.get("MPNVME_PRELOAD"):
        env["LD_PRELOAD"] = os.environ["MPNVME_PRELOAD"]
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1")
    return env


def check_placement(busy_threads, what, allow_oversubscribe=False):
    """A figure measured with more spinning threads than cores
    measures the scheduler, not the I/O path. Refused unless asked for
    (bench/run --allow-oversubscribe)."""
    cpus = os.cpu_count() or 1
    if busy_threads > cpus and not allow_oversubscribe:
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


def median_spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def spread_text(m, digits=0):
    """'median (min..max)' of a median_spread, for tables."""
    f = f"{{:.{digits}f}}"
    if len(m["runs"]) < 2:
        return f.format(m["median"])
    return f"{f.format(m['median'])} ({f.format(m['min'])}..{f.format(m['max'])})"


