"""The union of [start, end) intervals: the one interval-merging algorithm the engine and the trace analysis share.

Both count time once where events overlap (a step's GPU activity, the framework's nested events, a slice of the
step-time account): sort by start, carry the running end, start a new segment where a start passes it. numpy, no
Python loop per interval; the engine's nanosecond ints and the trace analysis' microsecond floats alike.
"""

from __future__ import annotations

import numpy as np


def merged(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of [start, end) intervals as sorted disjoint intervals (ties keep their order: a stable sort)."""
    if starts.size == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > run_end[:-1]]
    return s[new], np.maximum.reduceat(run_end, np.nonzero(new)[0])


def covered(merged_iv: tuple[np.ndarray, np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """How much of each window [lo_i, hi_i) the disjoint sorted intervals cover (vectorised)."""
    s, e = merged_iv
    if s.size == 0:
        return np.zeros(lo.size)
    before = np.r_[0.0, np.cumsum(e - s)]  # covered length before interval j

    def upto(x: np.ndarray) -> np.ndarray:
        j = np.searchsorted(s, x, side="right") - 1
        inside = np.clip(x - s[np.maximum(j, 0)], 0.0, (e - s)[np.maximum(j, 0)])
        return np.where(j >= 0, before[np.maximum(j, 0)] + inside, 0.0)

    return np.maximum(upto(hi) - upto(lo), 0.0)
