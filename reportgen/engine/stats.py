"""Percentiles, box-plot whiskers and histograms exactly as the original (numpy, linear method)."""

from __future__ import annotations

import numpy as np


def pct(x, q) -> float:
    return float(np.percentile(np.asarray(x, dtype=np.float64), q))


def box(v, with_p05: bool = False) -> dict:
    """p25/p50/p75/p95 + whiskers: upper = min(p75 + 1.5 IQR, max), lower = max(p25 - 1.5 IQR, min)."""
    v = np.asarray(v, dtype=np.float64)
    p05, p25, p50, p75, p95 = np.percentile(v, [5, 25, 50, 75, 95])
    iqr = p75 - p25
    out = {"p05": float(p05)} if with_p05 else {}
    out.update({"p25": float(p25), "p50": float(p50), "p75": float(p75), "p95": float(p95)})
    out["upper"] = float(min(p75 + 1.5 * iqr, v.max()))
    out["lower"] = float(max(p25 - 1.5 * iqr, v.min()))
    return out


def hist100(v) -> tuple[list, list]:
    """``hist(v, bins=100)`` as lists; empty input gives empty lists (not numpy's dummy range)."""
    v = np.asarray(v, dtype=np.float64)
    if v.size == 0:
        return [], []
    counts, edges = np.histogram(v, bins=100)
    return [int(c) for c in counts], [float(e) for e in edges]


def window_ends(win: np.ndarray, n_windows: int) -> np.ndarray:
    """For samples sorted by window index: number of samples in windows <= k, for each k."""
    return np.searchsorted(win, np.arange(n_windows), side="right")


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length covered by the union of intervals."""
    if len(starts) == 0:
        return 0
    o = np.argsort(starts, kind="stable")
    s, e = np.asarray(starts)[o], np.asarray(ends)[o]
    run_end = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > run_end[:-1]]
    seg_start = s[new]
    seg_end = np.maximum.reduceat(run_end, np.nonzero(new)[0])
    return int((seg_end - seg_start).sum())


def merged_segments(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """Union of closed intervals as sorted disjoint segments."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if len(starts) == 0:
        return starts, ends
    o = np.argsort(starts, kind="stable")
    s, e = starts[o], ends[o]
    run_end = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > run_end[:-1]]
    idx = np.nonzero(new)[0]
    return s[new], np.maximum.reduceat(run_end, idx)
