"""Node utilization over time (what SageMaker Studio's "Nodes" tab showed and the report lacked).

Built from ``timeline.json``, which our engine writes with a fixed budget of time buckets per
series (min/max/mean per bucket), so this section's size does not grow with the job's length.
"""

from __future__ import annotations

from reportgen.report import charts
from reportgen.report.model import Chart, ChartRow, Details, Heading, Section, Text, chart_rows
from reportgen.report.outlier_steps import outlier_steps, per_worker
from reportgen.report.util import number, slug
from reportgen.rule_outputs import RuleOutputs
from reportgen.section_ids import SectionId
from reportgen.timeline_view import Timeline, TimelineNode, TimelineSeries

def no_js(title: str, picture: bool = False) -> str:
    """The line a reader without JavaScript sees; ``picture``: a static picture of the chart follows it
    (``render.static_chart``)."""
    if picture:
        return (f"{title}, pictured below: the interactive chart needs JavaScript. Per-node statistics: System "
                "usage statistics.")
    return f"{title}: time-series chart (needs JavaScript); the per-node statistics are in System usage statistics."


# The CPU-side panel's series, in legend order: (timeline key, label, colour kind).
CPU_SERIES = (("cpu_total", "CPU (mean of cores)", "cpu"), ("cpu_memory", "CPU memory", "cpu_memory"),
              ("io_wait", "I/O wait (mean of cores)", "io_wait"))
NETWORK_SERIES = (("network_algorithm", "network, training container", "network"),
                  ("network_platform", "network, platform", "network_platform"))


def _lines(series: dict[str, TimelineSeries], chosen: tuple[tuple[str, str, str], ...]) -> dict[str, charts.Line]:
    """The node's series named in ``chosen`` ((key, label, kind), in legend order) that it has, as lines."""
    return {label: charts.Line(s.mean, s.min, s.max, kind) for key, label, kind in chosen
            if (s := series.get(key)) is not None}


def _across(aggs: list[TimelineSeries], kind: str) -> charts.Line:
    """Several GPUs' bucketed series as one: the mean of their means, and a band from the lowest
    minimum to the highest maximum of any GPU in the bucket (so no GPU's swing is hidden). The mean is
    rounded to the two decimals its inputs have (timeline.json's utilization), 0.005 points at most, so the
    chart carries it as whole hundredths (``charts.float_array``) instead of float32."""
    length = min((len(a.mean) for a in aggs), default=0)

    def pick(columns, reduce):
        if any(len(c) < length for c in columns):
            return []
        out = []
        for j in range(length):
            values = [number(c[j]) for c in columns]
            values = [v for v in values if v is not None]
            out.append(reduce(values) if values else None)
        return out

    return charts.Line(pick([a.mean for a in aggs], lambda v: round(sum(v) / len(v), 2)),
                       pick([a.min for a in aggs], min), pick([a.max for a in aggs], max), kind)


def gpu_panel(series: dict[str, TimelineSeries]) -> dict[str, charts.Line]:
    """The GPU panel: utilization, memory-controller activity and (recorded with NVML) memory in use, each the
    mean over the node's GPUs with the range of
    every GPU as a band (the per-GPU detail is in the GPU heatmap beside it)."""
    util = [a for k, a in series.items() if k.endswith("/GPUUtilization")]
    memory = [a for k, a in series.items() if k.endswith("/GPUMemoryUtilization")]
    used = [a for k, a in series.items() if k.endswith("/GPUMemoryUsedPercent")]
    chosen = {}
    if util:
        chosen["GPU utilization (mean of GPUs)" if len(util) > 1 else "GPU utilization"] = _across(util, "gpu")
    if memory:
        # GPUMemoryUtilization is how busy the memory is (controller activity), never how full
        label = "GPU memory-controller activity"
        chosen[f"{label} (mean of GPUs)" if len(memory) > 1 else label] = _across(memory, "gpu_memory")
    if used:  # how full (a `record` with NVML's memory info)
        label = "GPU memory in use"
        chosen[f"{label} (mean of GPUs)" if len(used) > 1 else label] = _across(used, "gpu_memory_used")
    return chosen


def build(outputs: RuleOutputs) -> Section:
    section = Section(SectionId.UTILIZATION_OVER_TIME, "Node utilization over time")
    timeline = Timeline.of(outputs.timeline)
    nodes = timeline.nodes
    if not nodes:
        return section.missing("No time series are available: the report was made from rule outputs only "
                               "(render it from the raw profiler data to see utilization over time).")
    budget = timeline.buckets_per_series
    merge = page_merge(sum(1 for data in nodes.values() if data.t))
    merged = {node: merged_by(data.t, merge) for node, data in nodes.items()}
    per_node = {node: samples_per_point(data, merged[node]) for node, data in nodes.items()}
    same = len(set(per_node.values())) == 1
    once = next(iter(per_node.values()))[:-1] + " on every node." if same and next(iter(per_node.values())) else ""
    points = f"{budget} time buckets per series"
    if merge > 1 and isinstance(budget, int):
        points = (f"{-(-budget // merge)} points per series (timeline.json's {budget} time buckets, {merge} to a "
                  f"point: the page's {len(nodes)} nodes share one budget of points)")
    section.add(Text(
        f"Utilization of every node over the job (times in UTC), in at most {points}: a line "
        "is the bucket mean, its shaded band the bucket's minimum to maximum, so short spikes stay visible. GPU "
        "lines are the mean over the node's GPUs, their band spans every GPU; each GPU and core has a heatmap row "
        "one click below. Drag on any time chart to zoom: all of them follow; double-click or \u201cReset time "
        "range\u201d restores the whole job." + (f" {once}" if once else "")))  # said once when all nodes agree
    for node, data in nodes.items():
        t, series = data.t, data.series
        if not t:
            continue
        section.add(Heading(f"Node {node}", 3))
        per_point = per_node[node]
        if per_point and not same:
            section.add(Text(per_point))
        panels = []
        gpu = gpu_panel(series)
        if gpu:
            panels.append(Chart(f"timeline-gpu-{slug(node)}",
                                charts.time_lines(t, gpu, f"GPUs of {node}", "", y_range=[0, 100],
                                                  tick_suffix=" %", merge=merged[node]),
                                no_js(f"GPU utilization and memory on {node}", picture=True)))
        cpu = _lines(series, CPU_SERIES)
        if cpu:
            panels.append(Chart(f"timeline-util-{slug(node)}",
                                charts.time_lines(t, cpu, f"CPU, memory and I/O wait of {node}", "",
                                                  y_range=[0, 100], tick_suffix=" %", merge=merged[node]),
                                no_js(f"CPU, memory and I/O wait on {node}", picture=True)))
        net = _lines(series, NETWORK_SERIES)
        if net:
            panels.append(Chart(f"timeline-net-{slug(node)}",
                                charts.time_lines(t, net, f"Network of {node}", "", tick_suffix="B/s",
                                                  merge=merged[node]),
                                no_js(f"Network on {node}", picture=True)))
        heat, names = [], []
        for key, rows, label in (("gpu_heatmap", data.gpu_heatmap, "each GPU"),
                                 ("cpu_heatmap", data.cpu_heatmap, "each CPU core")):
            if rows.rows and rows.mean:
                names.append(label)
                heat.append(Chart(f"timeline-{key}-{slug(node)}",
                                  charts.heatmap(t, rows.rows, rows.mean, f"{label[0].upper()}{label[1:]} of {node} (%)",
                                                 columns=-(-charts.HEATMAP_COLUMNS // merge)),
                                  no_js(f"{label[0].upper()}{label[1:]} of {node} over time")))
        if panels:  # side by side while they fit
            section.add(ChartRow(panels) if len(panels) > 1 else panels[0])
        if heat:  # the per-device detail behind the panels' means and bands: one click away
            section.add(Details(f"Utilization of {' and '.join(names)} of {node}", chart_rows(heat)))
    lanes = {f"{worker} {kind}": spans for worker, kinds in timeline.phases.items() for kind, spans in kinds.items()}
    if lanes:
        section.add(Heading("Framework phases", 3))
        section.add(Text("Steps and data loading per worker on the same time axis: gaps in a training lane are "
                         "time spent outside steps."))
        figure = charts.intervals(lanes, "Framework phases over time")
        listed = outlier_steps(outputs)
        marked = mark_outliers(figure, lanes, listed)
        if marked:
            section.add(Text(f"A red \u00d7 marks each of the {marked} outlier steps on its worker's training lane "
                             + (f"({per_worker(listed)}; " if marked == len(listed) else "(")
                             + "listed in Step duration analysis)."))
        section.add(Chart("timeline-phases", figure, "Framework phases over time, pictured below: the interactive "
                          "chart needs JavaScript. The step statistics and the outlier steps are in Step duration "
                          "analysis."))
    _align(section)
    section.data = {"nodes": sorted(nodes), "buckets_per_series": budget}
    return section


# The page's budget of points (issue 32): up to this many nodes, every series is drawn with all of
# timeline.json's buckets (600) and heatmaps with charts.HEATMAP_COLUMNS (200); a page with more nodes
# merges buckets ceil(nodes / FULL_DETAIL_NODES) at a time (lines) and has that many times fewer heatmap
# columns, so its node charts weigh about what 16 nodes' do; at most MAX_MERGE at a time (100 points a line).
FULL_DETAIL_NODES = 16
MAX_MERGE = 6


def page_merge(nodes: int) -> int:
    """How many of timeline.json's buckets make one point of a line on a page of ``nodes`` nodes."""
    return max(1, min(MAX_MERGE, -(-nodes // FULL_DETAIL_NODES)))


def merged_by(t: list, merge: int) -> int:
    """The merge a node's lines get: ``merge`` where its buckets lie on one regular grid (charts.time_lines
    merges only those), else 1."""
    instants = [None if number(v) is None else number(v) * 1000.0 for v in t]
    return merge if merge > 1 and len(t) > merge and charts.regular_grid(instants) else 1


def samples_per_point(node: TimelineNode, merge: int = 1) -> str:
    """What one point of the node's charts stands for: its bucket's length (``merge`` buckets' on a page
    of many nodes) and, where the sampling interval is known (timelines our engine wrote since it records
    it), about how many samples."""
    bucket, interval = node.bucket_s, node.interval_s
    if not bucket or bucket <= 0:
        return ""
    bucket *= merge
    text = f"Each point of these charts summarises {_seconds(bucket)}"
    if interval and interval > 0:
        n = max(1, round(bucket / interval))
        text += f": about {n:,} sample{'s' if n != 1 else ''}, one every {_seconds(interval)}" if n > 1 else \
            f": one sample (sampled every {_seconds(interval)})"
    return text + "."


def _seconds(value: float) -> str:
    return f"{value:.3g} s" if value < 120 else f"{value / 60:.3g} min"


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
    figures = [chart.figure for chart in section.charts()]
    xs = [x for f in figures for trace in f["data"] for x in charts.x_values(trace) if isinstance(x, (int, float))]
    if not xs:
        return
    # Charts in the same grid (the panels of every node, the heatmaps of every node) share their
    # margins, so an instant sits at the same place in each column; every chart shares the range.
    start, end = min(xs) / 1000.0, max(xs) / 1000.0
    heatmaps = [f for f in figures if any(t.get("type") == "heatmap" for t in f["data"])]
    phases = [chart.figure for chart in section.charts() if chart.id == "timeline-phases"]
    lines = [f for f in figures if not any(f is g for g in heatmaps + phases)]
    charts.share_time_axis(lines, start, end, ["600MB/s"])
    charts.share_time_axis(heatmaps, start, end,
                           [y for f in heatmaps for trace in f["data"] for y in trace.get("y", [])])
    if phases:
        lanes = [y for f in phases for trace in f["data"] for y in trace.get("y", []) if isinstance(y, str)]
        charts.share_time_axis(phases, start, end, lanes)
