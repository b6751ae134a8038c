"""What every rule receives: per-node tick tables, the event table and the window grid."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd

from reportgen.engine.framework_events import FrameworkEvents


class NodeTable(Protocol):
    """What the rules read of one node's system metrics: a per-tick table (``readers.system.NodeSystem``
    is one), ``values[tick, column]`` with NaN where a series has no sample."""

    node: str
    interval_s: float
    tick_ts: np.ndarray  # float64 seconds of each tick (sorted)
    columns: list[str]  # "cpu0/CPUUtilization", "gpu1/GPUMemoryUtilization", "MemoryUsedPercent", ...
    types: list[str]
    names: list[str]
    dims: list[str]
    first_ts: float  # earliest / latest raw record timestamp (s)
    last_ts: float

    @property
    def shape(self) -> tuple[int, int]: ...

    @property
    def values(self) -> np.ndarray: ...

    def take(self, idx, rows: tuple[int, int] | None = None) -> np.ndarray: ...

    def row_blocks(self) -> list[tuple[int, int]]: ...

    def select(self, dimension: str | None = None, name: str | None = None) -> tuple[list[str], np.ndarray]: ...


SCAN_INTERVAL_US = 60_000_000
# GPU series one node may have for the rules that compare them pairwise (LoadBalancing: GPUs² pairs per
# window). The largest instances have 8 GPUs (16 on a few); a node with 20,000 GPU series (a 7 MB file)
# took 4 GB and 98 s. Past this, the first ones are compared and drawn, and Data quality says so.
MAX_GPU_SERIES_PER_NODE = 64


def gpu_series_note(nodes: dict) -> list[tuple[str, int]]:
    """(node, GPU series) of every node over ``MAX_GPU_SERIES_PER_NODE``."""
    over = []
    for node, ns in nodes.items():
        n = list(ns.dims).count("GPUUtilization")
        if n > MAX_GPU_SERIES_PER_NODE:
            over.append((node, n))
    return over


@dataclass
class AnalysisData:
    """Inputs of the rules. Windows are ``[t0 + k*S, t0 + (k+1)*S)``, k = 0..n_windows-1.

    Each tick / event belongs to exactly ONE window (by its timestamp / start time), so nothing is
    counted twice; the last window is the one holding the last sample, so the final partial minute
    is analysed."""

    nodes: dict[str, NodeTable]
    events: pd.DataFrame  # the framework events the rules read row by row (at least ``framework.rows``)
    t0_us: int
    n_windows: int
    window_us: int = SCAN_INTERVAL_US
    extra: dict = field(default_factory=dict)
    # Sums, extents and the correlation store of all framework events (``engine.framework_events``);
    # built from ``events`` when not given (a whole table in memory).
    framework: FrameworkEvents | None = None

    def __post_init__(self):
        if self.framework is None:
            self.framework = FrameworkEvents.from_table(self.events)

    def window_start(self, k: int) -> int:
        return int(self.t0_us + k * self.window_us)

    def window_of_us(self, t_us) -> np.ndarray:
        k = (np.asarray(t_us, dtype=np.float64) - self.t0_us) // self.window_us
        return np.clip(k, 0, max(self.n_windows - 1, 0)).astype(np.int64)

    def window_of_s(self, t_s) -> np.ndarray:
        return self.window_of_us(np.asarray(t_s, dtype=np.float64) * 1e6)


def time_axis(nodes: dict[str, NodeTable], events, first_file_key_us: int | None,
              window_us: int = SCAN_INTERVAL_US) -> tuple[int, int]:
    """``(t0_us, n_windows)``: T0 = first system file key (minute start) or the earliest plausible
    framework event start if earlier; the grid extends to the last system sample / event end.
    ``events``: an event table or ``FrameworkEvents``."""
    starts, ends = [], []
    if first_file_key_us is not None:
        starts.append(int(first_file_key_us))
    for ns in nodes.values():
        starts.append(int(ns.first_ts * 1e6))
        ends.append(int(ns.last_ts * 1e6))
    fw = events if isinstance(events, FrameworkEvents) else FrameworkEvents.from_table(events)
    if fw.n_events:
        # only relative times (no base time anywhere): use them
        ext = fw.plausible_extent if fw.plausible_extent is not None or starts else fw.extent
        if ext is not None:
            starts.append(int(ext[0]))
            ends.append(int(ext[1]))
    if not starts:
        return 0, 0
    t0 = min(starts) if first_file_key_us is None else min(int(first_file_key_us), min(starts))
    last = max(ends) if ends else t0
    return t0, int((last - t0) // window_us) + 1
