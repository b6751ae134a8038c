"""Building one node's tick table from its records: the ticks (instants a few ms apart make one
tick), the column order (by type, dimension, then natural name order) and the placement of every
value, series by series when the records came grouped (``SeriesChunk``) or record by record. Used
by the single-machine reader and by the Dask / ``--incremental`` path alike, so both give the same
tables."""

from __future__ import annotations

import re

import numpy as np

from reportgen.problems import ProblemLog
from reportgen.readers.tick_table import NodeSystem, encode_columns, encode_placed

KNOWN_TYPES = ("cpu", "gpu", "memory", "i/o", "network")


def series_label(name: str, dimension: str) -> str:
    return f"{name}/{dimension}" if dimension else name


def natural_key(s: str):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s)]


class SeriesChunk:
    """One grouped query's records: series ``sids[g]`` has timestamps ``ts[g]`` and values
    ``vals[g]``. Indexing gives the flat ``(sids, ts, values)`` triple every chunk is read as."""

    __slots__ = ("sids", "ts", "vals", "_flat")

    def __init__(self, sids: np.ndarray, ts: list[np.ndarray], vals: list[np.ndarray]):
        self.sids, self.ts, self.vals = sids, ts, vals
        self._flat = None

    def flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._flat is None:
            lens = np.array([len(t) for t in self.ts], dtype=np.int64)
            self._flat = (np.repeat(self.sids, lens), np.concatenate(self.ts), np.concatenate(self.vals))
        return self._flat

    def __getitem__(self, i: int) -> np.ndarray:
        return self.flat()[i]


_TYPE_ORDER = {t: i for i, t in enumerate(KNOWN_TYPES)}


def build_table(node, chunks: list, keys, problems: ProblemLog) -> NodeSystem | None:
    """Tick table from the node's record chunks (the list is emptied to free them early)."""
    series = chunks[0] if len(chunks) == 1 and isinstance(chunks[0], SeriesChunk) else None
    if series is not None:
        node_sids = np.unique(series.sids)
        if not len(node_sids):
            chunks.clear()
            return None
    else:
        if len(chunks) == 1:  # one chunk: no copy
            sids, ts, vals = chunks[0][0], chunks[0][1], chunks[0][2]
        else:
            sids = np.concatenate([c[0] for c in chunks])
            ts = np.concatenate([c[1] for c in chunks])
            vals = np.concatenate([c[2] for c in chunks])
        if len(sids) == 0:
            chunks.clear()
            return None
        node_sids = np.unique(sids)
    chunks.clear()
    order = sorted(
        node_sids.tolist(),
        key=lambda s: (_TYPE_ORDER.get(keys[s][1], 9), keys[s][3], natural_key(keys[s][2])),
    )
    col_of_sid = np.full(len(keys), -1, np.int32)
    col_of_sid[order] = np.arange(len(order), dtype=np.int32)
    placed = _by_series(series, col_of_sid, len(order)) if series is not None else None
    if placed is None:
        if series is not None:
            sids, ts, vals = series.flat()
        placed = _by_record(node, sids, ts, vals, col_of_sid, len(order), problems)
        del sids, ts, vals
    starts, interval, store, first_ts, last_ts = placed
    del series, placed
    table = NodeSystem(
        node=node,
        interval_s=interval,
        tick_ts=starts.astype(np.float64),
        columns=[series_label(keys[s][2], keys[s][3]) for s in order],
        types=[keys[s][1] for s in order],
        names=[keys[s][2] for s in order],
        dims=[keys[s][3] for s in order],
        values=None,
        first_ts=first_ts,
        last_ts=last_ts,
        store=store,
    )
    return table


def _ticks(uniq: np.ndarray) -> tuple[np.ndarray, float]:
    """Tick start times and the sampling interval from the node's sorted distinct timestamps.

    Records of one instant are a few ms apart (<= ~5 ms seen); instants are >= 100 ms apart, so a
    gap above a threshold (a quarter of the interval, clamped to 20-50 ms) starts a new tick."""
    gaps = np.diff(uniq)
    big = gaps[gaps > 0.02]
    interval = float(np.median(big)) if len(big) else 0.5
    threshold = min(max(0.02, 0.25 * interval), 0.05)
    starts = uniq[np.r_[True, gaps > threshold]]
    if len(starts) > 1:
        interval = float(np.median(np.diff(starts)))
    return starts, interval


def _by_record(node, sids, ts, vals, col_of_sid, n_cols, problems):
    """General placement, record by record (any mix of chunks; duplicates counted, last kept)."""
    import pandas as pd  # only on this path: hashing beats sorting a million timestamps

    cols = col_of_sid[sids]
    uniq = np.sort(pd.unique(ts))
    starts, interval = _ticks(uniq)
    tick = np.searchsorted(starts, ts, side="right") - 1
    n_ticks = len(starts)
    flat = tick.astype(np.int64) * n_cols + cols
    del tick, cols
    counts = np.bincount(flat, minlength=n_ticks * n_cols)
    dups = int((counts[counts > 1] - 1).sum())
    if dups:
        problems.add(f"system/{node}", None, "duplicate sample for a series within one tick (last kept)", dups)
    del counts
    values = np.full((n_ticks, n_cols), np.nan)
    values.reshape(-1)[flat] = vals
    del flat
    store = encode_columns(values)
    return starts, interval, store, float(uniq[0]), float(uniq[-1])


def _by_series(chunk: SeriesChunk, col_of_sid, n_cols):
    """Placement series by series for one grouped query's records, each column encoded straight
    from its series (no whole float64 table in memory). Series sampled at the same instants (every
    core of a node, say) share one timestamp array: the distinct arrays are found by content, and
    sorting and tick lookup are done once per distinct array instead of once per series. Gives
    exactly what ``_by_record`` gives, or None (use that) when a series has two samples in one
    tick, where its record-order rule applies."""
    sids, ts_l, v_l = chunk.sids, chunk.ts, chunk.vals
    distinct: dict[tuple[int, int], list[int]] = {}  # (length, content hash) -> representative series
    rep_of = np.empty(len(sids), np.int64)
    reps: list[int] = []
    for g, seg in enumerate(ts_l):
        key = (len(seg), hash(seg.tobytes()))
        for r in distinct.get(key, ()):
            if np.array_equal(ts_l[r], seg):
                rep_of[g] = r
                break
        else:
            distinct.setdefault(key, []).append(g)
            rep_of[g] = g
            reps.append(g)
    # Records come in file order, so a series' timestamps are sorted unless the files are not (a
    # clock step back, a file named out of order): each distinct array is then sorted by time once
    # and the values of every series that shares it are permuted alike.
    perm: dict[int, np.ndarray | None] = {}
    sorted_ts: dict[int, np.ndarray] = {}
    for r in reps:
        seg = ts_l[r]
        if len(seg) > 1 and (seg[1:] < seg[:-1]).any():
            perm[r] = np.argsort(seg, kind="stable")
            sorted_ts[r] = seg[perm[r]]
        else:
            perm[r], sorted_ts[r] = None, seg
    uniq = np.unique(np.concatenate([sorted_ts[r] for r in reps]))
    starts, interval = _ticks(uniq)
    n_ticks = len(starts)
    tick_of: dict[int, np.ndarray] = {}
    for r in reps:
        t = np.searchsorted(starts, sorted_ts[r], side="right") - 1
        if len(t) > 1 and (np.diff(t) <= 0).any():
            return None
        tick_of[r] = t
    series_of_col = np.full(n_cols, -1, np.int64)
    series_of_col[col_of_sid[sids]] = np.arange(len(sids))
    store: list = []
    for col in range(n_cols):
        g = int(series_of_col[col])
        r = int(rep_of[g])
        v = v_l[g] if perm[r] is None else v_l[g][perm[r]]
        store.append(encode_placed(v, tick_of[r], n_ticks))
    return starts, interval, store, float(uniq[0]), float(uniq[-1])
