"""Reads of the trace model's columns that the analyses repeat many times a rank, at the cost of the rows they ask.

``TraceColumns.end_us`` adds every event's start and duration (~0.2 ms over a rank's 236,000 events) each time it
is read, and the analyses read it ~50 times a rank for a few rows each; ``ends_of`` adds only those rows': the same
values (one IEEE addition per row either way), no cache on the model (which stays free to change).
"""

from __future__ import annotations

import numpy as np

from reportgen.readers import trace_model as k

FEW_IDS = 12  # up to this many ids, one comparison of the name column each (~0.015 ms) beats the table (~0.2)


def ends_of(trace: k.TraceColumns, rows) -> np.ndarray:
    """``trace.end_us[rows]`` (``rows``: a mask, indices, a slice or one index) without the other rows' ends."""
    return trace.start_us[rows] + trace.dur_us[rows]


def with_names(trace: k.TraceColumns, ids: np.ndarray) -> np.ndarray:
    """``np.isin(trace.name, ids)`` for ids of ``trace.names``, in one pass per id for a few ids, else through a
    table over the names (np.isin sorts ~30 ids with the 236,000 events: ~1.5 ms, the table ~0.2, the analyses
    ask ~45 times a rank). Ids outside the names, or negative name ids, take np.isin itself."""
    ids = np.asarray(ids)
    if not ids.size or not trace.name.size:
        return np.zeros(trace.name.shape, bool)
    if ids.size <= FEW_IDS:
        mask = trace.name == ids[0]
        for i in ids[1:]:
            mask |= trace.name == i
        return mask
    n = len(trace.names)
    if int(ids.min()) < 0 or int(ids.max()) >= n or int(trace.name.min()) < 0:
        return np.isin(trace.name, ids)
    table = np.zeros(n + 1, bool)  # a name id past the names takes the last entry, False, as np.isin says
    table[ids] = True
    return table.take(trace.name, mode="clip")
