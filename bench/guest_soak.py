# SPDX-License-Identifier: GPL-2.0-only
"""bench/run soak, its guest half: the soak with the Linux kernel as the
peer, in the qemu lab on Debian's newest kernel (2 vCPUs). Two pairs run
side by side for --minutes on the same lossy paths, and every fault of
the seed's schedule hits both at once (guest-soak.sh):

- engine-nvmet: fio with the engine, NVMe multipath over TCP, on a file
  namespace of the kernel's nvmet;
- kernel-host: the kernel's nvme-tcp host, native multipath, fio libaio
  on the multipath device, on a file namespace of mpnvme-target.

A target restart kills mpnvme-target and takes nvmet's subsystem off its
ports for the same seconds; ANA and control-socket faults change both
targets. The report has soak.py's tables and plots, with the kernel's slab
memory (where nvmet and the kernel host allocate) beside the processes'
RSS."""
import json
import os

import common
import conditions
import guest
import progress
import published
import soak

KERNEL = "latest"
SMP = 2
PATHS = 2
# Per path: what the emulated guest carries for both pairs at once, with
# the CPU left for the faults' commands and the samples.
RATE_MBIT = 40
IO_TIMEOUT_S = 30  # both hosts: the kernel's default
JOBS = ("engine-nvmet", "kernel-host")
# The processes and figures whose growth is judged: (sample key, its
# descriptors' key or None, who, unit).
WATCHED = (("engine_fio_rss_mib", "engine_fio_fds", "fio (engine -> nvmet)", "MiB RSS"),
           ("kernel_fio_rss_mib", "kernel_fio_fds", "fio (kernel host)", "MiB RSS"),
           ("target_rss_mib", "target_fds", "mpnvme-target", "MiB RSS"),
           ("kernel_slab_mib", None, "the guest kernel's slab (nvmet, the host)", "MiB"))


def fault_lines(faults):
    """The schedule as guest-soak.sh reads it: AT KIND PATH SECONDS VALUE."""
    out = []
    for f in faults:
        value = f.get("loss_pct", f.get("rate_mbit", "-"))
        out.append(f"{f['at_s']} {f['kind']} {'-' if f.get('path') is None else f['path']} {f['seconds']} {value}")
    return "\n".join(out) + "\n"


class Console:
    """The guest's SOAK lines as they come: samples, faults, events, jobs,
    bandwidth logs; the progress bar moves with the samples."""

    def __init__(self, seconds, kept):
        self.samples, self.faults, self.events, self.jobs, self.paths = [], [], [], {}, {}
        self.bw, self.failed, self.target, self.garbled, self.kernel = {}, [], None, 0, None
        self.kept, self.seconds = kept, seconds
        self.bar = progress.Progress("soak (guest)", seconds, seconds=True)

    def __call__(self, lines):
        with open(self.kept, "a") as f:
            f.writelines(x + "\n" for x in lines)
        for x in lines:
            kind, _, rest = x[5:].partition(" ")
            try:
                self.take(kind, rest)
            except (ValueError, KeyError, IndexError):
                # A line the kernel's console output cut into: counted, and
                # the report says how many.
                self.garbled += 1

    def take(self, kind, rest):
        if kind == "sample":
            s = json.loads(rest)
            self.samples.append(s)
            self.bar.step(min(s["t_s"], self.seconds), f"{len(self.faults)} faults done")
        elif kind == "fault":
            f = json.loads(rest)
            value = f.pop("value")
            if f["kind"] == "loss-burst":
                f["loss_pct"] = value
            elif f["kind"] == "rate":
                f["rate_mbit"] = value
            f["senders"] = soak.counters_delta(f.pop("before"), f.pop("after"))
            self.faults.append(f)
            self.bar.say(f"soak (guest): {progress.clock(f['started_s'])} {f['kind']}"
                         f"{'' if f.get('path') is None else ' path ' + str(f['path'])} for {f['seconds']} s")
        elif kind == "event":
            t, who, line = rest.split(" ", 2)
            self.events.append((float(t), who, line))
        elif kind == "job":
            name, data = rest.split(" ", 1)
            self.jobs[name] = json.loads(data)
        elif kind == "paths":
            name, data = rest.split(" ", 1)
            self.paths[name] = json.loads(data)
        elif kind == "bwlog":
            name, rows = rest.split(" ", 1)
            for r in rows.split(";"):
                ms, kib = r.split(",")
                self.bw.setdefault(name, []).append((int(ms), int(kib)))
        elif kind == "target":
            self.target = json.loads(rest)
        elif kind == "failed":
            self.failed.append(rest)
            self.bar.say(f"soak (guest): failed: {rest[:300]}")
        elif kind in ("ready", "kernel"):
            if kind == "kernel":
                self.kernel = rest.split()[0]
            self.bar.say(f"soak (guest): {kind} {rest[:200]}")


def run(minutes, work, seed, out):
    """The guest soak: `minutes` of it, faults from `seed`."""
    seconds = minutes * 60
    faults = soak.schedule(seed, seconds, RATE_MBIT)
    print(f"soak (guest): {minutes:g} min, seed {seed}: {len(faults)} faults, Linux {KERNEL} with {SMP} vCPUs", flush=True)
    gdir = work / "guest-soak"
    gdir.mkdir()
    (gdir / "faults").write_text(fault_lines(faults))
    (gdir / "params").write_text(
        f"SOAK_S={int(seconds)} PATHS={PATHS} RATE_MBIT={RATE_MBIT} BASE_LOSS_PCT={soak.BASE_LOSS_PCT} NS_MIB={soak.NS_MIB} "
        f"CTRL_LOSS_TMO_S={soak.CTRL_LOSS_TMO_S} IO_TIMEOUT_S={IO_TIMEOUT_S} SAMPLE_S={soak.SAMPLE_S} "
        f"VERIFY_BACKLOG={soak.VERIFY_BACKLOG} "
        f"PRELOAD={guest.asan_runtime()}\n")
    setup = gdir / "setup.sh"
    setup.write_text("/usr/local/bin/bash /files/guest-soak.sh > /dev/console 2>&1 &\n")
    # The console carries the soak's lines: the kernel's messages stay in
    # dmesg (guest-soak.sh sends the host's with their times), not on the
    # console in the middle of a line.
    env = dict(os.environ, MPNVME_LAB_BINARIES=" ".join(guest.guest_binaries()), MPNVME_LAB_MEM="2048",
               MPNVME_LAB_TIMEOUT="300", MPNVME_LAB_KERNEL=KERNEL, MPNVME_LAB_SMP=str(SMP),
               MPNVME_LAB_APPEND=(os.environ.get("MPNVME_LAB_APPEND", "") + " loglevel=1").strip())
    guest.prepare(KERNEL, env)
    console = Console(seconds, out / "soak-guest-console.log")
    budget = int(seconds + soak.CTRL_LOSS_TMO_S + 600)
    text, boot_s, finished = guest.boot_and_follow(gdir / "lab", setup, [gdir / "faults", gdir / "params", common.LAB,
                                                                         guest.HERE / "guest-soak.sh"],
                                                   env, "SOAK", budget, console)
    console.bar.done()
    if not finished:
        console.failed.append(f"the guest did not finish in {budget} s; console tail: "
                              + " | ".join(text.splitlines()[-20:]))
    return summarize(console, seconds, seed, finished, boot_s)


def summarize(c, seconds, seed, finished, boot_s):
    jobs = []
    for name in JOBS:
        j = c.jobs.get(name, {"rc": None, "error": None, "written": 0, "read": 0})
        host_events = [line for _, who, line in c.events if who == ("kernel" if name == "kernel-host" else name)]
        p = c.paths.get(name, {})
        jobs.append({"name": name, "rc": j["rc"], "error": j["error"], "written_mib": round((j["written"] or 0) / 1048576),
                     "read_mib": round((j["read"] or 0) / 1048576),
                     # The kernel host's own words: a controller's error
                     # recovery, and its reconnect.
                     "failovers": p.get("failovers") or 0 if p else sum(1 for x in host_events if "error recovery" in x),
                     "reconnects": p.get("reconnects") or 0 if p else sum(1 for x in host_events if "Successfully reconnected" in x),
                     "down_s": round(p.get("down_s") or 0, 1) if p else "-",
                     "longest_stall_s": soak.longest_stall(c.bw.get(name, []))})
    verify_failures = sum(1 for _, _, line in c.events if soak.VERIFY_FAILED.search(line))
    errors = sum(1 for j in jobs if j["error"] or j["rc"]) + len(c.failed)
    warm = soak.warmup_s(seconds)
    flat = {who: soak.flatness(c.samples, key, fds, warm) | {"unit": unit} for key, fds, who, unit in WATCHED}
    verdict = "pass" if (finished and errors == 0 and verify_failures == 0 and all(j["rc"] == 0 for j in jobs)
                         and all(f["flat"] is not False for f in flat.values())) else "fail"
    return {"seed": seed, "minutes": round(seconds / 60, 1), "verdict": verdict, "finished": finished,
            "boot_s": round(boot_s), "io_errors": errors, "verify_failures": verify_failures, "failed": c.failed,
            "jobs": jobs, "faults": c.faults, "events": c.events, "samples": c.samples, "flat": flat,
            "target": c.target, "garbled_lines": c.garbled, "warmup_s": warm,
            "setting": conditions.cell_context(conditions.DEFAULT_CC, [RATE_MBIT] * PATHS, soak.BASE_LOSS_PCT, 0, "all",
                                               where=f"qemu guest, {SMP} vCPUs (TCG)", kernel=c.kernel or KERNEL)
            | {"line_mib_s": round(published.mbit_to_mib_s(RATE_MBIT * PATHS), 1),
               "ctrl_loss_tmo_s": soak.CTRL_LOSS_TMO_S, "io_timeout_s": IO_TIMEOUT_S, "namespace_mib": soak.NS_MIB},
            "throughput": c.bw}


def plot(res, out):
    title = (f"soak in the guest: {res['minutes']} min, seed {res['seed']}, {len(res['faults'])} faults "
             f"({res['setting']['conditions']}, {PATHS} x {RATE_MBIT} Mbit, Linux {res['setting']['kernel']})")
    return [soak.plot_soak(title, res["throughput"], res["samples"], [(k, w) for k, _, w, _ in WATCHED],
                           [(f, w) for _, f, w, _ in WATCHED if f], res["faults"], out / "soak-guest.png")]


def report(res, plots):
    st = res["setting"]
    lines = [f"## Soak in the guest: {res['minutes']} min of verified I/O with the kernel as the peer: "
             f"{res['verdict'].upper()}", "",
             f"Seed {res['seed']} (`bench/run soak --where guest --minutes {res['minutes']:g} --seed {res['seed']}` "
             f"replays the schedule); Linux {st['kernel']} in {st['where']}; {PATHS} x {RATE_MBIT} Mbit lab paths, "
             f"{st['conditions']}, {st['cc']}; ctrl_loss_tmo {st['ctrl_loss_tmo_s']} s, I/O timeout {st['io_timeout_s']} s "
             f"on both hosts; each job randrw 4k-128k, QD16, crc32c verify, on a file namespace of "
             f"{st['namespace_mib']} MiB; every fault hits both pairs at once; warm-up {res['warmup_s']:.0f} s.", "",
             f"I/O errors: {res['io_errors']}; verify failures: {res['verify_failures']}; mpnvme-target: "
             f"{(res['target'] or {}).get('generations', '?')} generations, last exit status "
             f"{(res['target'] or {}).get('rc', '?')}; console lines cut by kernel output: {res['garbled_lines']}.", ""]
    lines += [f"- **failed:** {x}" for x in res["failed"]] + ([""] if res["failed"] else [])
    lines += ["engine-nvmet is the engine against the kernel's nvmet; kernel-host is the kernel's NVMe host against "
              "mpnvme-target (its failovers: controllers that started error recovery; its reconnects: \"Successfully "
              "reconnected\").", ""]
    lines += soak.jobs_table(res["jobs"]) + [""]
    lines += soak.flatness_table([(soak.target_who(f) if who == "mpnvme-target" else who, f["unit"], f)
                                  for who, f in res["flat"].items()])
    events = [(t, f"{who}: {line}") for t, who, line in res["events"]]
    lines += [""] + soak.faults_table(res["faults"], events, "the engine and the kernel host")
    lines += [""] + [f"![{p.stem}]({p.name})" for p in plots] + [""]
    return "\n".join(lines)
