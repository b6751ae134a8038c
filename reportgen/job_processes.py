"""The recorded command's process count, tick by tick (a ``reportgen record`` recording's ``job-metrics.jsonl``),
reduced to where it changed, and what that says of the training loop's ends.

Profiler traces cover the steps they recorded, not the loop around them: steps before a schedule's first recorded
one and after its last run unseen, and the command's process lives on after its last line (the interpreter's
teardown: 1.6-7.4 s on the planted runs). A job's child processes are seen by every tick: a DataLoader's workers
start with the loop's first batch and end with the loop (or, persistent, with the script: multiprocessing ends
them when the script's last line has run, before the interpreter's teardown). The first child's start and the
last one's end are therefore observed marks of the loop's ends, each known to within one tick.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from reportgen.json_values import as_object, given

MAX_BYTES = 64_000_000  # a day at 2 ticks a second is ~25 MB; a larger file is not read (no marks)


def read_ticks(path: Path) -> list[dict]:
    """job-metrics.jsonl's ticks as objects, in the file's order; empty when the file is missing or too large.
    Unreadable lines are skipped: a recording cut short ends in half a line."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return []
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            records.append(as_object(json.loads(line)))
        except ValueError:
            continue
    return records


def process_changes(path: Path, records: list[dict] | None = None) -> list[list[float]]:
    """[previous tick, tick, processes] where the command's process count changed, the first tick included (its
    count is the command's own processes); empty when the file is missing, too large or holds no readable tick.
    ``records``: the file's ticks already read (:func:`read_ticks`)."""
    ticks = []
    for record in read_ticks(path) if records is None else records:
        at, count = given(record.get("Timestamp")), given(record.get("Processes"))
        if at is not None and count is not None and count >= 0:
            ticks.append((float(at), int(count)))
    ticks.sort()
    changes: list[list[float]] = []
    for i, (at, count) in enumerate(ticks):
        if i == 0 or count != ticks[i - 1][1]:
            changes.append([ticks[i - 1][0] if i else at, at, count])
    return changes


IDLE_CORES = 0.002  # a child below this is idle (1 ms of a 500 ms tick): a persistent DataLoader worker waiting
MIN_IDLE_TICKS = 1  # for indices uses ~0; its shutdown, in the last tick before it is gone, may use a few ms


def children_idle(path: Path, records: list[dict] | None = None) -> list[float]:
    """[last tick the children worked, the next tick] where the command's child processes went idle for good before
    they ended (job-metrics.jsonl's ``ChildCPUCores``): at least MIN_IDLE_TICKS idle ticks to the last tick with
    them, or one more before a busy last tick (their shutdown, or work: one idle tick between is no proof); empty
    otherwise — no such column (recordings before
    it), children that worked to their end or never ended while the command ran. A DataLoader's workers stop
    working when the loop stops asking for batches: where they outlive the loop (persistent, ended with the
    script) this marks the loop's end, to within a tick and the batches they had prefetched."""
    ticks = []
    for record in read_ticks(path) if records is None else records:
        at, count, cores = (given(record.get(key)) for key in ("Timestamp", "Processes", "ChildCPUCores"))
        if at is not None and count is not None and cores is not None:
            ticks.append((float(at), int(count), float(cores)))
    ticks.sort()
    if not ticks:
        return []
    own = ticks[0][1]
    alive = [i for i, (_, count, _) in enumerate(ticks) if count > own]
    if not alive or alive[-1] + 1 >= len(ticks) or ticks[alive[-1] + 1][1] != own:
        return []
    last = alive[-1]
    need = MIN_IDLE_TICKS
    if ticks[last][2] >= IDLE_CORES:  # the shutdown's tick
        last -= 1
        need += 1
    first_idle = last + 1
    while first_idle - 1 >= alive[0] and ticks[first_idle - 1][2] < IDLE_CORES:
        first_idle -= 1
    if last + 1 - first_idle < need or first_idle - 1 < alive[0]:
        return []
    return [ticks[first_idle - 1][0], ticks[first_idle][0]]


QUIET_TICKS = 2  # a script idle this many ticks before its end had ended its work (one idle tick is a pause)


def idle_to_script_end(records: list[dict], script_end: float) -> list[float]:
    """[last tick the command worked, the next tick] where it neither ran nor waited for a core (job-metrics.jsonl's
    ``CPUCores`` and ``RunQueueCores`` of its whole process tree under IDLE_CORES) in at least QUIET_TICKS ticks
    straight up to ``script_end`` (the end of its script, epoch seconds); empty otherwise — recordings without the
    run queue (a starved process also uses no CPU), a command that worked to its script's last line. A training loop
    works (or waits for a core) until its last step; a script that then only waits (a tf.data iterator over a
    Python generator released: 4.2 s) is no longer training."""
    ticks = []
    for record in records:
        at, cores, queued = (given(record.get(key)) for key in ("Timestamp", "CPUCores", "RunQueueCores"))
        if at is not None and cores is not None and queued is not None and float(at) <= script_end:
            ticks.append((float(at), float(cores) < IDLE_CORES and float(queued) < IDLE_CORES))
    ticks.sort()
    first_idle = len(ticks)
    while first_idle > 0 and ticks[first_idle - 1][1]:
        first_idle -= 1
    if len(ticks) - first_idle < QUIET_TICKS or first_idle == 0:
        return []
    return [ticks[first_idle - 1][0], ticks[first_idle][0]]


@dataclass(frozen=True)
class ChildProcesses:
    """When the command's child processes were first seen and last seen ended, as (last tick without, first tick
    with) and (last tick with, first tick without) the change, epoch seconds; the mark is the middle of each."""

    started: tuple[float, float]
    ended: tuple[float, float] | None  # None: children until the command's exit (no mark of the loop's end)

    @property
    def start_s(self) -> float:
        return (self.started[0] + self.started[1]) / 2

    @property
    def end_s(self) -> float | None:
        return (self.ended[0] + self.ended[1]) / 2 if self.ended is not None else None


def child_processes(changes: object) -> ChildProcesses | None:
    """The children's first start and last end from ``process_changes``' rows (as recording.json keeps them), or
    None without any child. An end counts only while the command itself still runs (the count falls back to its
    own processes, not to none: its exit ends every child)."""
    rows = []
    for row in changes if isinstance(changes, list) else []:
        values = [given(v) for v in row] if isinstance(row, list) and len(row) == 3 else []
        if len(values) == 3 and all(v is not None for v in values):
            rows.append((float(values[0]), float(values[1]), int(values[2])))  # type: ignore[arg-type]
    if not rows:
        return None
    own = rows[0][2]
    above = [i for i, row in enumerate(rows) if row[2] > own]
    if not above or own < 1:
        return None
    first = rows[above[0]]
    last = above[-1] + 1
    ended = None
    if last < len(rows) and rows[last][2] == own:
        ended = (rows[last][0], rows[last][1])
    return ChildProcesses((first[0], first[1]), ended)


def churn_within(changes: object, lo: float, hi: float) -> tuple[int, int]:
    """(how many times the command's process count changed strictly inside [lo, hi] — children that came and went
    while the loop ran, beyond its workers' start and end —, the most processes seen there) from
    ``process_changes``' rows; (0, 0) without rows. A change is inside when both of its ticks are."""
    rows = []
    for row in changes if isinstance(changes, list) else []:
        values = [given(v) for v in row] if isinstance(row, list) and len(row) == 3 else []
        if len(values) == 3 and all(v is not None for v in values):
            rows.append((float(values[0]), float(values[1]), int(values[2])))  # type: ignore[arg-type]
    inside = [row for row in rows if lo < row[0] and row[1] < hi]
    return len(inside), max((row[2] for row in inside), default=0)
