"""Step durations of A and B per node, their difference and overlaid histograms (and the PyTorch traces' steps)."""

from __future__ import annotations

from reportgen.compare import traces, work
from reportgen.compare.efficiency import efficiency_blocks
from reportgen.compare.common import delta, signed_cell
from reportgen.compare.side import Side
from reportgen.report import charts
from reportgen.report.model import Chart, Section, Table, Text
from reportgen.report.util import as_dict, number
from reportgen.report.views import StepNode, step_nodes_of
from reportgen.rulebook import RuleName
from reportgen.section_ids import SectionId


def _step_summary(nodes: list[StepNode]) -> dict:
    """Mean over nodes of each step statistic (a single node's own statistics)."""
    out = {}
    for key in ("mean", "max", "p99", "p95", "p50", "min"):
        values = [number(n.stat(key)) for n in nodes]
        values = [v for v in values if v is not None]
        out[key] = sum(values) / len(values) if values else None
    return out


def _histogram(side: Side) -> dict:
    rule = side.outputs.get(RuleName.STEP_OUTLIER)
    series = {}
    for node, info in as_dict(as_dict(rule.details).get("step_details") if rule else {}).items():
        probs, edges = as_dict(info).get("probs"), as_dict(info).get("binedges")
        if isinstance(probs, list) and isinstance(edges, list) and probs:
            total = sum(p for p in probs if number(p) is not None) or 1
            series[f"{side.label}: {node}"] = ([(number(p, 0.0) / total) * 100 for p in probs], edges)
    return series


def build(a: Side, b: Side) -> Section:
    section = Section("step-durations", "Step durations")
    na = as_dict(a.data(SectionId.STEP_DURATION_ANALYSIS).get("nodes"))  # as written, for compare.json
    nb = as_dict(b.data(SectionId.STEP_DURATION_ANALYSIS).get("nodes"))
    va, vb = (step_nodes_of(side.data(SectionId.STEP_DURATION_ANALYSIS)) for side in (a, b))
    for side, nodes in ((a, na), (b, nb)):
        if not nodes:
            section.add(Text(f"{side.label} has no step durations (no StepOutlier output or no steps profiled).",
                             tone="missing"))
    keys = ("mean", "p50", "p95", "p99", "max")
    # PyTorch profiler steps (phase ProfilerStep) last milliseconds: shown in ms (compare.json keeps seconds).
    nodes_all = [*va, *vb]
    in_ms = bool(nodes_all) and all(node.phase == "ProfilerStep" for node in nodes_all)
    scale, unit = (1000.0, "milliseconds") if in_ms else (1.0, "seconds")

    def shown(value):
        value = number(value)
        return None if value is None else value * scale

    rows = []
    for side, nodes in ((a, va), (b, vb)):
        for node in nodes:
            rows.append([side.label, node.node, *[shown(node.stat(k)) for k in keys], node.outliers])
    sa, sb = _step_summary(va), _step_summary(vb)
    if na and nb:
        d = {k: delta(sa[k], sb[k]) for k in keys}
        rows.append(["Δ (B − A)", "mean over nodes" if len(va) > 1 or len(vb) > 1 else "",
                     *[signed_cell(shown(d[k]), 2 if in_ms else 4) for k in keys], None])
    if rows:
        section.add(Text(f"Step durations in {unit} per node, as each run's StepOutlier rule measured them."))
        section.add(Table("step-stats", ["Run", "Node", *keys, "Outliers"], rows,
                          ["text", "text", *["num2"] * len(keys), "int"]))
        series = {**_histogram(a), **_histogram(b)}
        if series:
            section.add(Text("Distributions of step durations overlaid (outliers excluded, as in each report), "
                             "as a share of each node's steps so runs of different lengths compare."))
            section.add(Chart("step-hist", charts.histograms(series, "Step durations, A vs B", "Step duration in [s]",
                                                             "Share of steps (%)"),
                              "Histogram (needs JavaScript); the statistics are in the table above."))
    else:
        section.data["available"] = False
    wa, wb = a.work(), b.work()
    trace_blocks, trace_data = traces.steps_blocks(a.traces(), b.traces(),
                                                   a.summary().job_duration_s,
                                                   b.summary().job_duration_s,
                                                   (wa, wb) if wa and wb and work.differs(wa, wb) else None)
    if trace_blocks:
        section.add(*trace_blocks)
        section.data.pop("available", None)
    section.data["traces"] = trace_data or None
    use_blocks, use_data = efficiency_blocks(a.efficiency(), b.efficiency())
    if use_blocks:
        section.add(*use_blocks)
        section.data.pop("available", None)
    section.data["efficiency"] = use_data or None
    section.data.update({"a": {"nodes": na, "summary": sa}, "b": {"nodes": nb, "summary": sb},
                         "delta": {k: delta(sa.get(k), sb.get(k)) for k in sa} if na and nb else None})
    return section
