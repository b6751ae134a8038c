"""GPUMemoryIncrease (spec B.5): jumps of the moving average of GPU memory utilisation.

Per sample i (once more than ``window + 1`` and more than ``patience`` samples exist):
cur = mean of the last ``window`` values, prev = mean of values i-window .. i-2 (the original's
formula, kept so trigger counts stay comparable with SageMaker's); cur - prev > increase is one
violation. Computed for all samples at once with cumulative sums.
"""

from __future__ import annotations

import numpy as np

from reportgen.engine.params import GPUMemoryIncreaseParams
from reportgen.engine.rules._common import result, series
from reportgen.engine.stats import box


def evaluate(data, params: GPUMemoryIncreaseParams | None = None) -> dict:
    p = params or GPUMemoryIncreaseParams()
    w = p.window
    details: dict = {}
    violations = 0
    datapoints = 0
    last_window = None
    for node, gpu, v, win in series(data, "GPUMemoryUtilization"):
        n = len(v)
        datapoints = n
        if w < 2 or n <= w + 1:
            continue
        c = np.r_[0.0, np.cumsum(v)]
        i = np.arange(w + 1, n)  # sample index; series length at that sample = i + 1 > w + 1
        cur = (c[i + 1] - c[i + 1 - w]) / w
        prev = (c[i - 1] - c[i - w]) / (w - 1)
        diff = cur - prev
        hit = (diff > p.increase) & (i + 1 > p.patience)
        if not hit.any():
            continue
        violations += int(hit.sum())
        last = int(i[hit][-1])
        hist = v[: last + 1]
        b = box(hist, with_p05=True)
        details.setdefault(node, {})[gpu] = {"increase": float(diff[hit][-1]), "gpu_max": float(hist.max()), **b}
        k = int(win[last])
        last_window = k if last_window is None else max(last_window, k)
    if last_window is not None:
        details["last_timestamp"] = data.window_start(last_window)
    return result(violations, violations, details, datapoints, p)
