"""LowGPUUtilization (spec B.4): per GPU, low or strongly fluctuating utilisation.

Evaluated once per window in which the GPU got new samples (after ``patience`` samples), on the
last ``window`` samples: p95 < threshold_p95, or p95 > threshold_p95 with p5 < threshold_p5, is one
violation. Details carry box-plot statistics over the GPU's whole history up to its last violation.
"""

from __future__ import annotations

import numpy as np

from reportgen.engine.params import LowGPUUtilizationParams
from reportgen.engine.rules._common import result, series
from reportgen.engine.stats import box, percentile_windows, window_ends


def evaluate(data, params: LowGPUUtilizationParams | None = None) -> dict:
    p = params or LowGPUUtilizationParams()
    details: dict = {}
    violations = 0
    datapoints = 0
    last_window = None
    for node, gpu, v, win in series(data, "GPUUtilization"):
        datapoints = len(v)
        ends = window_ends(win, data.n_windows)
        # Windows with new samples for this GPU, once more than ``patience`` samples exist.
        new = np.diff(ends, prepend=0) > 0
        ks = np.nonzero(new & (ends > p.patience))[0]
        last_m = None
        last_q = None
        if len(ks):
            q = percentile_windows(v, ends[ks], p.window, [95, 5])
            q95, q5 = q[:, 0], q[:, 1]
            viol = (q95 < p.threshold_p95) | ((q95 > p.threshold_p95) & (q5 < p.threshold_p5))
            hit = np.nonzero(viol)[0]
            if len(hit):
                violations += len(hit)
                j = hit[-1]
                last_m, last_q = int(ends[ks[j]]), (q95[j], q5[j])
                k = int(ks[j])
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
