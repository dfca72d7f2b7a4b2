# SPDX-License-Identifier: GPL-2.0-only
"""A test script's checks: each printed as it is made ("ok: ..." or
"FAIL: ..."), the failures counted for the exit status."""
import sys

failures = 0


def check(what, cond, saw=""):
    """One check: WHAT held (cond), with what was seen when it did not."""
    global failures
    print(f"{'ok' if cond else 'FAIL'}: {what}{': ' + saw if saw else ''}", flush=True)
    failures += 0 if cond else 1


def finish():
    """Exit 1 when any check failed, else 0."""
    sys.exit(1 if failures else 0)
