# SPDX-License-Identifier: GPL-2.0-only
"""bench/run compare REF1 REF2: is a change to the data path faster or
slower, or within the noise? The runtime-ratio method (the MPTCP
scheduler refactor review): the same transfer, run alternately with each
revision's engine and target, each run's actual time divided by the ideal
time at the lab's line rate; then the ratio of the sums for each revision,
their difference, and the run-to-run spread.

Each revision is exported with `git archive` (the checkout and its .git are
not touched), built (engine and target, optimized) against the same fio
source, and run on a private 2 x 1 Gbit mpnvme-lab: 1 GiB of 128 KiB
sequential writes at QD8 over one MPTCP connection that spans both paths,
with a fresh target for every run. Then QD1 and QD32 on loopback as
bench/run floor measures them, each as a ratio to the raw round trip
measured in the same round, the two revisions taking turns."""
import math
import os
import statistics
import io
import subprocess
import tarfile

import common
import conditions
import fio_logs
import floor_experiment
import progress

NQN = "nqn.2026-11.io.mpnvme:compare"
RATE_MBIT, PATHS, SIZE = 1000, 2, 1 << 30
LOOPBACK = (("qd1", ["--bs=4k", "--iodepth=1"], 1), ("qd32", ["--bs=4k", "--iodepth=32"], 32))
LOOPBACK_SECONDS = 3


def build(ref, work):
    """The engine and target of `ref`, built in work/<sha>; returns the build dir."""
    sha = subprocess.run(["git", "-C", str(common.ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"], capture_output=True,
                         text=True)
    if sha.returncode:
        common.die(f"compare: '{ref}' is not a revision of this repository")
    sha = sha.stdout.strip()
    src = work / sha[:12]
    if not (src / "build").exists():
        archive = subprocess.run(["git", "-C", str(common.ROOT), "archive", "--format=tar", sha], capture_output=True, check=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as t:
            t.extractall(src)
        fio_src = (common.ROOT / ".deps" / "fio-src").read_text().strip()
        print(f"  building {ref} ({sha[:12]})", flush=True)
        for cmd in (["cmake", "-S", str(src), "-B", str(src / "build"), "-DCMAKE_BUILD_TYPE=RelWithDebInfo", f"-DFIO_SRC={fio_src}",
                     "-DMPNVME_TESTS=OFF"],
                    ["cmake", "--build", str(src / "build"), "-j", str(os.cpu_count() or 2), "--target", "fio-mpnvme",
                     "mpnvme-target"]):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                common.die(f"compare: building {ref}: {' '.join(cmd)}\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
    return sha, src / "build"


def turns(i):
    """The two revisions' order in round i: alternating, so that a drift of
    the machine hits both alike."""
    return (0, 1) if i % 2 == 0 else (1, 0)


def target_program(build_dir):
    """The build's mpnvme-target; its folder moved (toolkit/target ->
    mpnvme-target), so either revision's."""
    return next(p for p in (build_dir / "mpnvme-target" / "mpnvme-target", build_dir / "toolkit" / "target" / "mpnvme-target")
                if p.exists())


def one_run(lab, build_dir, tag, work):
    """Actual and ideal seconds of one 1 GiB transfer with this build."""
    target = common.start_lab_target(lab, target_program(build_dir), PATHS, NQN, "ram:1g",
                                     work / f"{tag}-target.log")
    try:
        res = work / f"{tag}.json"
        common.run_fio([*common.lab_fio(lab), "--name=transfer", f"--ioengine=external:{build_dir / 'engine' / 'fio-mpnvme.so'}",
                        "--traddr=10.1.1.1", f"--subnqn={NQN}", "--transport=mptcp", "--rw=write", "--bs=128k",
                        "--iodepth=8", f"--size={SIZE}", "--output-format=json", f"--output={res}"], f"compare {tag}")
        w = fio_logs.fio_json(res)["jobs"][0]["write"]
        actual = w["runtime"] / 1000
        ideal = w["io_bytes"] / (PATHS * RATE_MBIT * 1e6 / 8)
        return actual, ideal
    finally:
        common.stop(target)


def loopback(refs, builds, runs, work):
    """QD1 and QD32 4 KiB reads on loopback, as bench/run floor measures
    them: each revision's engine against its own target (event loop), the
    two taking turns in every round, with the raw round trip measured beside
    each round (busy-polling, as long as a run). Per run: QD1 p50 / the
    floor's p50 (1 is the floor; lower is better) and QD32 IOPS / the
    floor's round trips per second (higher is better)."""
    cells = []
    for name, opts, depth in LOOPBACK:
        for tr in ("tcp", "mptcp"):
            ratios, floors = [[], []], []
            for i in range(runs):
                floors.append(floor_experiment.floor_beside(tr, depth, LOOPBACK_SECONDS))
                for k in turns(i):
                    _, build_dir = builds[k]
                    with floor_experiment.target([], work, target_program(build_dir)) as (port, pid):
                        stats, *_ = floor_experiment.fio(port, pid, [*opts, f"--transport={tr}"], LOOPBACK_SECONDS, work,
                                                           engine=build_dir / "engine" / "fio-mpnvme.so")
                    ratios[k].append(stats["clat_ns"]["percentile"]["50.000000"] / 1000 / floors[-1]["p50_us"] if depth == 1
                                     else stats["iops"] / floors[-1]["per_second"])
            cell = {"workload": name, "transport": tr, "per_floor": [common.median_spread(r) for r in ratios],
                    "floor": common.median_spread([f["p50_us"] if depth == 1 else f["per_second"] for f in floors])}
            print(f"  {name} {tr}: " + ", ".join(f"{ref} {m['median']:.3f} x floor" for ref, m in zip(refs, cell["per_floor"])),
                  flush=True)
            cells.append(cell)
    return cells


def run(refs, runs, work):
    builds = [build(ref, work) for ref in refs]
    lab = f"c{os.getpid()}"
    common.lab(lab, "up", "--paths", str(PATHS), "--rate", f"{RATE_MBIT}mbit", "--cc", conditions.DEFAULT_CC, "--endpoints",
               conditions.ENDPOINTS)
    # By position, not by name: the same revision twice (an A/A run) shows
    # the noise floor of the method.
    samples = [[], []]
    bar = progress.Progress("compare", 2 * runs)
    try:
        for i in range(runs):
            for k in turns(i):
                ref, (sha, build_dir) = refs[k], builds[k]
                actual, ideal = one_run(lab, build_dir, f"{k}-{sha[:12]}-{i}", work)
                samples[k].append((actual, ideal))
                bar.say(f"  run {i + 1} {ref}: {actual:.3f} s, ideal {ideal:.3f} s, ratio {actual / ideal:.4f}")
                bar.step(len(samples[0]) + len(samples[1]), f"{ref} run {i + 1}")
    finally:
        bar.done()
        common.lab_down(lab)
    res = {"refs": [], "runs": runs, "workload": f"{SIZE >> 20} MiB of 128 KiB writes, QD8, MPTCP over {PATHS} x {RATE_MBIT} Mbit"}
    for ref, (sha, _), s in zip(refs, builds, samples):
        ratios = [a / i for a, i in s]
        res["refs"].append({"ref": ref, "sha": sha, "actual_s": [a for a, _ in s], "ideal_s": [i for _, i in s],
                            "sum_ratio": sum(a for a, _ in s) / sum(i for _, i in s),
                            "run_ratio_stdev": statistics.stdev(ratios) if len(ratios) > 1 else 0.0})
    a, b = res["refs"]
    diff = b["sum_ratio"] - a["sum_ratio"]
    # The difference against the noise: two standard errors of the difference of the means.
    noise = 2 * math.sqrt(a["run_ratio_stdev"] ** 2 / runs + b["run_ratio_stdev"] ** 2 / runs)
    res |= {"difference": diff, "noise": noise, "within_noise": abs(diff) <= noise,
            "loopback": loopback(refs, builds, runs, work)}
    return res


def report(res):
    a, b = res["refs"]
    ra, rb = a["ref"], b["ref"]
    verdict = ("within the noise" if res["within_noise"] else
               f"{'slower' if res['difference'] > 0 else 'faster'} beyond the noise")
    return "\n".join([
        "## Compare: runtime ratio of two revisions", "",
        f"{res['workload']}, {res['runs']} runs each, interleaved, a fresh target per run. Ratio: actual time / ideal time "
        "at the line rate, summed over the runs.", "",
        "| revision | commit | sum actual / sum ideal | run-to-run stdev |", "|---|---|---|---|",
        f"| {ra} | {a['sha'][:12]} | {a['sum_ratio']:.4f} | {a['run_ratio_stdev']:.4f} |",
        f"| {rb} | {b['sha'][:12]} | {b['sum_ratio']:.4f} | {b['run_ratio_stdev']:.4f} |", "",
        f"Difference ({rb} - {ra}): {res['difference']:+.4f}; noise (2 standard errors): {res['noise']:.4f}: {rb} is "
        f"{verdict}.", "", *loopback_report(res), ""])


def loopback_report(res):
    if "loopback" not in res:
        return []
    ra, rb = (r["ref"] for r in res["refs"])
    lines = ["### QD1 and QD32 on loopback, as bench/run floor measures them", "",
             f"4 KiB random reads, {LOOPBACK_SECONDS} s after a 1 s ramp, each revision's engine against its own "
             f"mpnvme-target (target on CPU {common.TARGET_CPU}, fio on CPU {common.FIO_CPU}), taking turns in each of "
             f"{res['runs']} rounds beside the raw round trip measured in the same round (mpnvme-floor, busy-polling). "
             "QD1: p50 / the floor's p50 (lower is better); QD32: IOPS / the floor's round trips per second (higher is "
             "better). Medians (min-max).", "",
             f"| workload | transport | floor | {ra} | {rb} | {rb} / {ra} |", "|---|---|---|---|---|---|"]
    for c in res["loopback"]:
        a, b = c["per_floor"]
        floor = f"{c['floor']['median']:.1f} us" if c["workload"] == "qd1" else f"{c['floor']['median']:.0f} /s"
        lines.append(f"| {c['workload']} | {c['transport']} | {floor} | " +
                     " | ".join(f"{m['median']:.3f} ({m['min']:.3f}-{m['max']:.3f})" for m in (a, b)) +
                     f" | {b['median'] / a['median']:.3f} |")
    return lines
