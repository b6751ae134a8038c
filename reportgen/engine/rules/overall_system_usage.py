"""OverallSystemUsage (spec B.9): per-node percentile summary; never triggers.

Per tick: Network = container (``Algorithm``) receive + transmit bytes/s; GPU, CPU, GPU memory, I/O =
mean over the node's own GPUs / cores; CPU memory = MemoryUsedPercent. Then max, p99, p95, p90 (our
addition), p50, min over the ticks that have the metric; values <= 0 become 0; rounded to 2 places.
"""

from __future__ import annotations

import numpy as np

from reportgen.engine.params import OverallSystemUsageParams
from reportgen.engine.rules._common import result

METRICS = ("Network", "GPU", "CPU", "CPU memory", "GPU memory", "I/O")


def _per_tick(ns, metric):
    if metric == "Network":
        idx = [i for i, d in enumerate(ns.dims) if d == "Algorithm" and ns.types[i] == "network"]
        reduce = np.nansum
    elif metric == "CPU memory":
        idx = [i for i, n in enumerate(ns.names) if n == "MemoryUsedPercent"]
        reduce = np.nanmean
    else:
        dim = {"GPU": "GPUUtilization", "CPU": "CPUUtilization", "GPU memory": "GPUMemoryUtilization",
               "I/O": "I/OWaitPercentage"}[metric]
        idx = [i for i, d in enumerate(ns.dims) if d == dim]
        reduce = np.nanmean
    if not idx:
        return None
    parts = []
    for rows in ns.row_blocks():  # per tick, a block of ticks at a time (the same values)
        mat = ns.take(idx, rows)
        has = ~np.isnan(mat).all(axis=1)
        if has.any():
            parts.append(reduce(mat[has], axis=1))
    if not parts:
        return None
    return np.concatenate(parts)


def _clean(x: float):
    return 0 if x <= 0 else round(float(x), 2)


def evaluate(data, params: OverallSystemUsageParams | None = None) -> dict:
    p = params or OverallSystemUsageParams()
    details: dict = {m: {} for m in METRICS}
    datapoints = 0
    for i, (node, ns) in enumerate(data.nodes.items()):
        for metric in METRICS:
            v = _per_tick(ns, metric)
            if v is None:
                continue
            if metric == "CPU" and datapoints == 0:
                datapoints = len(v)
            p99, p95, p90, p50 = np.percentile(v, [99, 95, 90, 50])
            details[metric][node] = {
                "max": _clean(v.max()), "p99": _clean(p99), "p95": _clean(p95), "p90": _clean(p90),
                "p50": _clean(p50), "min": _clean(v.min()),
            }
    return result(0, 0, details, datapoints, p)
