"""LoadBalancing (spec B.8): compare the utilisation histograms of every GPU pair on a node.

Histograms have 49 bins of width 2 from 0 to 98, the last bin closed and extended to 100 so 98-100 %
samples are kept (values outside 0..100 are clipped into the end bins). In each window where a node
got new samples, every pair of its GPUs with more than ``patience`` samples is compared with the
Jensen-Shannon distance (natural log) of their histograms so far; a distance above ``threshold`` is
one violation. The default threshold, 0.4, is calibrated (docs/deviations.md #15): 0.2, the container's,
is within the sampling noise of two balanced GPUs just after ``patience``.
"""

from __future__ import annotations

import numpy as np

from reportgen.engine.model import MAX_GPU_SERIES_PER_NODE
from reportgen.engine.params import LoadBalancingParams
from reportgen.engine.rules._common import result
from reportgen.engine.stats import pairwise_sum_rows

_CHUNK_ROWS = 20_000  # (window, pair) rows per vectorised batch
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


def js_distances(h1: np.ndarray, h2: np.ndarray) -> np.ndarray:
    """``js_distance`` of each row pair of two (rows x bins) count arrays with positive row sums,
    bit-identical to the scalar function (same element-wise operations; the sums of the non-zero
    KL terms are added in numpy's own order by ``pairwise_sum_rows``)."""
    p = np.asarray(h1, dtype=np.float64)
    q = np.asarray(h2, dtype=np.float64)
    p = p / p.sum(axis=1)[:, None]  # integer counts: the row sums are exact
    q = q / q.sum(axis=1)[:, None]
    m = (p + q) / 2

    def kl(a):
        nz = a > 0
        terms = np.zeros(a.shape)
        # Non-zero entries moved to the front of each row, in order, as ``a[nz]`` would give them.
        order = np.argsort(~nz, axis=1, kind="stable")
        counts = nz.sum(axis=1)
        front = np.arange(a.shape[1])[None, :] < counts[:, None]
        an, mn = np.take_along_axis(a, order, 1)[front], np.take_along_axis(m, order, 1)[front]
        terms[front] = an * np.log(an / mn)
        return pairwise_sum_rows(terms, counts)

    return np.sqrt(np.maximum((kl(p) + kl(q)) / 2, 0.0))


def evaluate(data, params: LoadBalancingParams | None = None) -> dict:
    p = params or LoadBalancingParams()
    nb = len(EDGES) - 1
    nw = max(data.n_windows, 1)
    details: dict = {}
    violations = 0
    datapoints = 0
    for node, ns in data.nodes.items():
        # the node's GPU series, as select("GPUUtilization") gives them, but no more than the cap: pairs grow
        # as GPUs², so past it only the first ones are compared (the engine notes it under Data quality)
        idx = [i for i, dim in enumerate(ns.dims) if dim == "GPUUtilization"][:MAX_GPU_SERIES_PER_NODE]
        if not idx:
            continue
        names, mat = [ns.names[i] for i in idx], ns.take(idx)
        win = data.window_of_s(ns.tick_ts)
        cum = np.empty((len(names), nw, nb), np.int64)  # gpu x window x bin: cumulative histograms
        for j in range(len(names)):
            col = mat[:, j]
            ok = ~np.isnan(col)
            counts = np.bincount(win[ok] * nb + _bins(col[ok]), minlength=nw * nb).reshape(nw, nb)
            cum[j] = np.cumsum(counts, axis=0)
            datapoints = int(ok.sum())
        node_d = {"workloads": {g: [int(x) for x in cum[j][-1]] for j, g in enumerate(names)}}
        # Every (window with new samples, GPU pair) in the original loop order: window, then a < b;
        # in chunks of windows so the temporaries stay small however long the job.
        ks_all = np.nonzero(np.bincount(win, minlength=nw) > 0)[0]
        a_idx, b_idx = np.triu_indices(len(names), 1)
        totals = cum.sum(axis=2)
        step = max(1, _CHUNK_ROWS // max(len(a_idx), 1))
        for c in range(0, len(ks_all), step):
            ks = ks_all[c : c + step]
            kk = np.repeat(ks, len(a_idx))
            aa, bb = np.tile(a_idx, len(ks)), np.tile(b_idx, len(ks))
            ok = (totals[aa, kk] > p.patience) & (totals[bb, kk] > p.patience)
            kk, aa, bb = kk[ok], aa[ok], bb[ok]
            if not len(kk):
                continue
            d = js_distances(cum[aa, kk], cum[bb, kk])
            violations += int(np.count_nonzero(d > p.threshold))
        # reportgen's addition: the final distance (all samples) of every pair compared, so the report
        # shows where each pair ended, not the last window it was over the threshold
        final = (totals[a_idx, -1] > p.patience) & (totals[b_idx, -1] > p.patience)
        if final.any():
            fa, fb = a_idx[final], b_idx[final]
            last = np.full(len(fa), nw - 1)
            for i, dist in enumerate(js_distances(cum[fa, last], cum[fb, last]).tolist()):
                node_d.setdefault("distances", {}).setdefault(names[fa[i]], {})[names[fb[i]]] = float(dist)
        details[node] = node_d
    return result(violations, violations, details, datapoints, p)
