# SPDX-License-Identifier: GPL-2.0-only
"""What the secure channel costs, on loopback: the engine against
mpnvme-target in plaintext and over TLS 1.3 (TLS_AES_128_GCM_SHA256), for
TCP with the records in user space and in the kernel (where this kernel
has the tls module) and for MPTCP (user space: kernel TLS refuses MPTCP
sockets). Per row QD1 4 KiB read p50 (engine poll=busy), QD32 4 KiB read
IOPS, 128 KiB read and write MiB/s at QD16 (poll=block), and CPU seconds
per GiB moved of fio and of the target; the report gives each as a ratio
to the plaintext row of the same transport. Target on CPU 0, fio on CPU 1,
as the floor."""
import contextlib
import socket
import subprocess

from common import TARGET, TARGET_CPU, median_spread, stop, wait_ready

NQN = "nqn.2026-11.io.mpnvme:bench"
HOST = "nqn.2026-12.io.mpnvme:bench-tls"
ROWS = (("tcp", "plaintext"), ("tcp", "user"), ("tcp", "ktls"), ("mptcp", "plaintext"), ("mptcp", "user"))
WORKLOADS = (("qd1", ["--rw=randread", "--bs=4k", "--iodepth=1", "--poll=busy"]),
             ("qd32", ["--rw=randread", "--bs=4k", "--iodepth=32", "--poll=block"]),
             ("128k-read", ["--rw=read", "--bs=128k", "--iodepth=16", "--poll=block"]),
             ("128k-write", ["--rw=write", "--bs=128k", "--iodepth=16", "--poll=block"]))


def kernel_tls_available():
    """Whether a TCP socket here takes the tls ULP (the module is there)."""
    with socket.create_server(("127.0.0.1", 0)) as srv, socket.create_connection(srv.getsockname()) as c:
        try:
            c.setsockopt(socket.IPPROTO_TCP, 31, b"tls")  # TCP_ULP
            return True
        except OSError:
            return False


@contextlib.contextmanager
def tls_target(transport, key, work):
    """One target per transport, with a plaintext and a TLS port (kernel
    TLS on its accepted sockets where they take it)."""
    from common import free_port
    plain, secure = free_port(), free_port()
    log_path = work / f"tls-target-{transport}.log"
    with open(log_path, "w") as log:
        p = subprocess.Popen(["taskset", "-c", str(TARGET_CPU), str(TARGET), "--transport", transport, "--listen",
                              f"127.0.0.1:{plain},127.0.0.1:{secure}:tls", "--subnqn", NQN, "--ns", "ram:1g",
                              "--tls-key", f"{HOST}=@{key}", "--log-level", "warn"], stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_ready(log_path, p)
            yield plain, secure, p.pid
        finally:
            stop(p)


def run(runs, seconds, work, fio, smoke=False):
    """`fio(port, pid, opts, seconds, work)` is the floor's runner."""
    secret = subprocess.run(["nvme", "gen-tls-key"], capture_output=True, text=True, check=True).stdout.strip()
    key = work / "tls.key"
    key.touch(mode=0o600)
    key.write_text(secret + "\n")
    ktls = kernel_tls_available()
    rows = [r for r in ROWS if ktls or r[1] != "ktls"]
    workloads = WORKLOADS
    if smoke:
        rows = [r for r in rows if r[0] == "tcp" and r[1] != "ktls"]
        workloads = WORKLOADS[:1] + WORKLOADS[3:]  # QD1 and 128 KiB writes: both directions
    out = {"kernel_tls": ktls, "rows": []}
    for transport in dict.fromkeys(t for t, _ in rows):
        with tls_target(transport, key, work) as (plain, secure, pid):
            for tr, sec in (r for r in rows if r[0] == transport):
                opts = [f"--transport={tr}", f"--hostnqn={HOST}"]
                if sec != "plaintext":
                    opts += ["--tls=1", f"--tls_key_file={key}", f"--tls_mode={'ktls' if sec == 'ktls' else 'user'}"]
                port = secure if sec != "plaintext" else plain
                for name, wl in workloads:
                    samples = [fio(port, pid, opts + wl, seconds, work) for _ in range(runs)]
                    side = "write" if "write" in name else "read"
                    gib = [s[0]["io_bytes"] / 2**30 for s in samples]
                    out["rows"].append({
                        "transport": tr, "security": sec, "workload": name,
                        "iops": median_spread([s[0]["iops"] for s in samples]),
                        "mib_s": median_spread([s[0]["bw_bytes"] / 1048576 for s in samples]),
                        "p50_us": median_spread([s[0]["clat_ns"]["percentile"]["50.000000"] / 1000 for s in samples]),
                        "fio_cpu_s_per_gib": median_spread([s[1] / g for s, g in zip(samples, gib)]),
                        "target_cpu_s_per_gib": median_spread([s[2] / g for s, g in zip(samples, gib)]),
                        "side": side})
                    r = out["rows"][-1]
                    print(f"  tls {tr} {sec} {name}: p50 {r['p50_us']['median']:.1f} us, {r['iops']['median']:.0f} IOPS, "
                          f"{r['mib_s']['median']:.0f} MiB/s", flush=True)
    return out


def report(res, runs):
    """The cost table: each figure and its ratio to the plaintext row of
    the same transport and workload."""
    rows = res["rows"]
    base = {(r["transport"], r["workload"]): r for r in rows if r["security"] == "plaintext"}
    lines = ["### What TLS costs", "",
             "The engine against mpnvme-target on loopback, plaintext and over TLS 1.3 (TLS_AES_128_GCM_SHA256, a SHA-256 "
             "PSK, version 1 identity), medians of {} runs; ratios (in brackets) to the plaintext row of the same transport "
             "and workload. user: the records in user space (OpenSSL) on both sides; ktls: kernel TLS on both sides{}. "
             "QD1 p50 with poll=busy, QD32 IOPS and 128 KiB MiB/s at QD16 with poll=block; CPU seconds per GiB moved, "
             "fio and target.".format(runs, "" if res["kernel_tls"] else " (not on this kernel: no tls module, so no ktls rows)"), "",
             "| transport | records | workload | QD1 p50 us | IOPS | MiB/s | fio CPU s/GiB | target CPU s/GiB |",
             "|---|---|---|---|---|---|---|---|"]

    def cell(r, key, digits, lower_better=False):
        v = r[key]["median"]
        b = base.get((r["transport"], r["workload"]))
        ratio = f" ({v / b[key]['median']:.2f})" if b and b is not r and b[key]["median"] else ""
        return f"{v:.{digits}f}{ratio}"

    for r in rows:
        p50 = cell(r, "p50_us", 1) if r["workload"] == "qd1" else ""
        lines.append(f"| {r['transport']} | {r['security']} | {r['workload']} | {p50} | {cell(r, 'iops', 0)} | "
                     f"{cell(r, 'mib_s', 0)} | {cell(r, 'fio_cpu_s_per_gib', 2)} | {cell(r, 'target_cpu_s_per_gib', 2)} |")
    return "\n".join(lines) + "\n"
