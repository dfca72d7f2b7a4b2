#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""bench/fio_logs.py's log_rate on fio interval logs written here: steady
rows, the first and the last interval left out, a late row and the short
one after it, intervals fio left out (nothing completed: no row) in the
middle, at the start and at one job's end, jobs summed, a run in which
nothing completed, and a run too short to measure refused."""
import pathlib
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # bench/ is the checkout's
BENCH = pathlib.Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import fio_logs  # noqa: E402

failures = 0


def check(what, got, want):
    global failures
    ok = abs(got - want) < 1e-6 * max(1, abs(want))
    print(f"{'ok' if ok else 'FAIL'}: {what}: {got:.3f} (want {want:.3f})")
    failures += not ok


def log(d, name, rows):
    p = d / name
    p.write_text("".join(f"{t}, {r}, 0, 131072, 0\n" for t, r in rows))
    return p


with tempfile.TemporaryDirectory() as tmp:
    d = pathlib.Path(tmp)
    # 500 ms rows at 1000 KiB/s: the first interval left out, 1000.
    check("steady", fio_logs.log_rate([log(d, "a.1.log", [(500, 9999), (1000, 1000), (1500, 1000), (2000, 1000)])]), 1000)
    # The last row, written after the time is up, holds the completions of
    # the commands then in flight: left out.
    check("the last interval left out", fio_logs.log_rate([log(d, "k.1.log", [(500, 0), (1000, 100), (1500, 100), (2000, 900)])]),
          100)
    # fio's rows drift by a few ms: a job's row closing the window keeps its
    # own time (each job 100 over its own span; the second one measured to
    # the first one's 1509 would read 99.1), the final one of each job is
    # left out wherever it fell.
    check("drifting rows", fio_logs.log_rate([log(d, "l.1.log", [(500, 0), (1000, 100), (1509, 100), (2009, 900)]),
                                              log(d, "l.2.log", [(501, 0), (1001, 100), (1500, 100), (2000, 900)])]),
          200)
    # A row 200 ms late (its interval 700 ms) then one 300 ms after it:
    # bytes over time, 700 * 800 + 300 * 1200 + 500 * 1000 over 1.5 s.
    check("late row", fio_logs.log_rate([log(d, "b.1.log", [(500, 0), (1200, 800), (1500, 1200), (2000, 1000), (2500, 0)])]),
          (0.7 * 800 + 0.3 * 1200 + 0.5 * 1000) / 1.5)
    # Nothing completed from 1500 to 3000: fio wrote no rows for those
    # intervals, and the row at 3000 is its own interval's rate. The gap
    # moved nothing: 4 x 500 ms at 100 KiB/s over 3 s.
    check("gap", fio_logs.log_rate([log(d, "c.1.log", [(500, 100), (1000, 100), (1500, 100), (3000, 100), (3500, 100),
                                                     (4000, 0)])]), 4 * 0.5 * 100 / 3.0)
    # Two jobs: their rates add.
    check("two jobs", fio_logs.log_rate([log(d, "d.1.log", [(500, 0), (1000, 300), (1500, 300), (2000, 0)]),
                                       log(d, "d.2.log", [(500, 0), (1000, 200), (1500, 200), (2000, 0)])]), 500)
    # Nothing completed in the first second (the CI run of b462cf9 saw it
    # in a lossy MPTCP cell): measured from the end of the first interval,
    # the empty ones in it, 2 x 500 ms at 1000 KiB/s over 1.5 s.
    check("stall at the start", fio_logs.log_rate([log(d, "f.1.log", [(1500, 1000), (2000, 1000), (2500, 0)])]),
          2 * 0.5 * 1000 / 1.5)
    # One job stalled for its last interval: its gap counts as nothing,
    # over the same window as the job that kept going (300 + 200 / 2).
    check("one job stalled at the end", fio_logs.log_rate([log(d, "g.1.log", [(500, 0), (1000, 300), (1500, 300), (2000, 0)]),
                                                           log(d, "g.2.log", [(500, 0), (1000, 200)])]), 400)
    # A job with no row at all moved nothing; the other one its own rate.
    check("one job without a row", fio_logs.log_rate([log(d, "h.1.log", []),
                                                      log(d, "h.2.log", [(500, 0), (1000, 300), (1500, 300), (2000, 0)])]), 300)
    check("nothing completed", fio_logs.log_rate([log(d, "i.1.log", []), log(d, "i.2.log", [])]), 0)
    # The interval is the log's, as the caller wrote it (the priority experiment: 100 ms).
    check("100 ms rows", fio_logs.log_rate([log(d, "j.1.log", [(100, 0), (200, 50), (300, 50), (600, 50), (700, 0)])], 100),
          3 * 0.1 * 50 / 0.5)
    # One interval between the first and the last, its rows a millisecond
    # early (fio's drift): measured, not refused.
    check("one interval, drifted", fio_logs.log_rate([log(d, "m.1.log", [(501, 0), (1000, 100), (1500, 900)])]), 100)
    # Without an interval between the first and the last: refused, naming the file.
    r = subprocess.run([sys.executable, "-c", f"import sys; sys.dont_write_bytecode = True; sys.path.insert(0, {str(BENCH)!r}); import fio_logs; "
                        f"fio_logs.log_rate([__import__('pathlib').Path({str(log(d, 'e.1.log', [(500, 1), (1000, 1)]))!r})])"],
                       capture_output=True, text=True)
    refused = r.returncode != 0 and "e.1.log" in r.stdout + r.stderr and "run longer" in r.stdout + r.stderr
    print(f"{'ok' if refused else 'FAIL'}: a run too short refused: {(r.stdout + r.stderr).strip()[:200]}")
    failures += not refused
sys.exit(1 if failures else 0)
