"""``timeline.json`` of a long, many-node job, made by the engine's own bucketing from synthetic samples.

The page's time series come only from ``timeline.json`` (``reportgen.engine.timeline``: a fixed budget of
buckets per series whatever the duration), so a long job's page is this file plus the rule outputs of any
job: no need to write and parse gigabytes of raw data to know how large the page gets. Each node's
samples are made in memory one node at a time (8 h at 500 ms, 96 cores: ~60 MB), with one-sample spikes
planted where a test can find them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

START_EPOCH = 1_700_000_000.0


def node_samples(node: str, cores: int, gpus: int, hours: float, interval_s: float = 0.5, seed: int = 0):
    """A ``NodeSystem`` with ``hours`` of samples: CPU, I/O wait, GPU and GPU memory per device, host
    memory, network (training container and platform). Returns (table, spikes): ``spikes`` maps a
    column name to the tick index of its one-sample spike (100 % for a utilization, 0 before it)."""
    from reportgen.readers.tick_table import NodeSystem

    rng = np.random.default_rng(seed)
    n = int(hours * 3600 / interval_s)
    t = START_EPOCH + np.arange(n) * interval_s
    columns, types, names, dims, cols = [], [], [], [], []

    def add(name, dim, kind, values):
        columns.append(f"{name}/{dim}" if dim else name)
        names.append(name)
        dims.append(dim)
        types.append(kind)
        cols.append(values)

    slow = np.sin(np.arange(n) / (n / 12.0))
    for c in range(cores):
        add(f"cpu{c}", "CPUUtilization", "cpu",
            np.round(np.clip(40 + 25 * slow + rng.normal(0, 8, n), 0, 100), 2))
    for c in range(cores):
        add(f"cpu{c}", "I/OWaitPercentage", "cpu", np.round(np.clip(rng.normal(2, 1, n), 0, 100), 2))
    for g in range(gpus):
        add(f"gpu{g}", "GPUUtilization", "gpu", np.round(np.clip(80 - 20 * slow + rng.normal(0, 5, n), 0, 100), 1))
        add(f"gpu{g}", "GPUMemoryUtilization", "gpu", np.round(np.clip(50 + rng.normal(0, 2, n), 0, 100), 1))
    add("MemoryUsedPercent", "", "memory", np.round(np.clip(30 + 10 * slow + rng.normal(0, 1, n), 0, 100), 2))
    add("eth0", "Algorithm", "network", np.round(np.abs(rng.normal(2e8, 5e7, n)), 2))
    add("eth0", "Platform", "network", np.round(np.abs(rng.normal(1e6, 3e5, n)), 2))
    spikes = {}
    for j, name in enumerate(columns):
        if name.endswith("Utilization") or name.endswith("Percentage"):
            at = int(rng.integers(1, n - 1))
            cols[j][at] = 100.0
            spikes[name] = at
    values = np.column_stack(cols)
    table = NodeSystem(node, interval_s, t, columns, types, names, dims, values,
                       first_ts=float(t[0]), last_ts=float(t[-1]))
    return table, spikes


def long_job_timeline(nodes: int = 8, cores: int = 96, gpus: int = 8, hours: float = 8.0,
                      interval_s: float = 0.5, seed: int = 0) -> dict:
    """The ``timeline.json`` document of such a job (``build_timeline``, no framework phases)."""
    from reportgen.engine.timeline import build_timeline

    timeline: dict = {}
    for i in range(nodes):
        table, _ = node_samples(f"algo-{i + 1}", cores, gpus, hours, interval_s, seed + i)
        doc = build_timeline({table.node: table}, pd.DataFrame({"start_us": [], "end_us": []}))
        timeline.setdefault("budget", doc["budget"])
        timeline.setdefault("nodes", {}).update(doc["nodes"])
        timeline["phases"] = {}
    return timeline
