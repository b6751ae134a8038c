"""Dataloader (spec B.11): parallel dataloader processes vs. the number of cores.

For every second that has dataloader events carrying a process id, the number of distinct
processes is one sample. In each window with new samples (once more than ``patience`` exist), a
median below min_threshold % or above max_threshold % of the core count is one violation; every
violating window counts as a trigger. Details add the PyTorch DataLoader settings and the
dataloading-time distribution.
"""

from __future__ import annotations

import numpy as np

from reportgen.engine.framework_events import LOADER_PHASES
from reportgen.engine.params import DataloaderParams
from reportgen.engine.rules._common import result, text_match
from reportgen.engine.stats import hist100, window_ends


def evaluate(data, params: DataloaderParams | None = None) -> dict:
    p = params or DataloaderParams()
    ev = data.events  # at least the dataloader's events (engine.framework_events)
    details: dict = {}
    if data.framework.n_events == 0:
        return result(0, 0, details, 0, p)
    # the three columns read of the loader events, not a copy of their rows (two thirds of the key
    # rows of a long job: ~120 MB on 16 nodes x 8 h)
    loaders = text_match(ev["phase"], lambda s: s in LOADER_PHASES)
    n_loaders = int(loaders.sum())
    if n_loaders == 0:
        return result(0, 0, details, 0, p)
    init = ev[text_match(ev["phase"], lambda s: s == "DataLoaderIterInitialize")]
    pin = init["pin_memory"].to_numpy()
    pin = pin[pin >= 0]
    workers = init["num_workers"].to_numpy()
    workers = workers[np.isfinite(workers)]  # an Infinity in the trace is no worker count (int() would raise)
    if len(pin):
        details["pin_memory"] = bool(pin[-1])
    if len(workers):
        details["num_workers"] = int(workers[-1])
    if any("Prefetch" in str(name) for name in data.framework.groups["name"]):
        details["prefetch"] = True
    cores = max((list(ns.dims).count("CPUUtilization") for ns in data.nodes.values()), default=0)

    s = ev["start_us"].to_numpy()[loaders]
    pid = ev["arg_pid"].to_numpy()[loaders]
    ok = pid >= 0
    sec = s[ok] // 1_000_000
    pid = pid[ok]
    # Distinct (second, pid) pairs, then pairs per second (a lexsort instead of np.unique(axis=0)).
    o = np.lexsort((pid, sec))
    sec, pid = sec[o], pid[o]
    first = np.r_[True, (sec[1:] != sec[:-1]) | (pid[1:] != pid[:-1])] if len(sec) else np.zeros(0, bool)
    secs, parallel = np.unique(sec[first], return_counts=True)
    violations = 0
    med = None
    if len(secs):
        win = data.window_of_us(secs * 1_000_000)
        ends = window_ends(win, data.n_windows)
        prev = 0
        for k, n in enumerate(ends):
            if n == prev:
                continue
            prev = n
            med = float(np.median(parallel[:n]))
            if n > p.patience and cores:
                if med < cores * p.min_threshold / 100 or med > cores * p.max_threshold / 100:
                    violations += 1
    details["cores"] = cores
    if med is not None:
        details["dataloaders"] = int(med) if med.is_integer() else med
    times = (ev["end_us"].to_numpy()[loaders] - s) / 1e6
    del s, loaders
    probs, edges = hist100(times)
    p25, p50, p95 = np.percentile(times, [25, 50, 95])
    details["dataloading_time"] = {"p25": float(p25), "p50": float(p50), "p95": float(p95),
                                   "probs": probs, "binedges": edges}
    return result(violations, violations, details, n_loaders, p)
