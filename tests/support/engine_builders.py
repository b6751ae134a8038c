"""Small in-memory builders for rule tests (no files)."""

from __future__ import annotations

import numpy as np

from reportgen.readers.framework import empty_events, events_frame
from reportgen.engine.model import AnalysisData, time_axis
from reportgen.readers.tick_table import NodeSystem

T0 = 1_699_999_980  # a minute boundary (seconds)


def ticks(n, interval=0.5, offset=0.01):
    return T0 + offset + interval * np.arange(n)


def node(ts, cols: dict, name="algo-1", interval=0.5) -> NodeSystem:
    labels = list(cols)
    types, names, dims = [], [], []
    for lab in labels:
        n, _, d = lab.partition("/")
        names.append(n)
        dims.append(d)
        types.append("cpu" if n.startswith("cpu") else "gpu" if n.startswith("gpu") else
                     "network" if "Bytes" in n and d else "memory" if n == "MemoryUsedPercent" else "i/o")
    vals = np.column_stack([np.broadcast_to(np.asarray(cols[c], float), (len(ts),)) for c in labels])
    return NodeSystem(node=name, interval_s=interval, tick_ts=np.asarray(ts, float), columns=labels,
                      types=types, names=names, dims=dims, values=vals.copy(),
                      first_ts=float(ts[0]), last_ts=float(ts[-1]))


def events(rows):
    """rows: dicts with start_us, end_us, name, phase and optional node_id, file_type, step_num, arg_pid..."""
    if not rows:
        return empty_events()
    cols = {c: [] for c in ("start_us", "end_us", "dur_us", "name", "phase", "node_id", "file_type",
                            "step_num", "pid", "tid", "arg_pid", "num_workers", "pin_memory")}
    for r in rows:
        cols["start_us"].append(r["start_us"])
        cols["end_us"].append(r["end_us"])
        cols["dur_us"].append(r["end_us"] - r["start_us"])
        cols["name"].append(r["name"])
        cols["phase"].append(r.get("phase", r["name"]))
        cols["node_id"].append(r.get("node_id", "algo-1-1"))
        cols["file_type"].append(r.get("file_type", "PythontimelineMetrics"))
        cols["step_num"].append(r.get("step_num", ""))
        cols["pid"].append(r.get("pid", 1))
        cols["tid"].append(r.get("tid", -1))
        cols["arg_pid"].append(r.get("arg_pid", -1))
        cols["num_workers"].append(r.get("num_workers", np.nan))
        cols["pin_memory"].append(r.get("pin_memory", -1))
    return events_frame(cols)


def data(nodes=(), ev=None) -> AnalysisData:
    nodes = {n.node: n for n in nodes}
    ev = ev if ev is not None else empty_events()
    t0, nw = time_axis(nodes, ev, T0 * 1_000_000)
    return AnalysisData(nodes=nodes, events=ev, t0_us=t0, n_windows=nw)


def us(t_s):
    return int(round(t_s * 1_000_000))


def summaries_on(client, root, problems, files, seen: list, s3=None):
    """``read_traces`` with the engine's per-file reduction on ``client``'s workers; every
    ``FileSummary`` that comes back is appended to ``seen``; returns the merged ``FrameworkEvents``."""
    from functools import partial

    from reportgen.engine.framework_events import merge_summaries, summarize_file
    from reportgen.readers.distributed import read_traces

    def merge(items, problems):
        def each():
            for fs in items:
                seen.append(fs)
                yield fs
        return merge_summaries(each(), problems)

    return read_traces(root, problems, files, client=client, s3=s3, reduce=partial(summarize_file, span=None),
                       merge=merge)
