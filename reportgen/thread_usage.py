"""The recorded command's own process split by thread: its main thread against its other threads, over any window.

``reportgen record`` writes, at each tick of job-metrics.jsonl, the command's own process split by thread
(``MainThreadCPUCores``, ``MainThreadRunQueueCores``, ``OtherThreadsCPUCores``, ``BusiestThreads``). A trace holds
the step's thread only: a Python thread beside the loop (a monitor, a metrics writer) holds the GIL that the step's
thread must take back after every operator that released it, and only the threads' CPU shows it. ``thread_rows``
reduces the ticks to a bounded cumulative series like ``job_usage.usage_rows`` (generate keeps it in its copy of
recording.json as ``thread_usage``), ``busiest_threads`` the other threads that used the most over the recording
(``busiest_threads``), and ``window_threads`` reads the series' means over any spans (the training loop).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reportgen.job_usage import COVERED, MAX_ROWS, cumulative_at
from reportgen.json_values import given

COLUMNS = ("MainThreadCPUCores", "MainThreadRunQueueCores", "OtherThreadsCPUCores")
NAMED = 3  # the other threads named over the recording


def thread_rows(records: list[dict]) -> list[list[float]]:
    """[time, main thread's core-seconds, its run-queue core-seconds, the other threads' core-seconds] from the first
    tick with the columns on, cumulative, at most ``MAX_ROWS`` rows; empty with fewer than two such ticks (recordings
    before them, kernels that keep no per-thread account)."""
    ticks = []
    for record in records:
        at = given(record.get("Timestamp"))
        values = [given(record.get(key)) for key in COLUMNS]
        if at is not None and all(v is not None and v >= 0 for v in values):
            ticks.append((float(at), *(float(v) for v in values)))  # type: ignore[arg-type]
    ticks.sort(key=lambda tick: tick[0])
    if len(ticks) < 2:
        return []
    rows = [[ticks[0][0], 0.0, 0.0, 0.0]]
    sums = [0.0, 0.0, 0.0]
    for before, tick in zip(ticks, ticks[1:]):
        span = tick[0] - before[0]  # each tick's figures are over the time since the one before it
        sums = [s + v * span for s, v in zip(sums, tick[1:])]
        rows.append([tick[0], *sums])
    step = math.ceil(len(rows) / MAX_ROWS)
    kept = rows[::step] if step > 1 else rows
    if kept[-1] is not rows[-1]:
        kept = kept[:MAX_ROWS - 1] + [rows[-1]]
    return [[round(row[0], 3), *(round(v, 4) for v in row[1:])] for row in kept]


def busiest_threads(records: list[dict]) -> list[list]:
    """The ``NAMED`` other threads of the command's process that used the most over the recording, [name, thread
    id, CPU seconds], most first (each tick's ``BusiestThreads`` over its span); empty without them."""
    used: dict[tuple[str, int], float] = {}
    ticks = [(float(at), record.get("BusiestThreads")) for record in records
             if (at := given(record.get("Timestamp"))) is not None]
    ticks.sort(key=lambda tick: tick[0])
    for (before, _), (at, named) in zip(ticks, ticks[1:]):
        for entry in named if isinstance(named, list) else []:
            if isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str):
                tid, cores = given(entry[1]), given(entry[2])
                if tid is not None and cores is not None and cores >= 0:
                    key = (entry[0][:15], int(tid))
                    used[key] = used.get(key, 0.0) + cores * (at - before)
    top = sorted(used.items(), key=lambda item: -item[1])[:NAMED]
    return [[name, tid, round(seconds, 3)] for (name, tid), seconds in top if seconds > 0]


@dataclass(frozen=True)
class WindowThreads:
    """The command's main thread's CPU and run-queue wait and its other threads' CPU over a window, mean cores."""

    main_cores: float
    main_queue_cores: float
    other_cores: float
    seconds: float  # the window's time the series covers

    @property
    def main_blocked(self) -> float:
        """The share of the window the main thread neither ran nor waited for a core: it slept (the GIL, a lock, a
        queue, I/O)."""
        return min(max(1.0 - self.main_cores - self.main_queue_cores, 0.0), 1.0)


def _series(rows: object) -> list[list[float]] | None:
    series: list[list[float]] = []
    for row in rows if isinstance(rows, list) else []:
        values = [given(v) for v in row] if isinstance(row, list) and len(row) == 4 else []
        if len(values) != 4 or any(v is None for v in values) or (series and values[0] <= series[-1][0]):
            return None
        series.append([float(v) for v in values])  # type: ignore[arg-type]
    return series


def window_threads(rows: object, spans: list[tuple[float, float]]) -> WindowThreads | None:
    """The means over ``spans`` (epoch s) of a ``thread_rows`` series as recording.json keeps it (validated here), or
    None: no such series, or it covers under ``COVERED`` of the spans."""
    series = _series(rows)
    wanted = sum(max(end - start, 0.0) for start, end in spans)
    if not series or len(series) < 2 or wanted <= 0:
        return None
    first, last = series[0][0], series[-1][0]
    sums, seconds = [0.0, 0.0, 0.0], 0.0
    for start, end in spans:
        start, end = max(start, first), min(end, last)
        if end > start:
            seconds += end - start
            sums = [s + cumulative_at(series, end, c) - cumulative_at(series, start, c) for s, c in zip(sums, (1, 2, 3))]
    if seconds < COVERED * wanted:
        return None
    main, queue, other = (max(s / seconds, 0.0) for s in sums)
    return WindowThreads(main, queue, other, seconds)
