"""Shared logic of CPUBottleneck and IOBottleneck (spec B.2/B.3), one snapshot = one tick per node.

A snapshot is a bottleneck when at least one GPU is below ``gpu_threshold`` and at least one core
is above the second threshold. After each window the cumulative share of bottleneck snapshots is
checked (once ``patience`` snapshots were seen); each window where it exceeds ``threshold`` % counts
as one trigger. Framework events active during the bottlenecks of triggered windows are summarised.
"""

from __future__ import annotations

import numpy as np

from reportgen.engine.breakdown import breakdown_of_groups
from reportgen.engine.model import AnalysisData
from reportgen.engine.rules._common import result


def evaluate_bottleneck(data: AnalysisData, params, second_dim: str, second_threshold: float) -> dict:
    ts_l, win_l, low_l, high_l = [], [], [], []
    for node, ns in data.nodes.items():
        gpu_idx = [i for i, d in enumerate(ns.dims) if d == "GPUUtilization"]
        other_idx = [i for i, d in enumerate(ns.dims) if d == second_dim]
        low_b, high_b = [], []
        for rows in ns.row_blocks():  # per tick: a block of ticks at a time, whatever the duration
            with np.errstate(invalid="ignore"):
                low_b.append((ns.take(gpu_idx, rows) < params.gpu_threshold).sum(axis=1))
                high_b.append((ns.take(other_idx, rows) > second_threshold).sum(axis=1))
        low, high = np.concatenate(low_b), np.concatenate(high_b)
        ts_l.append(ns.tick_ts)
        win_l.append(data.window_of_s(ns.tick_ts))
        low_l.append(low)
        high_l.append(high)
    if not ts_l:
        return result(0, 0, {"low_gpu_utilization": 0, "bottlenecks": {}}, 0, params)
    ts, win = np.concatenate(ts_l), np.concatenate(win_l)
    low, high = np.concatenate(low_l), np.concatenate(high_l)
    order = np.argsort(ts, kind="stable")
    ts, win, low, high = ts[order], win[order], low[order], high[order]
    is_bn = (low > 0) & (high > 0)

    n = max(data.n_windows, 1)
    cum_dp = np.cumsum(np.bincount(win, minlength=n))
    cum_bn = np.cumsum(np.bincount(win[is_bn], minlength=n))
    has_data = np.bincount(win, minlength=n) > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(cum_dp > 0, cum_bn / np.maximum(cum_dp, 1) * 100, 0.0)
    fired = has_data & (cum_dp > params.patience) & (share > params.threshold)

    details = {
        "low_gpu_utilization": int((low > 0).sum()),
        "bottlenecks": {repr(t): {"GPUs": g, "CPUs": c}  # Python floats and ints (tolist), one per tick
                        for t, g, c in zip(ts[is_bn].tolist(), low[is_bn].tolist(), high[is_bn].tolist())},
    }
    if fired.any():
        sel = is_bn & fired[win]
        instants = np.round(ts[sel] * 1e6).astype(np.int64)
        details.update(breakdown_of_groups(data.framework.groups_at_instants(instants)))
    return result(int(fired.sum()), int(is_bn.sum()), details, len(ts), params)
