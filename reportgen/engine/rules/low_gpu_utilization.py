"""LowGPUUtilization (spec B.4): per GPU, low or strongly fluctuating utilisation.

Evaluated once per window in which the GPU got new samples (after ``patience`` samples), on the
last ``window`` samples: p95 < threshold_p95, or p95 > threshold_p95 with p5 < threshold_p5, is one
violation. Details carry box-plot statistics over the GPU's whole history up to its last violation.
"""

from __future__ import annotations

import numpy as np

from reportgen.engine.params import LowGPUUtilizationParams
from reportgen.engine.rules._common import result, series
from reportgen.engine.stats import box, window_ends

Params = LowGPUUtilizationParams


def evaluate(data, params: LowGPUUtilizationParams | None = None) -> dict:
    p = params or LowGPUUtilizationParams()
    details: dict = {}
    violations = 0
    datapoints = 0
    last_window = None
    for node, gpu, v, win in series(data, "GPUUtilization"):
        datapoints = len(v)
        ends = window_ends(win, data.n_windows)
        prev = 0
        last_m = None
        last_q = None
        for k, m in enumerate(ends):
            if m == prev:
                continue  # no new samples for this GPU in window k
            prev = m
            if m <= p.patience:
                continue
            q95, q5 = np.percentile(v[max(0, m - p.window):m], [95, 5])
            if q95 < p.threshold_p95 or (q95 > p.threshold_p95 and q5 < p.threshold_p5):
                violations += 1
                last_m, last_q = m, (q95, q5)
                last_window = k if last_window is None else max(last_window, k)
        if last_m is not None:
            hist = v[:last_m]
            b = box(hist)
            details.setdefault(node, {})[gpu] = {
                "gpu_max": float(hist.max()), "gpu_95": float(last_q[0]), "gpu_5": float(last_q[1]),
                "p25": b["p25"], "p50": b["p50"], "p75": b["p75"], "p95": b["p95"],
                "upper": b["upper"], "lower": b["lower"],
            }
    if last_window is not None:
        details["last_timestamp"] = data.window_start(last_window)
    return result(violations, violations, details, datapoints, p)
