# SPDX-License-Identifier: GPL-2.0-only
"""The bench's experiments, one registry: each has a name (the bench/run
verb), its help line, whether it needs root (network namespaces) and
whether `bench/run all` runs it, and the same two calls: run(ctx) returns
{results.json key: result}, report(results, ctx) the report's section."""
import dataclasses
import json
import pathlib
import random
import textwrap
from typing import Callable

import ceilings
import common
import compare
import concat_cost
import floor_experiment
import guest
import guest_depth
import guest_lossy
import guest_soak
import matrix
import priority
import scale
import soak
import stall


@dataclasses.dataclass
class Context:
    """What every experiment is given: the command line, the runs per
    figure, a scratch directory, the result directory, keep(key, value)
    to store a result in results.json at once (an hour of runs outlives a
    report that fails), and the congestion controls chosen. Whatever the
    command line sets travels here, never in a module's globals."""
    args: object
    runs: int
    work: pathlib.Path
    out: pathlib.Path
    keep: Callable[[str, dict], None]
    ccs: tuple = ("cubic",)  # congestion controls of the matrix, cubic first (--cc adds)


@dataclasses.dataclass(frozen=True)
class Experiment:
    name: str
    help: str
    root: bool
    in_all: bool
    run: Callable[[Context], dict]
    report: Callable[[dict, Context], str]


def _floor(ctx):
    seconds = 5 if ctx.args.full else 2 if ctx.args.smoke else 3
    print(f"bench: floor, {ctx.runs} run(s) of {seconds} s per figure -> {ctx.out}", flush=True)
    return {"floor": floor_experiment.run(ctx.runs, seconds, ctx.work, smoke=ctx.args.smoke,
                                          allow_oversubscribe=ctx.args.allow_oversubscribe)}


def _matrix(ctx):
    print(f"bench: matrix, {ctx.runs} run(s) per figure -> {ctx.out}", flush=True)
    return {"matrix": matrix.run(ctx.args.full, ctx.runs, ctx.work, smoke=ctx.args.smoke, ccs=ctx.ccs)}


def _priority(ctx):
    print(f"bench: priority, {ctx.runs} run(s) per figure -> {ctx.out}", flush=True)
    return {"priority": priority.run(ctx.args.full, ctx.runs, ctx.work, smoke=ctx.args.smoke)}


def _guest(ctx):
    """One matrix per --kernel: "guest" for the first, "guest KERNEL" for the
    others; a kernel measured with the same plan in --reuse's file is taken
    from there."""
    a = ctx.args
    print(f"bench: guest (qemu kernel lab), {ctx.runs} run(s) per figure -> {ctx.out}", flush=True)
    earlier = json.loads(a.reuse.read_text()) if a.reuse else {}
    results = {}
    for i, kernel in enumerate(a.kernel or ["6.12"]):
        key = "guest" if i == 0 else f"guest {kernel}"
        plan = {"runs": min(ctx.runs, 3), "full": a.full, "smoke": a.smoke, "policies": a.policies or "round-robin"}
        done = [v for k, v in earlier.items() if k.startswith("guest") and v.get("kernel_asked") == kernel
                and v.get("plan") == plan]
        if done:
            print(f"  guest {kernel}: reused from {a.reuse}", flush=True)
            results[key] = done[0]
        else:
            results[key] = guest.run(a.full, ctx.runs, ctx.work, smoke=a.smoke, kernel=kernel,
                                     policies=guest.ALL_POLICIES if a.policies == "all" else None, out=ctx.out)
            results[key]["plan"] = plan
        ctx.keep(key, results[key])
    return results


def _guest_report(results, ctx):
    kernels = list(results.values())
    text = "".join(guest.report(r, ctx.runs) for r in kernels)
    return text + (guest.compare_kernels(kernels) if len(kernels) > 1 else "")


def _stall(ctx):
    print(f"bench: stall, {ctx.runs} run(s) per case -> {ctx.out}", flush=True)
    return {"stall": stall.run(ctx.runs, ctx.work, variants=ctx.args.variants, only=ctx.args.case)}


def _lossy(ctx):
    kernel = (ctx.args.kernel or ["6.12"])[0]
    print(f"bench: lossy (qemu kernel lab, {kernel}), {min(ctx.runs, 3)} run(s) per figure -> {ctx.out}", flush=True)
    return {"lossy": guest_lossy.run(ctx.runs, ctx.work, kernel=kernel, out=ctx.out)}


def _depth(ctx):
    kernel = (ctx.args.kernel or ["6.12"])[0]
    print(f"bench: depth (qemu kernel lab, {kernel}, {ctx.args.smp} vCPU), {ctx.runs} run(s) per figure -> {ctx.out}",
          flush=True)
    return {"depth": guest_depth.run(ctx.runs, ctx.work, kernel, case=ctx.args.case, smp=ctx.args.smp,
                                     keep=lambda done: ctx.keep("depth", done), out=ctx.out)}


def _soak(ctx):
    minutes = ctx.args.minutes or (2 if ctx.args.smoke else 30)
    where = ctx.args.where
    # One seed for both places: the same faults at the same times.
    seed = ctx.args.seed if ctx.args.seed is not None else random.SystemRandom().randrange(1 << 32)
    print(f"bench: soak, {minutes:g} min ({'the lab, then the guest' if where == 'both' else 'the ' + where}) -> {ctx.out}",
          flush=True)
    out = {}
    if where in ("lab", "both"):
        out["soak"] = soak.run(minutes, ctx.work, seed=seed)
        ctx.keep("soak", out["soak"])
    if where in ("guest", "both"):
        out["soak_guest"] = guest_soak.run(minutes, ctx.work, seed, ctx.out)
        ctx.keep("soak_guest", out["soak_guest"])
    return out


def _soak_report(r, ctx):
    text = ""
    if "soak" in r:
        text += soak.report(r["soak"], soak.plot(r["soak"], ctx.out)) + "\n"
    if "soak_guest" in r:
        text += guest_soak.report(r["soak_guest"], guest_soak.plot(r["soak_guest"], ctx.out)) + "\n"
    return text


def _ceilings(ctx):
    print(f"bench: ceilings (the target's memory per connection and a Connect storm) -> {ctx.out}", flush=True)
    res = ceilings.measure(common.BUILD, hosts=100 if ctx.args.smoke else 300, storm_runs=ctx.runs,
                           controllers=100 if ctx.args.smoke else 500)
    ctx.keep("ceilings", res)
    return {"ceilings": res}


def _scale(ctx):
    print(f"bench: scale (the engine at {scale.SCALE_JOBS} jobs x {scale.PATHS} paths), {ctx.runs} run(s) per figure "
          f"-> {ctx.out}", flush=True)
    res = scale.run(ctx.runs, ctx.work, smoke=ctx.args.smoke)
    ctx.keep("scale", res)
    return {"scale": res}


def _concat(ctx):
    print(f"bench: concat (connect time with secure channel concatenation), {ctx.runs} run(s) per mode -> {ctx.out}",
          flush=True)
    res = concat_cost.run(ctx.runs, ctx.work, smoke=ctx.args.smoke)
    ctx.keep("concat", res)
    return {"concat": res}


def _compare(ctx):
    print(f"bench: compare {' '.join(ctx.args.refs)}, {ctx.runs} interleaved run(s) each -> {ctx.out}", flush=True)
    return {"compare": compare.run(ctx.args.refs, ctx.runs, ctx.work)}


EXPERIMENTS = (
    Experiment("floor", "raw socket floors and the engine on loopback for every poll= and target mode (the two taking "
               "turns in each round): latency, IOPS and CPU per I/O as ratios to the floor measured in the same round",
               root=False, in_all=True, run=_floor,
               report=lambda r, ctx: floor_experiment.report(r["floor"], ctx.runs) + "\n"),
    Experiment("matrix", "NVMe multipath over TCP and MPTCP on 4 x 1 Gbit lab paths, the upstream selftest's matrix "
               "(numa, round-robin, queue-depth, service-time x lossless and lossy, read and write) beside the "
               "published figures, with one MPTCP connection, unequal paths and a path cut",
               root=True, in_all=True, run=_matrix,
               report=lambda r, ctx: matrix.report(r["matrix"], ctx.runs, matrix.plot(r["matrix"], ctx.out))),
    Experiment("priority", "priority pairs under contention: a QD1 4 KiB job beside a 128 KiB QD32 job on one 1 Gbit "
               "HTB path, classified by sk_priority (writes) or reflected TOS (reads), TCP and MPTCP; latency "
               "percentiles as ratios to idle, latency CDFs",
               root=True, in_all=True, run=_priority,
               report=lambda r, ctx: priority.report(r["priority"], ctx.runs, priority.plot(r["priority"], ctx.out))),
    Experiment("guest", "the matrix inside the qemu kernel lab: delay, real loss, the kernel host beside the engine "
               "and, on a kernel with the NVMe-over-MPTCP series, the four host/target pairs over MPTCP",
               root=True, in_all=True, run=_guest, report=_guest_report),
    Experiment("stall", "how often MPTCP runs start stalled: 40 runs (--runs) of 4 s with the kernel's MPTCP and TCP "
               "counters per run (--variants: one connection, the older endpoint setup under cubic and bbr)",
               root=True, in_all=False, run=_stall, report=lambda r, ctx: stall.report(r["stall"])),
    Experiment("lossy", "what explains the guest's lossy cells: the engine against its raw control under real loss "
               "at QD32 and QD128, with in-flight commands and the kernel's counters per run (about 90 minutes)",
               root=True, in_all=False, run=_lossy, report=lambda r, ctx: guest_lossy.report(r["lossy"])),
    Experiment("depth", "NVMe over lossy MPTCP at the published depth (4 jobs x QD256) in the qemu kernel lab: the "
               "engine, its raw control and the kernel host with where the guest's CPU goes (cpu), a depth sweep with its plot "
               "(sweep: sweep-mptcp and sweep-tcp, a boot each), the headline cells (headline), lossy TCP (tcp), equal flows (equal), in-capsule writes on both targets (inline), the host cross-check (host); --case picks, --smp the vCPUs",
               root=True, in_all=False, run=_depth, report=lambda r, ctx: guest_depth.report(r["depth"], ctx.out)),
    Experiment("soak", "verified I/O for --minutes (30) on lossy paths while faults come at random from --seed "
               "(blackholes, carrier loss, loss bursts, rate drops, a target restart, ANA, control-socket changes), in "
               "two places (--where): the lab (the engine against mpnvme-target, multipath over TCP beside one MPTCP "
               "connection) and the qemu guest on Debian's newest kernel (the engine against nvmet beside the kernel "
               "host against mpnvme-target): errors, verify failures, failovers, stalls, and memory and descriptors of "
               "fio and the targets over time",
               root=True, in_all=False, run=_soak, report=_soak_report),
    Experiment("ceilings", "the target's cost per controller and per I/O queue (VmRSS over 500 of each, idle, after a "
               "command and after a 128 KiB write) and Connect storms of 300 hosts at once beside a host doing I/O, for "
               "mpnvme-target(8)'s LIMITS",
               root=False, in_all=False, run=_ceilings, report=lambda r, ctx: "## Ceilings\n\n" + ceilings.report(r["ceilings"])),
    Experiment("scale", f"the engine at {scale.SCALE_JOBS} jobs x {scale.PATHS} paths (a controller per job and path: "
               f"{2 * scale.SCALE_JOBS * scale.PATHS} connections) beside {scale.JOBS} jobs, over TCP multipath and MPTCP on "
               "1 Gbit lab paths: MiB/s as a ratio to the line, the time until I/O flows, and the peak memory and "
               "descriptors of fio and the target",
               root=True, in_all=False, run=_scale, report=lambda r, ctx: "## Scale\n\n" + scale.report(r["scale"])),
    Experiment("concat", "what secure channel concatenation costs at connect time on loopback: association time and fio's "
               "wall time of a 4-queue job with no authentication, DH-HMAC-CHAP, TLS on a configured PSK and "
               "concatenation, over TCP and MPTCP, as ratios to DH-HMAC-CHAP",
               root=False, in_all=False, run=_concat, report=lambda r, ctx: "## Concatenation\n\n" + concat_cost.report(r["concat"])),
    Experiment("compare", "two git revisions (bench/run compare REF1 REF2): the same 1 GiB transfer, interleaved N "
               "times (default 10), each run's actual / ideal time at the lab's line rate, and whether the "
               "difference is within the run-to-run noise; QD1 and QD32 on loopback as ratios to the floor of each round",
               root=True, in_all=False, run=_compare, report=lambda r, ctx: compare.report(r["compare"])),
)
BY_NAME = {e.name: e for e in EXPERIMENTS}


def chosen(verb):
    """The experiments a bench/run verb names ('all': those in_all)."""
    return [e for e in EXPERIMENTS if e.in_all] if verb == "all" else [BY_NAME[verb]]


def help_text():
    """The verbs for bench/run's help, wrapped under their names."""
    lines = []
    for e in EXPERIMENTS:
        body = textwrap.wrap(e.help + (" (root)" if e.root else "") + ("" if e.in_all else "; not part of all"), 66)
        lines.append(f"{e.name:<9}{body[0]}")
        lines += [" " * 9 + b for b in body[1:]]
    lines.append(f"{'all':<9}{', '.join(e.name for e in EXPERIMENTS if e.in_all)} (make bench)")
    return "\n".join(lines)

