"""The recorded command's own CPU and its threads' wait for a core, over any window of a recording.

``reportgen record`` writes the command's process tree at every tick (job-metrics.jsonl): ``CPUCores``, the CPU it
used over the tick, and ``RunQueueCores``, the time its threads were runnable but waited for a core (the scheduler's
run queue), both in cores' worth over the tick. recording.json keeps their means over the whole recording, start-up
included, which is not the training loop's: a process that imports alone and then computes its samples on a
saturated host waits on the run queue in its loop, not in its start-up. ``usage_rows`` reduces the ticks to a
cumulative series of at most ``MAX_ROWS`` rows whatever the recording's length (generate keeps it in its copy of
recording.json as ``job_usage``), and ``window_usage`` reads the means over any spans of it: the diagnosis's
training loop, less the profiler's export. The two together, tick by tick (``demand_ticks``), are what the command
asked of the host: a loop that waits on I/O asks far less than its start-up and the work after it, so where that
level falls before the profiled steps and rises after them for good, the loop's ends are seen.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
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


def cumulative_at(rows: Sequence[Sequence[float | None]], t: float, column: int) -> float:
    """A cumulative column of a time series (``rows[i][0]`` the time, ``rows[i][column]`` a running total; a missing
    value reads 0) at time ``t`` inside it, read as even between rows: the recorder's CPU seconds, run-queue seconds
    and threads' seconds are all read this way."""
    lo, hi = 0, len(rows) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if (rows[mid][0] or 0.0) <= t:
            lo = mid
        else:
            hi = mid
    t0, t1 = rows[lo][0] or 0.0, rows[hi][0] or 0.0
    x0, x1 = rows[lo][column] or 0.0, rows[hi][column] or 0.0
    return x0 + (x1 - x0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0.0)


def _series(rows: object) -> list[tuple[float, float, float | None]] | None:
    """A ``usage_rows`` series as recording.json keeps it, validated (rows of three numbers, times rising), or None."""
    series: list[tuple[float, float, float | None]] = []
    for row in rows if isinstance(rows, list) else []:
        values = [given(v) for v in row] if isinstance(row, list) and len(row) == 3 else []
        if len(values) != 3 or values[0] is None or values[1] is None or (series and values[0] <= series[-1][0]):
            return None
        series.append((float(values[0]), float(values[1]), None if values[2] is None else float(values[2])))
    return series


def window_usage(rows: object, spans: list[tuple[float, float]]) -> WindowUsage | None:
    """The means over ``spans`` (epoch s) of a ``usage_rows`` series as recording.json keeps it (validated here:
    rows of three numbers, times rising), or None: no such series, or it covers under ``COVERED`` of the spans."""
    series = _series(rows)
    if series is None:
        return None
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
            cpu += cumulative_at(series, end, 1) - cumulative_at(series, start, 1)
            queue += cumulative_at(series, end, 2) - cumulative_at(series, start, 2) if has_queue else 0.0
    if seconds < COVERED * wanted:
        return None
    return WindowUsage(max(cpu / seconds, 0.0), max(queue / seconds, 0.0) if has_queue else None, seconds)


def cpu_used(rows: object, start: float, end: float) -> float | None:
    """The CPU core-seconds the command used from ``start`` to ``end`` (epoch s) by a ``usage_rows`` series as
    recording.json keeps it, or None: no such series, or one that does not cover the span."""
    series = _series(rows)
    if series is None or len(series) < 2 or not series[0][0] <= start <= end <= series[-1][0]:
        return None
    return max(cumulative_at(series, end, 1) - cumulative_at(series, start, 1), 0.0)


def time_before_cpu(rows: object, at: float, cpu_s: float) -> float | None:
    """When, before ``at`` (epoch s), the command had ``cpu_s`` core-seconds of CPU left to use up to ``at``, by a
    ``usage_rows`` series (read as even between its rows): where a run of steps that each use a known CPU began,
    however long the shared host made them wait for a core. None: no such series, one that starts later, or a span
    of fewer than ``SHIFT_TICKS`` of its rows (read as even inside a row, the one the steps began in mixes what came
    before them with theirs: 100 steps of 0.9 ms are no span to read by the CPU)."""
    series = _series(rows)
    if series is None or len(series) < 2 or cpu_s < 0 or not series[0][0] <= at <= series[-1][0]:
        return None
    target = cumulative_at(series, at, 1) - cpu_s
    if target < series[0][1]:
        return None
    row_s = statistics.median(t1 - t0 for (t0, _, _), (t1, _, _) in zip(series, series[1:]))
    for (t0, c0, _), (t1, _, _) in zip(reversed(series[:-1]), reversed(series[1:])):
        if t0 <= at and c0 <= target:
            end = min(t1, at)
            c_end = cumulative_at(series, end, 1)
            found = t0 + (end - t0) * ((target - c0) / (c_end - c0) if c_end > c0 else 1.0)
            return found if at - found >= SHIFT_TICKS * row_s else None
    return None


def demand_ticks(rows: object) -> list[tuple[float, float, float]]:
    """(start, end, cores) of each span between a ``usage_rows`` series' rows: the command's CPU and its threads'
    wait for a core together, what it asked of the host (a free host would have given it that much CPU); empty
    without a valid series with the run-queue column (a starved process uses little CPU, as a waiting one does)."""
    series = _series(rows)
    if not series or any(row[2] is None for row in series):
        return []
    return [(t0, t1, ((c1 - c0) + ((q1 or 0.0) - (q0 or 0.0))) / (t1 - t0))
            for (t0, c0, q0), (t1, c1, q1) in zip(series, series[1:])]


SHIFT_CORES = 0.3  # a level this much above the loop's median (and half of it above its 90th percentile) is other work
SHIFT_TICKS = 3  # ticks on each side of a shift: the loop's level, and the work that is not the loop


def _rise(demand: list[float]) -> int | None:
    """The first index from which every later value rises above the level of the values before it (their median by
    SHIFT_CORES, their 90th percentile by half of it), with at least SHIFT_TICKS values under that level before it
    and SHIFT_TICKS from it on; None otherwise. ``demand`` runs from the loop outwards: what rises for good beyond it is not the loop's work."""
    if len(demand) < 2 * SHIFT_TICKS:
        return None
    floor = list(demand)  # floor[i]: the least value from i on
    for i in range(len(demand) - 2, -1, -1):
        floor[i] = min(floor[i], floor[i + 1])
    seen = sorted(demand[:SHIFT_TICKS - 1])
    for i in range(SHIFT_TICKS, len(demand) - SHIFT_TICKS + 1):
        bisect.insort(seen, demand[i - 1])
        half = len(seen) // 2  # seen is sorted: its median and 90th percentile read in place
        median = seen[half] if len(seen) % 2 else (seen[half - 1] + seen[half]) / 2
        level = max(median + SHIFT_CORES, seen[int(0.9 * (len(seen) - 1))] + SHIFT_CORES / 2)
        if floor[i] >= level and bisect.bisect_left(seen, level) >= SHIFT_TICKS:
            return i
    return None


def loop_start_from_demand(ticks: list[tuple[float, float, float]], before: float) -> float | None:
    """Where the command's start-up ended, from ``demand_ticks``: going back from ``before`` (the first profiled
    step), the loop's ticks at their level, then start-up asking for more (imports and set-up keep a core busy; a
    loop that waits on I/O asks far less) in every tick back to the recording's start: the end of start-up's last
    tick; None where no such fall is seen (a loop that asks as much as its start-up: the steps say where it began)."""
    back = [tick for tick in reversed(ticks) if tick[1] <= before]
    i = _rise([cores for _, _, cores in back])
    return back[i - 1][0] if i is not None else None


def loop_end_from_demand(ticks: list[tuple[float, float, float]], after: float, until: float) -> float | None:
    """Where the command's loop ended, from ``demand_ticks``: from ``after`` (the profiler's last activity) the loop's
    ticks at their level, then more asked in every tick up to ``until`` (the script's end, else the command's exit:
    work after the loop, the interpreter's teardown): the start of the first such tick; None where no such rise is
    seen. The tick the command exited in is not judged (its tree was gone for part of it)."""
    spans = [tick for tick in ticks if tick[0] >= after and tick[1] <= until]
    if spans and ticks and spans[-1] == ticks[-1]:
        spans.pop()
    i = _rise([cores for _, _, cores in spans])
    return spans[i][0] if i is not None else None
