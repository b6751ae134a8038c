"""Trace files -> ranks: torch writes one file per profiling cycle, so a rank is a group of files.

``torch.profiler.tensorboard_trace_handler`` names each file ``<worker>.<ns>.pt.trace.json[.gz]``
(``<worker>`` is ``<host>_<pid>`` unless the user named it), one per ``schedule`` cycle. A rank is
therefore found by:

1. ``distributedInfo.rank`` in the file (torch.distributed initialised: DDP, FSDP, ...);
2. else the worker part of the name (same host and pid: the same process);
3. else the file alone (a name torch did not write, e.g. ``rank-3.json``: its rank number).

A rank's cycles are merged into one trace; ``cycles`` keeps each file's span so that times per
cycle (span, GPU windows) are summed and the unprofiled time between cycles never counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np

from reportgen.readers.trace_model import Float64Ops, FlopEvents, MemoryEvents, TraceColumns
from reportgen.trace_analysis.step_marks import cut_step_overruns

class RankedFile(Protocol):
    """What grouping reads of a file: a whole read (``TraceColumns``) or its kept head (``readers/trace_heads.py``),
    so a warm run groups its files without loading them."""

    @property
    def path(self) -> Path: ...
    @property
    def label(self) -> str: ...
    @property
    def rank(self) -> int | None: ...
    @property
    def start_us(self) -> np.ndarray: ...


F = TypeVar("F", bound=RankedFile)

_WORKER = re.compile(r"^(?P<worker>.+)\.(?P<ns>\d{10,})\.pt\.trace\.json(?:\.gz)?$")


@dataclass
class RankTrace(TraceColumns):
    """One rank: the columns of all its cycles, in time order, and where each cycle lies."""

    files: list[str] = field(default_factory=list)
    cycles: list[tuple[float, float]] = field(default_factory=list)  # (first start, last end) µs per file
    workers: list[str] = field(default_factory=list)  # distinct worker names (host_pid) of its files
    data_notes: list[str] = field(default_factory=list)  # steps cut at the profiler's span (step_marks), for Data quality


def worker_of(path: Path) -> str | None:
    """``vm_763`` for ``vm_763.1795444171301055440.pt.trace.json`` (torch's default naming)."""
    match = _WORKER.match(Path(path).name)
    return match.group("worker") if match else None


def rank_key(trace: RankedFile) -> tuple:
    """The group a file belongs to (see the module docstring)."""
    if trace.rank is not None:
        return ("rank", trace.rank)
    worker = worker_of(trace.path)
    if worker is not None:
        return ("worker", worker)
    return ("file", trace.label)


def group_traces_keyed(traces: list[F]) -> list[tuple[tuple, list[F]]]:
    """``(key, files)`` per rank: by rank number, then worker, then file; each group in time order
    (:func:`cycle_order`), the groups in :func:`rank_order`."""
    # A cut file (an interrupted run) loses distributedInfo, which torch writes after the events: it
    # joins the rank of the other files of its process.
    rank_of_worker = {worker_of(t.path): t.rank for t in traces if t.rank is not None and worker_of(t.path)}
    groups: dict[tuple, list[F]] = {}
    for trace in traces:
        key = rank_key(trace)
        if key[0] == "worker" and key[1] in rank_of_worker:
            key = ("rank", rank_of_worker[key[1]])
        groups.setdefault(key, []).append(trace)
    for members in groups.values():
        cycle_order(members)
    return [(key, groups[key]) for key in sorted(groups, key=rank_order)]


def cycle_order(members: list[F]) -> None:
    """Sort one rank's files in place: by first event, then name (stable: ties keep the given order)."""
    members.sort(key=lambda t: (float(t.start_us[0]) if t.start_us.size else float("inf"), t.path.name))


def rank_order(key: tuple) -> tuple:
    """How ranks are listed: rank numbers in order, then worker names, then lone files."""
    kind, value = key
    return ({"rank": 0, "worker": 1, "file": 2}[kind], value if kind == "rank" else 0, str(value))


def unique_labels(named: list[tuple[str, str]]) -> list[str]:
    """One label per rank from ``(rank_label, first file's name)`` pairs: a label two ranks share gets
    the first file's stem appended."""
    seen: dict[str, int] = {}
    for label, _ in named:
        seen[label] = seen.get(label, 0) + 1
    out = []
    for label, first_name in named:
        if seen[label] > 1:
            stem = first_name.split(".json")[0]
            label = f"{label}-{stem}" if label != stem else stem
        out.append(label)
    return out


def rank_label(members: list[F]) -> str:
    """How the report names a rank: its rank number, else torch's worker name, else the file's label."""
    first = members[0]
    rank = next((t.rank for t in members if t.rank is not None), None)
    if rank is not None:
        return str(rank)
    worker = worker_of(first.path)
    return worker if worker is not None else first.label


def merge_cycles(members: list[TraceColumns]) -> RankTrace:
    """One rank's files as one trace (names re-interned, rows sorted by start)."""
    first = members[0]
    names: dict[str, int] = {}
    columns: dict[str, list[np.ndarray]] = {k: [] for k in ("cat", "name", "start_us", "dur_us", "device", "nbytes",
                                                             "tid", "corr")}
    cycles = []
    data_notes: list[str] = []
    for trace in members:
        dur, notes = cut_step_overruns(trace)
        data_notes += notes
        remap = np.fromiter((names.setdefault(n, len(names)) for n in trace.names), dtype=np.int32,
                            count=len(trace.names))
        columns["name"].append(remap[trace.name] if trace.name.size else trace.name)
        for key in ("cat", "start_us", "device", "nbytes", "tid", "corr"):
            columns[key].append(getattr(trace, key))
        columns["dur_us"].append(dur)
        if trace.start_us.size:
            cycles.append((float(trace.start_us.min()), float((trace.start_us + dur).max())))
    merged = RankTrace(
        path=first.path, label=rank_label(members), rank=next((t.rank for t in members if t.rank is not None), None),
        world_size=next((t.world_size for t in members if t.world_size is not None), None),
        backend=next((t.backend for t in members if t.backend), None),
        devices=next((t.devices for t in members if t.devices), []),
        compute_capability=next((t.compute_capability for t in members if t.compute_capability), []),
        device_memory=next((t.device_memory for t in members if t.device_memory), {}),
        memory=MemoryEvents.concat([t.memory for t in members]),
        flops=FlopEvents.concat([t.flops for t in members]),
        float64=Float64Ops.concat([t.float64 for t in members]),
        time_unit=first.time_unit, names=list(names),
        events_in_file=sum(t.events_in_file for t in members), complete=all(t.complete for t in members),
        files=[t.path.name for t in members], cycles=cycles, cpu_collectives=first.cpu_collectives,
        workers=sorted({w for t in members if (w := worker_of(t.path))}), data_notes=data_notes)
    start = np.concatenate(columns["start_us"])
    if bool((start[1:] >= start[:-1]).all()):  # cycles one after another, each in order: the stable sort's order
        merged.start_us = start
        for key in ("cat", "name", "dur_us", "device", "nbytes", "tid", "corr"):
            setattr(merged, key, np.concatenate(columns[key]))
        return merged
    order = np.argsort(start, kind="stable")
    merged.start_us = start[order]
    for key in ("cat", "name", "dur_us", "device", "nbytes", "tid", "corr"):
        setattr(merged, key, np.concatenate(columns[key])[order])
    return merged

