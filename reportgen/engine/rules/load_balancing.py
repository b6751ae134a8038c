"""LoadBalancing (spec B.8): compare the utilisation histograms of every GPU pair on a node.

Histograms have 49 bins of width 2 from 0 to 98, the last bin closed and extended to 100 so 98-100 %
samples are kept (values outside 0..100 are clipped into the end bins). In each window where a node
got new samples, every pair of its GPUs with more than ``patience`` samples is compared with the
Jensen-Shannon distance (natural log) of their histograms so far; a distance above ``threshold`` is
one violation.
"""

from __future__ import annotations

import numpy as np

from reportgen.engine.params import LoadBalancingParams
from reportgen.engine.rules._common import result

Params = LoadBalancingParams
EDGES = np.r_[np.arange(0, 98, 2), 100.0]  # 50 edges -> 49 bins, last = [96, 100]


def js_distance(h1, h2) -> float:
    p = np.asarray(h1, dtype=np.float64)
    q = np.asarray(h2, dtype=np.float64)
    if p.sum() <= 0 or q.sum() <= 0:
        return 0.0
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2

    def kl(a):
        nz = a > 0
        return float(np.sum(a[nz] * np.log(a[nz] / m[nz])))

    return float(np.sqrt(max((kl(p) + kl(q)) / 2, 0.0)))


def _bins(v):
    return np.clip(np.searchsorted(EDGES, np.clip(v, 0, 100), side="right") - 1, 0, len(EDGES) - 2)


def evaluate(data, params: LoadBalancingParams | None = None) -> dict:
    p = params or LoadBalancingParams()
    nb = len(EDGES) - 1
    nw = max(data.n_windows, 1)
    details: dict = {}
    violations = 0
    datapoints = 0
    for node, ns in data.nodes.items():
        names, mat = ns.select("GPUUtilization")
        if not names:
            continue
        win = data.window_of_s(ns.tick_ts)
        cum = {}  # gpu -> (windows x bins) cumulative histogram
        for j, g in enumerate(names):
            col = mat[:, j]
            ok = ~np.isnan(col)
            counts = np.bincount(win[ok] * nb + _bins(col[ok]), minlength=nw * nb).reshape(nw, nb)
            cum[g] = np.cumsum(counts, axis=0)
            datapoints = int(ok.sum())
        node_d = {"workloads": {g: [int(x) for x in cum[g][-1]] for g in names}}
        new_data = np.bincount(win, minlength=nw) > 0
        for k in np.nonzero(new_data)[0]:
            for a in range(len(names)):
                for b in range(a + 1, len(names)):
                    h1, h2 = cum[names[a]][k], cum[names[b]][k]
                    if h1.sum() <= p.patience or h2.sum() <= p.patience:
                        continue
                    d = js_distance(h1, h2)
                    if d > p.threshold:
                        violations += 1
                        node_d.setdefault("distances", {}).setdefault(names[a], {})[names[b]] = d
        details[node] = node_d
    return result(violations, violations, details, datapoints, p)
