# SPDX-License-Identifier: GPL-2.0-only
"""Where a long experiment is: run N of M, the cell, the time gone and an
estimate of what is left. On a terminal one line redrawn as a bar; to a
log that is not a terminal (CI, a file) a plain line per step, so that a
log reads as a list of what happened."""
import sys
import time


def clock(seconds):
    """H:MM:SS or M:SS."""
    s = int(max(0, seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """Steps of a known count (runs, or seconds of a soak). step(n, what)
    says where the experiment is (n steps done; unit names them: "run N of
    M", or "N of M done" without one); done() ends the bar's line. The estimate
    is the mean time per step so far times the steps left, or, when the
    total is a duration (seconds=True), the time left of it."""

    WIDTH = 24

    def __init__(self, what, total, seconds=False, out=None, unit="run"):
        self.what, self.total, self.seconds, self.unit = what, max(1, total), seconds, unit
        self.out = out or sys.stderr
        self.tty = self.out.isatty()
        self.start = time.monotonic()
        self.drawn = False

    def step(self, n, cell=""):
        gone = time.monotonic() - self.start
        if self.seconds:
            left = max(0.0, self.total - n)
            where = f"{clock(n)} of {clock(self.total)}"
        else:
            left = gone / n * (self.total - n) if n else None
            where = f"{self.unit} {n} of {self.total}" if self.unit else f"{n} of {self.total} done"
        rest = "estimating" if left is None else f"about {clock(left)} left"
        if self.tty:
            filled = int(self.WIDTH * min(n, self.total) / self.total)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            line = f"\r{self.what} [{bar}] {where}, {clock(gone)} gone, {rest}{': ' + cell if cell else ''}"
            self.out.write(line[:200].ljust(80) + "\033[K")
            self.drawn = True
        else:
            self.out.write(f"{self.what}: {where}, {clock(gone)} gone, {rest}{': ' + cell if cell else ''}\n")
        self.out.flush()

    def say(self, text):
        """A line of its own above the bar (an event, a fault)."""
        if self.tty and self.drawn:
            self.out.write("\r\033[K")
        self.out.write(text + "\n")
        self.out.flush()

    def done(self):
        if self.tty and self.drawn:
            self.out.write("\n")
            self.out.flush()
