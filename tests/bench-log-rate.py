#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""bench/common.py's log_rate on fio interval logs written here: steady
rows, a late row and the short one after it, intervals fio left out
(nothing completed: no row), jobs summed, and too few rows refused."""
import pathlib
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # bench/ is the checkout's
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
import common  # noqa: E402

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
    check("steady", common.log_rate([log(d, "a.1.log", [(500, 9999), (1000, 1000), (1500, 1000), (2000, 1000)])]), 1000)
    # A row 200 ms late (its interval 700 ms) then one 300 ms after it:
    # bytes over time, 700 * 800 + 300 * 1200 + 500 * 1000 over 1.5 s.
    check("late row", common.log_rate([log(d, "b.1.log", [(500, 0), (1200, 800), (1500, 1200), (2000, 1000)])]),
          (0.7 * 800 + 0.3 * 1200 + 0.5 * 1000) / 1.5)
    # Nothing completed from 1500 to 3000: fio wrote no rows for those
    # intervals, and the row at 3000 is its own interval's rate. The gap
    # moved nothing: 4 x 500 ms at 100 KiB/s over 3 s.
    check("gap", common.log_rate([log(d, "c.1.log", [(500, 100), (1000, 100), (1500, 100), (3000, 100), (3500, 100)])]),
          4 * 0.5 * 100 / 3.0)
    # Two jobs: their rates add.
    check("two jobs", common.log_rate([log(d, "d.1.log", [(500, 0), (1000, 300), (1500, 300)]),
                                       log(d, "d.2.log", [(500, 0), (1000, 200), (1500, 200)])]), 500)
    # Two rows are not a measurement: refused, naming the file.
    r = subprocess.run([sys.executable, "-c", f"import sys; sys.dont_write_bytecode = True; sys.path.insert(0, {str(common.ROOT / 'bench')!r}); import common; "
                        f"common.log_rate([__import__('pathlib').Path({str(log(d, 'e.1.log', [(500, 1), (1000, 1)]))!r})])"],
                       capture_output=True, text=True)
    refused = r.returncode != 0 and "e.1.log" in r.stdout + r.stderr and "at least 3" in r.stdout + r.stderr
    print(f"{'ok' if refused else 'FAIL'}: two rows refused: {(r.stdout + r.stderr).strip()[:200]}")
    failures += not refused
sys.exit(1 if failures else 0)
