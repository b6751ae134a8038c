"""Percentiles, box-plot whiskers and histograms exactly as the original (numpy, linear method)."""

from __future__ import annotations

import numpy as np

from reportgen.intervals import merged


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
    """Total length covered by the union of intervals (``intervals.merged``), an int of the events' time unit."""
    s, e = merged(np.asarray(starts), np.asarray(ends))
    return int((e - s).sum())


def merged_segments(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """Union of closed intervals as sorted disjoint segments, int64 nanoseconds (``intervals.merged``)."""
    return merged(np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64))


# -- batched forms that give the bit-identical results of the per-call numpy functions ---------------

def pairwise_sum_rows(terms: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``np.sum(terms[i, :counts[i]])`` for every row i, bit for bit, without a Python call per row.

    numpy adds a float64 vector of n <= 128 elements in a fixed order (sequentially below 8; else 8
    running sums over blocks of 8, combined pairwise, then the remainder), starting from 0.0; the
    same order is replayed here on whole columns, for the rows that share a length at once."""
    terms = np.asarray(terms, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64)
    if terms.shape[1] > 128:
        raise ValueError("pairwise_sum_rows supports rows of at most 128 elements")
    out = np.zeros(len(counts))
    for n in np.unique(counts):
        rows = np.nonzero(counts == n)[0]
        t = terms[rows]
        if n < 8:
            res = np.zeros(len(rows))
            for i in range(n):
                res = res + t[:, i]
        else:
            r = [t[:, j].copy() for j in range(8)]
            i = 8
            while i < n - (n % 8):
                for j in range(8):
                    r[j] = r[j] + t[:, i + j]
                i += 8
            res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
            while i < n:
                res = res + t[:, i]
                i += 1
        out[rows] = 0.0 + res
    return out


def percentile_windows(v: np.ndarray, ends, length: int, q) -> np.ndarray:
    """``np.percentile(v[max(0, m - length):m], q)`` for every m in ``ends`` (each m >= 1), as a
    (len(ends) x len(q)) array. Windows of equal length go to one ``np.percentile(..., axis=1)``
    call, which applies the same order statistics and interpolation to each row as a 1-D call."""
    v = np.asarray(v, dtype=np.float64)
    ends = np.asarray(ends, dtype=np.int64)
    q = np.atleast_1d(np.asarray(q, dtype=np.float64))
    out = np.empty((len(ends), len(q)))
    if not len(ends):
        return out
    starts = np.maximum(ends - length, 0)
    lens = ends - starts
    for n in np.unique(lens):
        rows_n = np.nonzero(lens == n)[0]
        step = max(1, _BATCH_ELEMS // max(int(n), 1))  # bounds the (rows x n) copy
        for c in range(0, len(rows_n), step):
            rows = rows_n[c : c + step]
            idx = starts[rows][:, None] + np.arange(n)[None, :]
            out[rows] = np.percentile(v[idx], q, axis=1).T
    return out


_BATCH_ELEMS = 1 << 21
