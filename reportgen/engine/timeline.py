"""``timeline.json``: per-node utilisation over time and framework phases, downsampled to a fixed
budget so the report's size does not grow with the job length.

Budget: at most ``BUCKETS`` (600) time buckets per node; every line series keeps per-bucket min,
max and mean (so spikes survive downsampling); heatmaps (one row per core / GPU) keep the per-bucket
mean; framework phase intervals are merged per worker and kind, with gaps shorter than one bucket
closed, so each kind has at most about ``BUCKETS`` intervals per worker.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.engine.rules.max_initialization_time import step_events
from reportgen.engine.slow_steps import workers_slow_steps
from reportgen.engine.model import MAX_GPU_SERIES_PER_NODE
from reportgen.engine.stats import merged_segments

BUCKETS = 600


def _r(a, nd=2):
    a = np.asarray(a, dtype=np.float64)
    out = np.round(a, nd).tolist()
    bad = ~np.isfinite(a)
    if bad.any():
        for i in np.nonzero(bad)[0]:
            out[i] = None
    return out


def _bucket_reduce(values: np.ndarray, bstart: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-bucket min / max / mean of a (ticks x k) matrix, ignoring NaN."""
    with np.errstate(invalid="ignore"):
        mn = np.fmin.reduceat(values, bstart, axis=0)
        mx = np.fmax.reduceat(values, bstart, axis=0)
        ok = ~np.isnan(values)
        s = np.add.reduceat(np.where(ok, values, 0.0), bstart, axis=0)
        c = np.add.reduceat(ok.astype(np.int64), bstart, axis=0)
        mean = np.where(c > 0, s / np.maximum(c, 1), np.nan)
    return mn, mx, mean


def _agg_series(ns, cols_idx, how):
    """The per-tick mean (or sum) of the columns, made block of ticks by block of ticks (the same
    values: each tick's own columns only), so a long job's temporaries stay one block's size."""
    if not cols_idx:
        return None
    return np.concatenate([_agg_block(ns.take(cols_idx, rows), how) for rows in ns.row_blocks()])


def _agg_block(m, how):
    with np.errstate(invalid="ignore"):
        if how == "sum":
            allnan = np.isnan(m).all(axis=1)
            out = np.nansum(m, axis=1)
            out[allnan] = np.nan
            return out
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(m, axis=1)


def _bucket_means(ns, cols, bstart) -> np.ndarray:
    """Per-bucket means of the columns (buckets x columns), read in blocks of whole buckets of about
    ``row_blocks``' size: each bucket is reduced from its own ticks, so the result is the whole
    matrix's, with temporaries of one block."""
    size = max(b - a for a, b in ns.row_blocks())
    parts, first = [], 0
    while first < len(bstart):
        start = int(bstart[first])
        last = int(np.searchsorted(bstart, start + size, side="right"))  # buckets starting within the block
        last = max(last, first + 1)
        stop = int(bstart[last]) if last < len(bstart) else len(ns.tick_ts)
        _, _, mean = _bucket_reduce(ns.take(cols, (start, stop)), bstart[first:last] - start)
        parts.append(mean)
        first = last
    return np.concatenate(parts, axis=0)


def node_timeline(ns, budget: int = BUCKETS) -> dict:
    t = ns.tick_ts
    t0 = float(t[0])
    span = float(t[-1] - t0)
    width = max(ns.interval_s, span / budget if span > 0 else ns.interval_s, 1e-3)
    b = np.minimum(((t - t0) // width).astype(np.int64), budget - 1)
    bstart = np.r_[0, np.nonzero(np.diff(b))[0] + 1]
    out = {"t0": t0, "bucket_s": width, "interval_s": ns.interval_s,
           "t": [round(t0 + float(x) * width, 3) for x in b[bstart]], "series": {}}

    def idx(pred):
        return [i for i in range(len(ns.columns)) if pred(i)]

    # columns by (name, dimension), in one pass: finding each GPU's two columns by a scan of all columns
    # was columns x GPUs (20,000 GPU series on one node: hours). Past MAX_GPU_SERIES_PER_NODE the first
    # GPUs are drawn (the engine notes it under Data quality).
    by_series: dict = {}
    for i in range(len(ns.columns)):
        by_series.setdefault((ns.names[i], ns.dims[i]), []).append(i)
    gpu_names = [ns.names[i] for i in range(len(ns.columns)) if ns.dims[i] == "GPUUtilization"]

    lines = {
        "cpu_total": (idx(lambda i: ns.dims[i] == "CPUUtilization"), "mean"),
        "cpu_memory": (idx(lambda i: ns.names[i] == "MemoryUsedPercent"), "mean"),
        "io_wait": (idx(lambda i: ns.dims[i] == "I/OWaitPercentage"), "mean"),
        "network_algorithm": (idx(lambda i: ns.types[i] == "network" and ns.dims[i] == "Algorithm"), "sum"),
        "network_platform": (idx(lambda i: ns.types[i] == "network" and ns.dims[i] == "Platform"), "sum"),
    }
    for g in gpu_names[:MAX_GPU_SERIES_PER_NODE]:
        lines[f"{g}/GPUUtilization"] = (by_series.get((g, "GPUUtilization"), []), "mean")
        lines[f"{g}/GPUMemoryUtilization"] = (by_series.get((g, "GPUMemoryUtilization"), []), "mean")
        if (g, "GPUMemoryUsedPercent") in by_series:  # how full (a `record` with NVML), apart from controller activity
            lines[f"{g}/GPUMemoryUsedPercent"] = (by_series[(g, "GPUMemoryUsedPercent")], "mean")
    for key, (cols, how) in lines.items():
        v = _agg_series(ns, cols, how)
        if v is None:
            continue
        mn, mx, mean = _bucket_reduce(v[:, None], bstart)
        nd = 0 if key.startswith("network") else 2
        out["series"][key] = {"min": _r(mn[:, 0], nd), "max": _r(mx[:, 0], nd), "mean": _r(mean[:, 0], nd)}
    for key, dim in (("cpu_heatmap", "CPUUtilization"), ("gpu_heatmap", "GPUUtilization")):
        cols = [i for i in range(len(ns.columns)) if ns.dims[i] == dim]
        if dim == "GPUUtilization":
            cols = cols[:MAX_GPU_SERIES_PER_NODE]
        names = [ns.names[i] for i in cols]
        if names:
            mean = _bucket_means(ns, cols, bstart)
            out[key] = {"rows": names, "mean": [_r(mean[:, j], 1) for j in range(len(names))]}
    return out


PHASE_KINDS = (
    ("train", lambda name, phase: "Step:ModeKeys.TRAIN" in name),
    ("eval", lambda name, phase: "Step:ModeKeys.EVAL" in name),
    ("dataloader", lambda name, phase: phase in ("DataLoaderWorker", "DataLoaderIter")),
)


def _coded(col) -> tuple[np.ndarray, list[str]]:
    """Integer codes and their strings for a text column (missing -> the string "nan", as
    ``astype(str)`` writes it): the per-kind tests then run once per distinct string."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes, cats = col.cat.codes.to_numpy(), [str(c) for c in col.cat.categories]
    else:
        codes, uniq = pd.factorize(col.astype(str).to_numpy())
        cats = [str(u) for u in uniq]
    codes = np.where(codes < 0, len(cats), codes)
    return codes, cats + ["nan"]


def phase_timeline(events: pd.DataFrame, t_first: float, t_last: float, budget: int = BUCKETS) -> dict:
    """Merged TRAIN / EVAL / dataloading intervals per worker (seconds since epoch)."""
    out: dict = {}
    if len(events) == 0:
        return out
    min_gap = max((t_last - t_first) / budget, 0) * 1e6
    name_c, name_s = _coded(events["name"])
    phase_c, phase_s = _coded(events["phase"])
    node_c, node_s = _coded(events["node_id"])
    s_all, e_all = events["start_us"].to_numpy(), events["end_us"].to_numpy()
    for kind, pred in PHASE_KINDS:
        ok_n = np.array([pred(n, None) for n in name_s], dtype=bool)
        ok_p = np.array([pred("", p) for p in phase_s], dtype=bool)
        mask = ok_n[name_c] | ok_p[phase_c]
        if not mask.any():
            continue
        sel = np.nonzero(mask)[0]
        nodes_sel = node_c[sel]
        uniq, first = np.unique(nodes_sel, return_index=True)
        for code in uniq[np.argsort(first)]:  # workers in order of first appearance
            rows = sel[nodes_sel == code]
            s, e = merged_segments(s_all[rows], e_all[rows] + int(min_gap))
            e = e - int(min_gap)
            out.setdefault(node_s[code], {})[kind] = [[round(a / 1e6, 3), round(b / 1e6, 3)] for a, b in zip(s, e)]
    return out


def build_timeline(nodes: dict, events: pd.DataFrame, budget: int = BUCKETS,
                   extent_us: tuple[int, int] | None = None) -> dict:
    """``events``: at least the steps and dataloader events (``phase_timeline``); ``extent_us``: the
    (first start, last end) of all framework events, when ``events`` does not hold them all."""
    per_node = {node: node_timeline(ns, budget) for node, ns in nodes.items() if len(ns.tick_ts)}
    firsts = [ns.first_ts for ns in nodes.values()]
    lasts = [ns.last_ts for ns in nodes.values()]
    if extent_us is None and len(events):
        extent_us = (events["start_us"].min(), events["end_us"].max())
    if extent_us is not None:
        firsts.append(extent_us[0] / 1e6)
        lasts.append(extent_us[1] / 1e6)
    t_first = min(firsts) if firsts else 0.0
    t_last = max(lasts) if lasts else 0.0
    return {
        "budget": {"buckets_per_series": budget, "aggregates": ["min", "max", "mean"]},
        "nodes": per_node,
        "phases": phase_timeline(events, t_first, t_last, budget),
        # per worker: the slow steps found robustly (median + k·MAD) and their period, for the diagnosis
        "steps": workers_slow_steps(step_events(events)),
    }
