"""Node utilization over time (what SageMaker Studio's "Nodes" tab showed and the report lacked).

Built from ``timeline.json``, which our engine writes with a fixed budget of time buckets per
series (min/max/mean per bucket), so this section's size does not grow with the job's length.
"""

from __future__ import annotations

from reportgen.report import charts
from reportgen.report.model import Chart, Heading, Section, Text
from reportgen.report.outlier_steps import outlier_steps
from reportgen.report.util import as_dict, slug
from reportgen.rule_outputs import RuleOutputs

def no_js(title: str) -> str:
    return f"{title}: time-series chart (needs JavaScript); the per-node statistics are in System usage statistics."

LABELS = {"cpu_total": "CPU (mean of cores)", "cpu_memory": "CPU memory", "io_wait": "I/O wait (mean of cores)"}


def _utilization_series(series: dict) -> dict:
    chosen = {}
    for key, label in LABELS.items():
        if key in series:
            chosen[label] = series[key]
    for key, agg in series.items():
        if key.endswith("/GPUUtilization"):
            chosen[f"{key.split('/')[0]} utilization"] = agg
    for key, agg in series.items():
        if key.endswith("/GPUMemoryUtilization"):
            chosen[f"{key.split('/')[0]} memory"] = agg
    return chosen


def build(outputs: RuleOutputs) -> Section:
    section = Section("utilization-over-time", "Node utilization over time")
    timeline = as_dict(outputs.timeline)
    nodes = as_dict(timeline.get("nodes"))
    if not nodes:
        return section.missing("No time series are available: the report was made from rule outputs only "
                               "(render it from the raw profiler data to see utilization over time).")
    budget = as_dict(timeline.get("budget")).get("buckets_per_series", "a fixed number of")
    section.add(Text(
        f"Utilization of every node over the job, as in SageMaker Studio's Nodes view. Each series is reduced to "
        f"at most {budget} time buckets; the CPU line shows the bucket mean with its min-max range, so short "
        "spikes stay visible whatever the job length."))
    for node, data in nodes.items():
        data = as_dict(data)
        t = data.get("t") or []
        series = as_dict(data.get("series"))
        if not t:
            continue
        node = str(node)
        section.add(Heading(f"Node {node}", 3))
        util = _utilization_series(series)
        if util:
            section.add(Chart(f"timeline-util-{slug(node)}",
                              charts.time_lines(t, util, f"Utilization on {node} (%)", "%", band=LABELS["cpu_total"]),
                              no_js(f"Utilization on {node}")))
        net = {label: series[key] for key, label in (("network_algorithm", "network, training container"),
                                                     ("network_platform", "network, platform"))
               if key in series}
        if net:
            section.add(Chart(f"timeline-net-{slug(node)}",
                              charts.time_lines(t, net, f"Network on {node} (bytes/s)", "bytes/s"),
                              no_js(f"Network on {node}")))
        for key, label in (("cpu_heatmap", "CPU cores"), ("gpu_heatmap", "GPUs")):
            heat = as_dict(data.get(key))
            if heat.get("rows") and heat.get("mean"):
                section.add(Chart(f"timeline-{key}-{slug(node)}",
                                  charts.heatmap(t, heat["rows"], heat["mean"], f"{label} of {node} over time (%)"),
                                  no_js(f"{label} of {node} over time")))
    phases = as_dict(timeline.get("phases"))
    lanes = {}
    for worker, kinds in phases.items():
        for kind, spans in as_dict(kinds).items():
            if isinstance(spans, list) and spans:
                lanes[f"{worker} {kind}"] = [s for s in spans if isinstance(s, list) and len(s) == 2]
    if lanes:
        section.add(Heading("Framework phases", 3))
        section.add(Text("Training steps, evaluation steps and data loading per worker, on the same time axis as "
                         "the charts above: gaps in the training lane are time spent outside steps."))
        figure = charts.intervals(lanes, "Framework phases over time")
        marked = mark_outliers(figure, lanes, outlier_steps(outputs))
        if marked:
            section.add(Text(f"A red × marks each of the {marked} outlier steps on its worker's training lane "
                             "(listed in Step duration analysis)."))
        section.add(Chart("timeline-phases", figure, no_js("Framework phases over time")))
    _align(section)
    section.data = {"nodes": sorted(nodes), "buckets_per_series": budget}
    return section


def mark_outliers(figure: dict, lanes: dict, found: list[dict]) -> int:
    """Add the outlier steps to the phases chart as markers on their worker's step lane; how many."""
    xs, ys, texts = [], [], []
    for o in found:
        lane = next((f"{o['worker']} {kind}" for kind in ("train", "ProfilerStep", "eval")
                     if f"{o['worker']} {kind}" in lanes), None)
        if lane is None or o["start_s"] is None:
            continue
        xs.append((o["start_s"] + o["duration_s"] / 2) * 1000.0)
        ys.append(charts.safe(lane))
        ratio = f", {o['ratio']:.1f}× the median" if o["ratio"] else ""
        texts.append(charts.safe(f"step {o['step']}: {o['duration_s']:.2f} s{ratio}"))
    if xs:
        figure["data"].append({"type": "scatter", "mode": "markers", "x": xs, "y": ys, "text": texts,
                               "name": "outlier steps", "hovertemplate": "%{text}<extra></extra>",
                               "marker": {"symbol": "x", "size": 9, "color": "#b91c1c"}})
    return len(xs)


def _align(section: Section) -> None:
    """Every chart of the section on one time axis: from the first to the last instant any of them shows."""
    figures = [b.figure for b in section.blocks if isinstance(b, Chart)]
    xs = [x for f in figures for trace in f["data"] for x in trace.get("x", []) if isinstance(x, (int, float))]
    if not xs:
        return
    labels = [y for f in figures for trace in f["data"] if trace.get("type") == "heatmap" for y in trace["y"]]
    labels += [y for f in figures for trace in f["data"] if trace.get("type") != "heatmap"
               for y in trace.get("y", []) if isinstance(y, str)]
    charts.share_time_axis(figures, min(xs) / 1000.0, max(xs) / 1000.0, labels + ["100M"])
