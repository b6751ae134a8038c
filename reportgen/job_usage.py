"""The recorded command's own CPU and its threads' wait for a core, over any window of a recording.

``reportgen record`` writes the command's process tree at every tick (job-metrics.jsonl): ``CPUCores``, the CPU it
used over the tick, and ``RunQueueCores``, the time its threads were runnable but waited for a core (the scheduler's
run queue), both in cores' worth over the tick. recording.json keeps their means over the whole recording, start-up
included, which is not the training loop's: a process that imports alone and then computes its samples on a
saturated host waits on the run queue in its loop, not in its start-up. ``usage_rows`` reduces the ticks to a
cumulative series of at most ``MAX_ROWS`` rows whatever the recording's length (generate keeps it in its copy of
recording.json as ``job_usage``), and ``window_usage`` reads the means over any spans of it: the diagnosis's
training loop, less the profiler's export.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reportgen.json_values import given

MAX_ROWS = 1000  # a day at 2 ticks a second keeps one row in 173 ticks: a window's mean off by at most a row's span
COVERED = 0.9  # a window the series covers less than this much of has no mean from it


def usage_rows(records: list[dict]) -> list[list[float | None]]:
    """[time, CPU core-seconds, run-queue core-seconds] from the first tick on, cumulative (epoch s, then seconds of
    one core's time), at most ``MAX_ROWS`` rows (every k-th tick's sums, and the last: exact there, between them
    read as even). The run-queue column is None throughout when no tick has it (kernels that keep no such
    account, recordings before it); a tick without it in a series that has it saw no thread (the tree gone): no
    wait. Empty with fewer than two readable ticks."""
    ticks = []
    for record in records:
        at, cpu = given(record.get("Timestamp")), given(record.get("CPUCores"))
        if at is not None and cpu is not None and cpu >= 0:
            queue = given(record.get("RunQueueCores"))
            ticks.append((float(at), float(cpu), float(queue) if queue is not None and queue >= 0 else None))
    ticks.sort(key=lambda tick: tick[0])
    if len(ticks) < 2:
        return []
    has_queue = any(queue is not None for _, _, queue in ticks[1:])
    rows: list[list[float | None]] = [[ticks[0][0], 0.0, 0.0 if has_queue else None]]
    cpu_s = queue_s = 0.0
    for (before, _, _), (at, cpu, queue) in zip(ticks, ticks[1:]):
        span = at - before  # each tick's figures are over the time since the one before it
        cpu_s += cpu * span
        queue_s += (queue or 0.0) * span
        rows.append([at, cpu_s, queue_s if has_queue else None])
    step = math.ceil(len(rows) / MAX_ROWS)
    kept = rows[::step] if step > 1 else rows
    if kept[-1] is not rows[-1]:
        kept = kept[:MAX_ROWS - 1] + [rows[-1]]
    return [[round(t, 3), round(c, 4), None if q is None else round(q, 4)] for t, c, q in kept]  # type: ignore[arg-type]


@dataclass(frozen=True)
class WindowUsage:
    """The command's mean CPU and run-queue wait over a window, in cores (None: no run-queue column)."""

    cpu_cores: float
    run_queue_cores: float | None
    seconds: float  # the window's time the series covers


def _at(rows: list[tuple[float, float, float | None]], t: float, column: int) -> float:
    """The cumulative column at time ``t`` (inside the series), read as even between rows."""
    lo, hi = 0, len(rows) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if rows[mid][0] <= t:
            lo = mid
        else:
            hi = mid
    (t0, *a), (t1, *b) = rows[lo], rows[hi]
    x0, x1 = a[column] or 0.0, b[column] or 0.0
    return x0 + (x1 - x0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0.0)


def window_usage(rows: object, spans: list[tuple[float, float]]) -> WindowUsage | None:
    """The means over ``spans`` (epoch s) of a ``usage_rows`` series as recording.json keeps it (validated here:
    rows of three numbers, times rising), or None: no such series, or it covers under ``COVERED`` of the spans."""
    series: list[tuple[float, float, float | None]] = []
    for row in rows if isinstance(rows, list) else []:
        values = [given(v) for v in row] if isinstance(row, list) and len(row) == 3 else []
        if len(values) != 3 or values[0] is None or values[1] is None or (series and values[0] <= series[-1][0]):
            return None
        series.append((float(values[0]), float(values[1]), None if values[2] is None else float(values[2])))
    wanted = sum(max(end - start, 0.0) for start, end in spans)
    if len(series) < 2 or wanted <= 0:
        return None
    first, last = series[0][0], series[-1][0]
    has_queue = all(row[2] is not None for row in series)
    cpu = queue = seconds = 0.0
    for start, end in spans:
        start, end = max(start, first), min(end, last)
        if end > start:
            seconds += end - start
            cpu += _at(series, end, 0) - _at(series, start, 0)
            queue += _at(series, end, 1) - _at(series, start, 1) if has_queue else 0.0
    if seconds < COVERED * wanted:
        return None
    return WindowUsage(max(cpu / seconds, 0.0), max(queue / seconds, 0.0) if has_queue else None, seconds)
