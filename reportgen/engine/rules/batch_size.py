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
from reportgen.engine.stats import box, window_ends

Params = BatchSizeParams


def _col(ns, data, dim, name):
    names, mat = ns.select(dim, name)
    if not names:
        return None
    col = mat[:, 0]
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
        _, cpu_mat = ns.select("CPUUtilization")
        if cpu_mat.shape[1] == 0:
            continue
        has = ~np.isnan(cpu_mat).all(axis=1)
        with np.errstate(invalid="ignore"):
            cpu_total = np.nanmean(cpu_mat[has], axis=1)
        cpu_win = data.window_of_s(ns.tick_ts[has])
        datapoints = len(cpu_total)
        gpus = []
        for gname in ns.select("GPUUtilization")[0]:
            util = _col(ns, data, "GPUUtilization", gname)
            mem = _col(ns, data, "GPUMemoryUtilization", gname)
            if mem is None or len(mem[0]) == 0:
                continue
            gpus.append((gname, util, mem, window_ends(util[1], nw), window_ends(mem[1], nw)))
        if not gpus:
            continue
        cpu_ends = window_ends(cpu_win, nw)
        prev = 0
        for k, n in enumerate(cpu_ends):
            if n == prev:
                continue
            prev = n
            if n <= p.window or n <= p.patience:
                continue
            if np.percentile(cpu_total[n - p.window:n], 95) >= p.cpu_threshold_p95:
                continue
            for gname, (u, _), (m, _), u_end, m_end in gpus:
                a, b = u_end[k], m_end[k]
                if a <= p.window or b == 0:
                    continue
                g95 = np.percentile(u[a - p.window:a], 95)
                m95 = np.percentile(m[max(0, b - p.window):b], 95)
                if g95 < p.gpu_threshold_p95 and m95 < p.gpu_memory_threshold_p95:
                    violations += 1
                    last_window = k if last_window is None else max(last_window, k)
                    nd = details.setdefault(node, {})
                    nd["cpu"] = _box6(cpu_total[:n])
                    nd[gname] = _box6(u[:a])
                    nd[gname + "_memory"] = _box6(m[:b])
    if last_window is not None:
        details["last_timestamp"] = data.window_start(last_window)
    return result(violations, violations, details, datapoints, p)
