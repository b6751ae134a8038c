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
