"""Building one node's tick table from its records: the ticks (instants a few ms apart make one
tick), the column order (by type, dimension, then natural name order) and the placement of every
value, series by series when the records came grouped (``SeriesChunk``) or record by record. Used
by the single-machine reader and by the Dask / ``--incremental`` path alike, so both give the same
tables."""

from __future__ import annotations

import re

import numpy as np

from reportgen.problems import ProblemLog
from reportgen.readers.tick_table import NodeSystem, decode, encode_columns, encode_placed

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


class SlicedSeries:
    """One node's records as the row queries hand them over, slice after slice, held compactly until
    the node's tick table is built (``build_table``), so that a long job's node is not held as 16
    bytes a record: per slice, each distinct timestamp array once (the series of one sampling instant
    share their timestamps) and each series' values in ``encode_placed``'s lossless encoding (2 bytes
    a value for metrics with 0-2 decimals). The ticks need the node's every timestamp, so the values
    are placed only at the end; the table is the one the joined records give, bit for bit (where a
    series' timestamps are not in order, ``joined()`` hands the records to the general placement).
    Indexing gives the flat ``(sids, ts, values)`` triple, like ``SeriesChunk``."""

    __slots__ = ("hashes", "sids", "slices", "finite", "vmax", "_index")

    def __init__(self):
        self.hashes: list[int] = []  # series identities (the row queries' hashes), first appearance first
        self.sids: np.ndarray | None = None  # their series ids, set once the catalog is known
        # per slice: (distinct timestamp arrays, series positions, their timestamp array, encoded values)
        self.slices: list[tuple[list[np.ndarray], list[int], list[int], list[tuple[np.ndarray, float]]]] = []
        self.finite = True  # every timestamp and value finite and every value >= 0 (else: the batch path)
        self.vmax: list[float] = []  # largest value of each series (the percent check)
        self._index: dict[int, int] = {}

    def _position(self, hh: int) -> int:
        j = self._index.get(hh)
        if j is None:
            j = self._index[hh] = len(self.hashes)
            self.hashes.append(hh)
            self.vmax.append(-np.inf)
        return j

    def add(self, hashes, ts_l, v_l) -> None:
        """One slice's records grouped by series: ``hashes[g]`` has ``ts_l[g]`` and ``v_l[g]`` (views
        are fine: what is kept is copied). ``ts_l`` and ``v_l`` may also be two (instants x series)
        matrices, series ``g`` in column ``g`` (a sampler's periodic slice): ``add_matrix``."""
        if isinstance(ts_l, np.ndarray) and ts_l.ndim == 2:
            self.add_matrix(hashes, ts_l, v_l)
            return
        times: list[np.ndarray] = []
        known: dict[tuple[int, int], list[int]] = {}
        pos, rep, values = [], [], []
        for hh, t, v in zip(hashes.tolist(), ts_l, v_l):
            j = self._position(hh)
            if not self.finite:
                continue
            if not (np.isfinite(t).all() and np.isfinite(v).all()) or (v < 0).any():
                self.finite = False  # the node goes to the batch path: nothing more to keep
                self.slices.clear()
                continue
            self.vmax[j] = max(self.vmax[j], float(v.max()))
            key = (len(t), hash(t.tobytes()))
            for k in known.get(key, ()):
                if np.array_equal(times[k], t):
                    break
            else:
                k = len(times)
                known.setdefault(key, []).append(k)
                times.append(np.array(t, dtype=np.float64))
            pos.append(j)
            rep.append(k)
            values.append(encode_placed(np.asarray(v, dtype=np.float64), slice(None), len(v)))
        if self.finite:
            self.slices.append((times, pos, rep, values))

    def add_matrix(self, hashes, ts: np.ndarray, vals: np.ndarray) -> None:
        """``add`` of a slice whose series ``g`` has the timestamps ``ts[:, g]`` and values ``vals[:, g]``
        (the same result, bit for bit), with each check and encoding made over the whole matrix at
        once: column by column, every step walked a strided view (~0.1 CPU s per 760 MB node)."""
        pos = [self._position(hh) for hh in hashes.tolist()]
        if not self.finite:
            return
        with np.errstate(invalid="ignore"):
            finite = bool(np.isfinite(ts).all() and np.isfinite(vals).all() and not (vals < 0).any())
        if not finite:
            self.finite = False  # the node goes to the batch path: nothing more to keep
            self.slices.clear()
            return
        for j, vmax in zip(pos, vals.max(axis=0).tolist()):
            self.vmax[j] = max(self.vmax[j], vmax)
        # the distinct timestamp columns, compared bit for bit (as ``add`` compares their bytes)
        bits = np.ascontiguousarray(ts.T).view(np.uint64)
        times: list[np.ndarray] = []
        first_of: list[int] = []  # column of each distinct timestamp array
        known: dict[tuple[int, int], list[int]] = {}
        rep = []
        for g in range(bits.shape[0]):
            key = (int(bits[g, 0]), int(bits[g, -1]))
            for k in known.get(key, ()):
                if np.array_equal(bits[first_of[k]], bits[g]):
                    break
            else:
                k = len(times)
                known.setdefault(key, []).append(k)
                first_of.append(g)
                times.append(bits[g].view(np.float64).copy())
            rep.append(k)
        self.slices.append((times, pos, rep, encode_columns(vals)))

    def joined(self) -> SeriesChunk:
        """The records series by series, each series' slices joined in slice order."""
        ts: list[list] = [[] for _ in self.hashes]
        vs: list[list] = [[] for _ in self.hashes]
        for times, pos, rep, values in self.slices:
            for j, k, (arr, scale) in zip(pos, rep, values):
                ts[j].append(times[k])
                v = np.empty(len(arr))
                decode(arr, scale, v)
                vs[j].append(v)
        return SeriesChunk(self.sids, [np.concatenate(t) for t in ts], [np.concatenate(v) for v in vs])

    def flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.joined().flat()

    def __getitem__(self, i: int) -> np.ndarray:
        return self.flat()[i]


_TYPE_ORDER = {t: i for i, t in enumerate(KNOWN_TYPES)}


def build_table(node, chunks: list, keys, problems: ProblemLog) -> NodeSystem | None:
    """Tick table from the node's record chunks (the list is emptied to free them early)."""
    series = chunks[0] if len(chunks) == 1 and isinstance(chunks[0], (SeriesChunk, SlicedSeries)) else None
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
    placed = None
    if isinstance(series, SlicedSeries):
        placed = _by_slices(series, col_of_sid, len(order))
        if placed is None:  # a series out of order, or twice in a tick: the records joined, as before
            series = series.joined()
    if placed is None and series is not None:
        placed = _by_series(series, col_of_sid, len(order))
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


def _by_slices(sliced: SlicedSeries, col_of_sid, n_cols):
    """``_by_series``'s table from a ``SlicedSeries`` without joining its records: the ticks from
    the distinct timestamp arrays of every slice, each column placed from its slices' encoded values
    (copied as they are when every slice chose the same encoding, which is then the whole column's
    choice too; decoded and encoded again otherwise). None (use the joined records) when a series'
    timestamps are not increasing tick after tick, where ``_by_series`` sorts or refuses."""
    arrays = [t for times, _, _, _ in sliced.slices for t in times]
    if not arrays or any(len(t) > 1 and (t[1:] < t[:-1]).any() for t in arrays):
        return None
    uniq = np.unique(np.concatenate(arrays))
    del arrays
    starts, interval = _ticks(uniq)
    n_ticks = len(starts)
    pieces: list[list] = [[] for _ in sliced.hashes]  # per series: (ticks, encoded values) by slice
    for times, pos, rep, values in sliced.slices:
        ticks = []
        for t in times:
            tick = np.searchsorted(starts, t, side="right") - 1
            if len(tick) > 1 and (np.diff(tick) <= 0).any():
                return None
            ticks.append(tick)
        for j, k, enc in zip(pos, rep, values):
            if pieces[j] and ticks[k][0] <= pieces[j][-1][0][-1]:
                return None  # this slice's first sample is not after the previous slice's last
            pieces[j].append((ticks[k], enc))
    sliced.slices.clear()  # the values are held by ``pieces`` alone now: each series' go once placed
    store: list = [None] * n_cols
    for j in range(len(pieces)):
        store[int(col_of_sid[sliced.sids[j]])] = _placed(pieces[j], n_ticks)
        pieces[j] = None
    return starts, interval, store, float(uniq[0]), float(uniq[-1])


def _placed(parts: list, n: int) -> tuple[np.ndarray, float]:
    """One column of ``n`` ticks from its slices' ``(ticks, (encoded values, scale))``: exactly
    ``encode_placed`` of the joined values. Slices that all chose one encoding need no new choice (an
    encoding fits the union of slices that each fit it, and a coarser one that failed a slice fails
    the union), so their codes are copied into place."""
    kinds = {(arr.dtype.str, scale) for _, (arr, scale) in parts}
    if len(kinds) == 1:
        first, scale = parts[0][1]
        out = np.full(n, np.iinfo(first.dtype).min if scale else np.nan, dtype=first.dtype)
        for tick, (arr, _) in parts:
            out[tick] = arr
        return out, scale
    v = np.empty(sum(len(tick) for tick, _ in parts))
    at = 0
    for tick, (arr, scale) in parts:
        decode(arr, scale, v[at : at + len(tick)])
        at += len(tick)
    return encode_placed(v, np.concatenate([tick for tick, _ in parts]), n)
