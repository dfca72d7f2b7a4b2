# SPDX-License-Identifier: GPL-2.0-only
"""What secure channel concatenation costs at connect time, on loopback:
the engine against mpnvme-target with no authentication, with
DH-HMAC-CHAP (SHA-256, ffdhe2048) on every queue, with TLS on a
configured PSK, and with concatenation (DH-HMAC-CHAP on the first admin
queue, then every queue on TLS with the generated PSK), over TCP and
MPTCP. Each run is one fio job of 4 I/O queues reading 16 KiB; per mode
the association time the engine logs (admin queue up to a live
controller, the authentication and the admin queue's restart on TLS
included) and fio's wall time from start to exit, medians of --runs runs
taken in turns, as ratios to DH-HMAC-CHAP of the same transport. Target
on CPU 0, fio on CPU 1, as the floor."""
import re
import subprocess
import time

from common import ENGINE, FIO_CPU, TARGET, TARGET_CPU, die, fio_env, free_port, median_spread, spread_text, stop, wait_ready

NQN = "nqn.2026-12.io.mpnvme:bench-concat"
HOST = "nqn.2026-12.io.mpnvme:bench-concat-host"  # a DH-HMAC-CHAP key
TLS_HOST = "nqn.2026-12.io.mpnvme:bench-concat-tls"  # a configured PSK only: its TLS queues need no DH-HMAC-CHAP
MODES = ("plaintext", "dhchap", "tls", "concat")
ASSOCIATION = re.compile(r"association up in ([0-9.]+) ms")


def _keys(work):
    dh = subprocess.run(["nvme", "gen-dhchap-key", "--hmac=1", f"--nqn={HOST}"], capture_output=True, text=True,
                        check=True).stdout.strip()
    psk = subprocess.run(["nvme", "gen-tls-key", "--hmac=1"], capture_output=True, text=True, check=True).stdout.strip()
    paths = {}
    for name, text in (("dh", dh), ("psk", psk)):
        p = work / f"concat-{name}.key"
        p.touch(mode=0o600)
        p.write_text(text + "\n")
        paths[name] = p
    return paths


def _target(transport, keys, work):
    """A plaintext port and a TLS-optional one; the keyed hosts must prove
    their keys on either, so the plaintext row runs as a host without one."""
    plain, secure = free_port(), free_port()
    log = work / f"concat-target-{transport}.log"
    with open(log, "w") as out:
        p = subprocess.Popen(["taskset", "-c", str(TARGET_CPU), str(TARGET), "--transport", transport, "--listen",
                              f"127.0.0.1:{plain},127.0.0.1:{secure}:tls-optional", "--subnqn", NQN, "--ns", "ram:64m",
                              "--dhchap-key", f"{HOST}=@{keys['dh']}", "--dhchap-dhgroup", "ffdhe2048",
                              "--dhchap-hash", "sha256", "--tls-key", f"{TLS_HOST}=@{keys['psk']}", "--allow-any-host",
                              "--log-level", "warn"], stdout=out, stderr=subprocess.STDOUT)
    wait_ready(log, p)
    return p, plain, secure


def _options(mode, keys, plain, secure):
    common = [f"--traddr=127.0.0.1:{secure if mode != 'plaintext' else plain}"]
    if mode == "plaintext":
        return common + ["--hostnqn=nqn.2026-12.io.mpnvme:bench-concat-anyone"]
    common.append(f"--hostnqn={TLS_HOST if mode == 'tls' else HOST}")
    if mode == "dhchap":
        return common + [f"--dhchap_secret_file={keys['dh']}", "--dhchap_dhgroup=ffdhe2048", "--dhchap_hash=sha256"]
    if mode == "tls":
        return common + ["--tls=1", f"--tls_key_file={keys['psk']}", "--tls_mode=user"]
    return common + [f"--dhchap_secret_file={keys['dh']}", "--dhchap_dhgroup=ffdhe2048", "--dhchap_hash=sha256",
                     "--concat=1", "--tls_mode=user"]


def _one(transport, mode, keys, plain, secure, work):
    cmd = ["taskset", "-c", str(FIO_CPU), "fio", "--name=c", f"--ioengine=external:{ENGINE}", "--thread",
           f"--transport={transport}", f"--subnqn={NQN}", "--rw=read", "--bs=4k", "--size=16k", "--nr_io_queues=4",
           "--log_level=info", "--output=/dev/null"] + _options(mode, keys, plain, secure)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=work, env=fio_env(), timeout=120)
    wall = (time.monotonic() - t0) * 1000
    if p.returncode:
        die(f"concat cost: {transport} {mode}: fio exited {p.returncode}: {p.stderr[-1500:]}")
    assoc = [float(m) for m in ASSOCIATION.findall(p.stderr)]
    if not assoc:
        die(f"concat cost: {transport} {mode}: no association time in the engine's log: {p.stderr[-800:]}")
    return assoc[-1], wall  # the job's association (the size probe's comes first)


def run(runs, work, smoke=False):
    keys = _keys(work)
    with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
        cc = f.read().strip()
    res = {"runs": runs, "cc": cc, "rows": {}}
    for transport in ("tcp", "mptcp"):
        target, plain, secure = _target(transport, keys, work)
        try:
            samples = {m: {"assoc_ms": [], "wall_ms": []} for m in MODES}
            for _ in range(runs):
                for mode in MODES:  # in turns: drift hits every mode alike
                    a, w = _one(transport, mode, keys, plain, secure, work)
                    samples[mode]["assoc_ms"].append(a)
                    samples[mode]["wall_ms"].append(w)
        finally:
            stop(target)
        res["rows"][transport] = {m: {k: median_spread(v) for k, v in s.items()} for m, s in samples.items()}
    return res


def report(res):
    lines = ["Connect-time cost on loopback (one fio job, 4 I/O queues, 16 KiB read; SHA-256, ffdhe2048; TLS records in "
             f"user space; congestion control {res.get('cc', '?')}; no warm-up: each run connects afresh; medians of "
             f"{res['runs']} runs in turns (min..max); ratios to DH-HMAC-CHAP of the same transport, the plaintext row "
             "the floor without authentication).",
             "", "| transport | mode | association ms | x DH-HMAC-CHAP | fio wall ms | x DH-HMAC-CHAP |",
             "|---|---|---|---|---|---|"]
    for transport, rows in res["rows"].items():
        base = rows["dhchap"]
        for mode in MODES:
            a, w = rows[mode]["assoc_ms"], rows[mode]["wall_ms"]
            lines.append(f"| {transport} | {mode} | {spread_text(a, 1)} | {a['median'] / base['assoc_ms']['median']:.2f} "
                         f"| {spread_text(w)} | {w['median'] / base['wall_ms']['median']:.2f} |")
    return "\n".join(lines) + "\n"
