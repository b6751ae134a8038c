"""BatchSize (spec B.6): CPU, GPU and GPU memory all low -> batch too small / instance too big.

Per node and per window with new CPU samples, once more than ``window`` and ``patience`` CPU ticks
exist: if p95 of the last ``window`` mean-core-utilisation values is below cpu_threshold_p95, each
GPU whose last-window p95 utilisation AND p95 memory are below their thresholds is one violation.
A node without GPUs, or a GPU without a memory series, is skipped (no crash).
"""

from __future__ import annotations

import numpy as np

from reportgen.engine.params import BatchSizeParams
from reportgen.engine.rules._common import result
from reportgen.engine.stats import box, percentile_windows, window_ends


def _columns(ns, dim):
    """``name -> column`` of a dimension, selected once (the first column of each name, as a select by name
    gives): selecting by name per GPU scanned every column once per GPU, 20,000 GPU series on one node
    took 98 s and 4 GB."""
    names, mat = ns.select(dim)
    first: dict = {}
    for j, name in enumerate(names):
        first.setdefault(name, j)
    return names, mat, first


def _col(ns, data, columns, name):
    _, mat, first = columns
    if name not in first:
        return None
    col = mat[:, first[name]]
    ok = ~np.isnan(col)
    return col[ok], data.window_of_s(ns.tick_ts[ok])


def _box6(v):
    b = box(v)
    return {k: b[k] for k in ("p25", "p50", "p75", "p95", "upper", "lower")}


def evaluate(data, params: BatchSizeParams | None = None) -> dict:
    p = params or BatchSizeParams()
    details: dict = {}
    violations = 0
    datapoints = 0
    last_window = None
    nw = data.n_windows
    for node, ns in data.nodes.items():
        cpu_idx = [i for i, d in enumerate(ns.dims) if d == "CPUUtilization"]
        if not cpu_idx:
            continue
        has_b, total_b = [], []
        for rows in ns.row_blocks():  # the mean over cores per tick, a block of ticks at a time
            cpu_mat = ns.take(cpu_idx, rows)
            has_b.append(~np.isnan(cpu_mat).all(axis=1))
            with np.errstate(invalid="ignore"):
                total_b.append(np.nanmean(cpu_mat[has_b[-1]], axis=1))
        has, cpu_total = np.concatenate(has_b), np.concatenate(total_b)
        cpu_win = data.window_of_s(ns.tick_ts[has])
        datapoints = len(cpu_total)
        gpus = []
        utils, mems = _columns(ns, "GPUUtilization"), _columns(ns, "GPUMemoryUtilization")
        for gname in utils[0]:
            util = _col(ns, data, utils, gname)
            mem = _col(ns, data, mems, gname)
            if mem is None or len(mem[0]) == 0:
                continue
            gpus.append((gname, util, mem, window_ends(util[1], nw), window_ends(mem[1], nw)))
        if not gpus:
            continue
        cpu_ends = window_ends(cpu_win, nw)
        # Windows with new CPU samples once more than ``window`` and ``patience`` exist, whose CPU
        # p95 over the last ``window`` values is not >= cpu_threshold_p95.
        new = np.diff(cpu_ends, prepend=0) > 0
        ks = np.nonzero(new & (cpu_ends > p.window) & (cpu_ends > p.patience))[0]
        if not len(ks):
            continue
        cpu95 = percentile_windows(cpu_total, cpu_ends[ks], p.window, [95])[:, 0]
        ks = ks[~(cpu95 >= p.cpu_threshold_p95)]
        hits = []  # (window, gpu position, gpu samples, memory samples) of each violation
        for gi, (gname, (u, _), (m, _), u_end, m_end) in enumerate(gpus):
            a, b = u_end[ks], m_end[ks]
            sel = (a > p.window) & (b != 0)
            if not sel.any():
                continue
            g95 = percentile_windows(u, a[sel], p.window, [95])[:, 0]
            m95 = percentile_windows(m, b[sel], p.window, [95])[:, 0]
            viol = (g95 < p.gpu_threshold_p95) & (m95 < p.gpu_memory_threshold_p95)
            hits += zip(ks[sel][viol].tolist(), [gi] * int(viol.sum()), a[sel][viol].tolist(), b[sel][viol].tolist())
        if not hits:
            continue
        hits.sort(key=lambda h: (h[0], h[1]))  # the original loop order: window, then GPU
        violations += len(hits)
        k_last = hits[-1][0]
        last_window = k_last if last_window is None else max(last_window, k_last)
        # Keys in order of first insertion, values from the last violation (as repeated updates give).
        nd = details.setdefault(node, {})
        last: dict = {}
        for k, gi, a, b in hits:
            nd.setdefault("cpu", None)
            nd.setdefault(gpus[gi][0], None)
            nd.setdefault(gpus[gi][0] + "_memory", None)
            last[gi] = (a, b)
        nd["cpu"] = _box6(cpu_total[: cpu_ends[k_last]])
        for gi, (a, b) in last.items():
            gname, (u, _), (m, _) = gpus[gi][:3]
            nd[gname] = _box6(u[:a])
            nd[gname + "_memory"] = _box6(m[:b])
    if last_window is not None:
        details["last_timestamp"] = data.window_start(last_window)
    return result(violations, violations, details, datapoints, p)
