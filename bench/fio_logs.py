# SPDX-License-Identifier: GPL-2.0-only
"""fio's results as the bench reads them: its JSON, the wall-clock window
it measured in, and the rate of its interval logs over the steady part of
a run (not fio's own figure, which counts the drain after the time is up)."""
import json

from common import die


def fio_json(path):
    """fio's JSON output (fio may print other lines before it)."""
    text = path.read_text()
    return json.loads(text[text.index("{"):])


def fio_window(result, ddir):
    """The wall-clock window fio measured a job's `ddir` in: its runtime
    (after ramp_time), ending when fio wrote its JSON (timestamp_ms). It
    includes the time the commands in flight took to complete after the
    time was up: on a slow path that can be seconds."""
    end = result["timestamp_ms"] / 1000
    return end - result["jobs"][0][ddir]["runtime"] / 1000, end


def log_window(result, ddir, paths, interval_ms=None):
    """The wall-clock window log_rate measures in: from the end of the
    jobs' first interval to the start of their last (the times count from
    the end of the ramp, where fio's runtime starts), not the drain after
    them. A run in which nothing completed has no rows: then fio's own
    window."""
    fio = fio_window(result, ddir)
    window = jobs_window([log_rows(p) for p in paths], interval_ms or STEADY_LOG_MS)
    if window is None:
        return fio
    return fio[0] + window[0] / 1000, fio[0] + window[1] / 1000


STEADY_LOG_MS = 500  # fio --log_avg_msec of the throughput logs steady_mib_s reads


def steady_mib_s(paths, interval_ms=None):
    """Throughput of a time-based run from its fio bandwidth logs (one per
    job, NAME_bw.N.log: time in ms from the end of ramp_time, KiB/s over
    the interval ending there), the first and the last interval left out:
    the bytes of the intervals between (rate x length) over their time,
    summed over the jobs. Not the mean of the rates: an interval the
    process was late to close is long and slow, the next one short and
    fast, and their mean reads above the line. And not fio's own figure, which divides every
    byte completed by the runtime, including the commands still in flight
    when the time is up (4 jobs x 256 x 128 KiB is 128 MiB, 9 % of a 3 s
    run at 477 MiB/s)."""
    return log_rate(paths, interval_ms) / 1024


def log_rows(path):
    """A fio interval log's rows as (ms from the end of the ramp, value)."""
    rows = [line.split(",") for line in path.read_text().splitlines() if line.strip()]
    return [(int(r[0]), int(r[1])) for r in rows]


def first_kept(rows, interval_ms):
    """Where a job's measured time starts and the index of its first row
    counted: its first interval is left out (the ramp's end is in it); a
    job whose first row comes later than that (nothing completed at first)
    is measured from the end of the first interval, the empty ones in it."""
    if rows and rows[0][0] <= 1.5 * interval_ms:
        return rows[0][0], 1
    return interval_ms, 0


def jobs_window(logs, interval_ms):
    """(start, end) in ms that the jobs' logs are measured over together:
    from the end of their first interval to the start of their last, None
    without a row. The last interval is left out too: its row is written
    after the time is up and holds completions of the commands then in
    flight (4 jobs x QD16 x 128 KiB on 2 x 200 Mbit: that row summed to 67
    MiB/s over the jobs where the wire carried 45.7 and the rows before it
    45.5)."""
    if not any(logs):
        return None
    last = max(rows[-1][0] for rows in logs if rows)
    return min(first_kept(rows, interval_ms)[0] for rows in logs), last - interval_ms


def log_rate(paths, interval_ms=None):
    """The rate of fio interval logs written every `interval_ms` (bandwidth:
    KiB/s; IOPS: I/Os per second), as what the intervals between the first
    and the last (jobs_window) moved, rate x length, over their time,
    summed over the jobs.

    fio writes no row for an interval in which nothing completed, and the
    row after such a gap holds the rate of its own interval only: it is
    credited with one interval, and the gap with nothing, not with the
    row's rate over the whole gap (a job that stalled for a second then
    read above the line). A row that comes a little late (up to half an
    interval) keeps its own length, as fio measured it. A stall at the
    start (the first rows missing) or of one job at the end counts as
    nothing moved too; a run in which nothing completed reads 0."""
    if not paths:
        die("no fio interval log to read (did the job write one?)")
    interval_ms = interval_ms or STEADY_LOG_MS
    logs = [log_rows(p) for p in paths]
    window = jobs_window(logs, interval_ms)
    if window is None:
        return 0.0
    total = 0.0
    for p, rows in zip(paths, logs):
        start, kept = first_kept(rows, interval_ms)
        if window[1] - start < interval_ms / 2:
            # Too short to measure: a silent skip would report the other
            # jobs' throughput as the whole. Half an interval, not one: rows
            # drift by a millisecond or two (501, 1000, 1500 is one interval
            # measured, 499 ms long; the floor smoke of 24a68c1 was refused
            # on exactly that).
            die(f"{p}: {window[1] - start} ms between the first interval and the last, at least one interval "
                f"({interval_ms} ms) needed (run longer)")
        # The job's own row closing the window, if it has one (fio's rows
        # drift by a few ms), else the window's end: its gap moved nothing.
        middle = [r for r in rows[kept:] if r[0] <= window[1] + interval_ms / 2]
        end = middle[-1][0] if middle and middle[-1][0] >= window[1] - interval_ms / 2 else window[1]
        moved, previous = 0.0, rows[kept - 1][0] if kept else 0
        for t, rate in middle:
            span = t - previous
            moved += rate * (span if span <= 1.5 * interval_ms else interval_ms) / 1000
            previous = t
        total += moved / ((end - start) / 1000)
    return total


def log_buckets(paths, width_ms):
    """MiB/s of fio bandwidth logs (KiB/s rows) summed over the jobs, per
    interval of `width_ms` (a row goes to the interval its time is nearest
    the end of): {interval number: MiB/s}."""
    buckets = {}
    for p in paths:
        for t_ms, kib_s in log_rows(p):
            k = (t_ms + width_ms // 2) // width_ms
            buckets[k] = buckets.get(k, 0) + kib_s / 1024
    return buckets
