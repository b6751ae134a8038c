"""Events ordered by thread, then start, the longest first at one start: the order in which operators nest.

``np.lexsort((-dur, start, tid))`` gives it, but sorts three float/int keys in full: ~30 ms over a rank's 150,000
operators, and two analyses ask (``kernel_mix``'s innermost operator, ``kernel_patterns``' top-level ones). Rows
already in start order (the trace model's, ``readers/trace_model.py``) need only a stable sort by thread and a sort
of the rows that share a thread and a start (~1 ms); the same permutation, element for element.
"""

from __future__ import annotations

import numpy as np


def nesting_order(tid: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """The permutation ``np.lexsort((-dur, start, tid))`` returns (stable: full ties keep their input order)."""
    if tid.size < 2 or not bool((start[1:] >= start[:-1]).all()):  # not in start order (a NaN included)
        return np.lexsort((-dur, start, tid))
    order = np.argsort(tid, kind="stable")  # each thread's rows stay in start order
    t, s = tid[order], start[order]
    tie = (t[1:] == t[:-1]) & (s[1:] == s[:-1])
    if not tie.any():
        return order
    pos = np.nonzero(np.r_[tie, False] | np.r_[False, tie])[0]  # the rows of runs sharing a thread and a start
    run = np.cumsum(np.r_[True, ~tie])[pos]
    order[pos] = order[pos][np.lexsort((-dur[order[pos]], run))]  # longest first within each run, stable
    return order
