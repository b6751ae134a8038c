"""What every rule receives: per-node tick tables, the event table and the window grid."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reportgen.engine.system_reader import NodeSystem

SCAN_INTERVAL_US = 60_000_000
# Events with a start before 1973-03-03 (1e8 s; e.g. a TF trace without its .metadata base time,
# whose times count from the process start) have no usable absolute time; they are kept in the
# table but do not move the time axis. A clock set to the 1990s (8-9 digit epoch seconds) is a
# real clock: the bound was 2001-09-09 (1e9 s) and such a job lost its time axis (a framework-only
# one then crashed in StepOutlier).
PLAUSIBLE_EPOCH_US = 100_000_000_000_000


@dataclass
class AnalysisData:
    """Inputs of the rules. Windows are ``[t0 + k*S, t0 + (k+1)*S)``, k = 0..n_windows-1.

    Each tick / event belongs to exactly ONE window (by its timestamp / start time), so nothing is
    counted twice; the last window is the one holding the last sample, so the final partial minute
    is analysed."""

    nodes: dict[str, NodeSystem]
    events: pd.DataFrame
    t0_us: int
    n_windows: int
    window_us: int = SCAN_INTERVAL_US
    extra: dict = field(default_factory=dict)

    def window_start(self, k: int) -> int:
        return int(self.t0_us + k * self.window_us)

    def window_of_us(self, t_us) -> np.ndarray:
        k = (np.asarray(t_us, dtype=np.float64) - self.t0_us) // self.window_us
        return np.clip(k, 0, max(self.n_windows - 1, 0)).astype(np.int64)

    def window_of_s(self, t_s) -> np.ndarray:
        return self.window_of_us(np.asarray(t_s, dtype=np.float64) * 1e6)


def time_axis(nodes: dict[str, NodeSystem], events: pd.DataFrame, first_file_key_us: int | None,
              window_us: int = SCAN_INTERVAL_US) -> tuple[int, int]:
    """``(t0_us, n_windows)``: T0 = first system file key (minute start) or the earliest plausible
    framework event start if earlier; the grid extends to the last system sample / event end."""
    starts, ends = [], []
    if first_file_key_us is not None:
        starts.append(int(first_file_key_us))
    for ns in nodes.values():
        starts.append(int(ns.first_ts * 1e6))
        ends.append(int(ns.last_ts * 1e6))
    if len(events):
        ok = events["start_us"].to_numpy() >= PLAUSIBLE_EPOCH_US
        if not ok.any() and not starts:  # only relative times (no base time anywhere): use them
            ok = np.ones(len(events), dtype=bool)
        if ok.any():
            starts.append(int(events["start_us"].to_numpy()[ok].min()))
            ends.append(int(events["end_us"].to_numpy()[ok].max()))
    if not starts:
        return 0, 0
    t0 = min(starts) if first_file_key_us is None else min(int(first_file_key_us), min(starts))
    last = max(ends) if ends else t0
    return t0, int((last - t0) // window_us) + 1
