"""The comparison of two runs, as the same renderer-neutral model the single report uses.

Each side is built exactly like its own report (``load_rule_outputs`` + ``build_report``); the
comparison only reads those sections' ``data``, so its numbers are each side's own report's numbers.
Deltas are always B − A.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reportgen.compare import traces
from reportgen.cost import PriceTable, RunCost, compare_costs, load_prices, make_run_cost, price_note
from reportgen.report import charts
from reportgen.report.build import build_report
from reportgen.report.model import Chart, Heading, Report, Section, Table, Text
from reportgen.report.util import as_dict, number
from reportgen.rule_outputs import RuleOutputs, load_rule_outputs

STATS = ("max", "p99", "p95", "p90", "p50", "min")
SHOWN_STATS = ("p50", "p95", "max")
TOP_OPERATORS = 10
SAME_TIME_PCT = 5.0  # durations within this many % count as "about the same"
SAME_UTIL_POINTS = 5.0  # utilization percentiles within this many points count as "about the same"

# Section ids, in the page's order (the notebook has one cell per id).
SECTION_IDS = ("verdict", "cost", "duration-phases", "utilization", "step-durations", "framework",
               "operators", "rules", "data-quality")


@dataclass
class Side:
    """One run: its own report (built as ``generate`` builds it) plus what is known about its instances."""

    label: str  # "A" or "B"
    name: str
    source: str
    description: str
    report: Report
    outputs: RuleOutputs
    instance_type: str | None = None
    instance_count: int | None = None
    instance_from: str = ""
    region: str | None = None
    notes: list[str] = field(default_factory=list)

    def data(self, section_id: str) -> dict:
        try:
            return self.report.section(section_id).data
        except KeyError:
            return {}

    def available(self, section_id: str) -> bool:
        data = self.data(section_id)
        return bool(data) and data.get("available") is not False

    def traces(self) -> dict | None:
        """This run's PyTorch profiler traces summarised (``compare.traces``), None without steps."""
        return traces.summarize(self.outputs.kineto, self.data("training-job-summary").get("job_duration_s"))

    def meta(self) -> dict:
        return {"label": self.label, "name": self.name, "source": self.source, "description": self.description,
                "instance_type": self.instance_type, "instance_count": self.instance_count,
                "instance_from": self.instance_from or None, "region": self.region}


def load_side(label: str, rule_dir: str | Path, *, name: str = "", source: str = "", description: str = "",
              instance_type: str | None = None, instance_count: int | None = None, instance_from: str = "",
              region: str | None = None, notes: list[str] | None = None) -> Side:
    outputs = load_rule_outputs(Path(rule_dir))
    report = build_report(outputs, job_name=name, extra_notes=notes)
    return Side(label, name or Path(rule_dir).name, source or str(rule_dir), description, report, outputs,
                instance_type or None, int(instance_count) if instance_count else None, instance_from,
                region or None, list(notes or []))


# ------------------------------------------------------------------------------------------ helpers


def delta(a, b):
    a, b = number(a), number(b)
    return None if a is None or b is None else b - a


def signed(value, digits: int = 2) -> str | None:
    """A delta as printed: +1.50 / −1.50 / 0.00 (None stays empty)."""
    if value is None:
        return None
    text = f"{abs(value):.{digits}f}"
    if float(text) == 0:
        return text
    return ("+" if value > 0 else "\u2212") + text


def _grouped_bars(categories: list[str], series: dict[str, list], title: str, yaxis: str) -> dict:
    traces = [{"type": "bar", "name": charts.safe(name), "x": [charts.safe(c) for c in categories],
               "y": charts._finite(values), "marker": {"color": charts.PALETTE[(1 + 2 * i) % len(charts.PALETTE)]},
               "hovertemplate": "%{x}: %{y:.2f}<extra>" + charts.safe(name) + "</extra>"}
              for i, (name, values) in enumerate(series.items())]
    return {"data": traces, "layout": charts._layout(title, barmode="group", yaxis=charts._axis(yaxis))}


# ------------------------------------------------------------------------------------------ sections


def _cost(a: Side, b: Side, prices: PriceTable) -> tuple[Section, RunCost, RunCost, dict]:
    section = Section("cost", "Cost per run")
    ca = make_run_cost(a.data("training-job-summary").get("job_duration_s"), a.instance_type, a.instance_count,
                       a.region, prices, a.instance_from)
    cb = make_run_cost(b.data("training-job-summary").get("job_duration_s"), b.instance_type, b.instance_count,
                       b.region, prices, b.instance_from)
    saving = compare_costs(ca, cb)

    def money(run: RunCost):
        return f"${run.cost_rounded:.2f}" if run.cost is not None else "unknown"

    rows = []
    for label, run in (("A", ca), ("B", cb)):
        rows.append([label, run.instance_type or "unknown", run.instance_count, run.region,
                     f"${run.price_per_hour:.3f}" if run.price_per_hour is not None else "unknown",
                     run.duration_s, money(run), run.instance_from or ""])
    section.add(Text("Cost per run = job duration × instance count × hourly price ÷ 3600, from the profiled "
                     "job duration (not AWS's billed time, which also counts the instance start-up)."))
    section.add(Table("cost-table", ["Run", "Instance type", "Count", "Region", "Price per hour", "Duration (s)",
                                     "Cost per run", "Instance from"],
                      rows, ["text", "text", "int", "text", "num2", "int", "num2", "text"]))
    if saving["saving"] is not None:
        more = saving["saving"] < 0
        section.add(Text(
            f"B costs {money(cb)} per run against {money(ca)} for A: "
            + (f"{abs(saving['saving_pct_from_rounded']):.1f} % more"
               if more else f"a saving of ${saving['saving_rounded']:.2f} per run, "
                            f"{saving['saving_pct_from_rounded']:.1f} %")
            + f" (from the rounded costs; {abs(saving['saving_pct']):.1f} % from the unrounded ones).",
            tone="finding" if more else "ok"))
    else:
        for label, run in (("A", ca), ("B", cb)):
            if run.cost is None:
                section.add(Text(f"No cost for {label}: {run.missing()} (give --instance-{label.lower()} and "
                                 f"--count-{label.lower()}, or a price with --prices).", tone="missing"))
    section.add(Text(price_note(prices), tone="note"))
    section.data = {"a": ca.to_data(), "b": cb.to_data(), **saving, "prices": prices.provenance()}
    return section, ca, cb, saving


PHASES = (("Job duration", "job_duration_s", None), ("Initialization", "initialization_s", "initialization_pct"),
          ("Training loop", "training_loop_duration_s", "training_loop_pct"),
          ("Finalization", "finalization_s", "finalization_pct"))


def _phases(a: Side, b: Side) -> Section:
    section = Section("duration-phases", "Duration and phases")
    sa, sb = a.data("training-job-summary"), b.data("training-job-summary")
    for side, data in ((a, sa), (b, sb)):
        if not side.available("training-job-summary"):
            section.add(Text(f"{side.label} has no job start and end times (training job summary missing).",
                             tone="missing"))
        elif "training_loop_duration_s" not in data and side.traces():
            section.add(Text(f"{side.label}'s system metrics hold no step boundaries, so its phases are unknown; its "
                             f"PyTorch profiler traces hold {side.traces()['profiled_steps']:.0f} profiled steps per "
                             "rank (see Step durations).", tone="missing"))
        elif "training_loop_duration_s" not in data:
            section.add(Text(f"{side.label} has no step information, so its phases are unknown.", tone="missing"))
    rows, data_rows = [], []
    for title, key, pct in PHASES:
        va, vb = sa.get(key), sb.get(key)
        if va is None and vb is None:
            continue
        d = delta(va, vb)
        rel = d / va * 100 if d is not None and va else None
        rows.append([title, va, sa.get(pct) if pct else None, vb, sb.get(pct) if pct else None,
                     signed(d, 0), signed(rel, 1)])
        data_rows.append({"phase": key, "a_s": va, "b_s": vb, "delta_s": d, "delta_pct": rel,
                          "a_pct": sa.get(pct) if pct else None, "b_pct": sb.get(pct) if pct else None})
    if rows:
        section.add(Table("phases", ["Phase", "A (s)", "A (% of job)", "B (s)", "B (% of job)", "Δ (s)", "Δ (%)"],
                          rows, ["text", "int", "int", "int", "int", "num2", "num2"], row_header=True))
        names = [r[0] for r in rows]
        section.add(Chart("phases-chart", _grouped_bars(names, {f"A: {a.name}": [r[1] for r in rows],
                                                                 f"B: {b.name}": [r[3] for r in rows]},
                                                        "Duration of each phase (s)", "seconds"),
                          "Bar chart (needs JavaScript); the same numbers are in the table above."))
    else:
        section.data["available"] = False
    section.data.update({"rows": data_rows, "a": sa, "b": sb})
    return section


def _usage_index(side: Side) -> dict[tuple[str, str], dict]:
    rows = side.data("system-usage-statistics").get("rows") or []
    return {(r["metric"], r["node"]): r for r in rows}


def overall_usage(index: dict[tuple[str, str], dict]) -> dict[str, dict]:
    """Per metric over all nodes: max of the maxima, min of the minima, mean of the per-node percentiles.

    With one node this is that node's row. (The rule outputs carry per-node percentiles only, so a
    true all-nodes percentile cannot be computed; the mean is labelled as such.)
    """
    by_metric: dict[str, list[dict]] = {}
    for (metric, _node), row in index.items():
        by_metric.setdefault(metric, []).append(row)
    result = {}
    for metric, rows in by_metric.items():
        stats = {}
        for key in STATS:
            values = [number(r.get(key)) for r in rows if number(r.get(key)) is not None]
            if not values:
                continue
            stats[key] = max(values) if key == "max" else min(values) if key == "min" else sum(values) / len(values)
        result[metric] = {"unit": rows[0].get("unit"), "nodes": len(rows), **stats}
    return result


def _usage_rows(keys, ia: dict, ib: dict, with_node: bool) -> tuple[list, list]:
    rows, data = [], []
    for key in keys:
        ra, rb = ia.get(key) or {}, ib.get(key) or {}
        metric = key[0] if with_node else key
        unit = ra.get("unit") or rb.get("unit")
        cells = [metric] + ([key[1]] if with_node else []) + [unit]
        entry = {"metric": metric, "unit": unit, "a": {}, "b": {}, "delta": {}}
        if with_node:
            entry["node"] = key[1]
        for stat in STATS:
            entry["a"][stat], entry["b"][stat] = number(ra.get(stat)), number(rb.get(stat))
            entry["delta"][stat] = delta(ra.get(stat), rb.get(stat))
        for stat in SHOWN_STATS:
            cells += [entry["a"][stat], entry["b"][stat], signed(entry["delta"][stat])]
        rows.append(cells)
        data.append(entry)
    return rows, data


def _utilization(a: Side, b: Side) -> Section:
    section = Section("utilization", "Utilization: overall and per node")
    ia, ib = _usage_index(a), _usage_index(b)
    for side, index in ((a, ia), (b, ib)):
        if not index:
            section.add(Text(f"{side.label} has no system metrics (OverallSystemUsage output missing or empty).",
                             tone="missing"))
    oa, ob = overall_usage(ia), overall_usage(ib)
    for metric in ("GPU", "GPU memory"):
        for side, other, own in ((a, ob, oa), (b, oa, ob)):
            if other.get(metric) and own and metric not in own:
                section.add(Text(f"{side.label} has no {metric} data (a CPU-only instance, or {metric} metrics "
                                 f"were not recorded): {metric} cannot be compared.", tone="missing"))
    stat_columns = [f"{s} {x}" for x in SHOWN_STATS for s in ("A", "B", "Δ")]
    fmts = ["num2"] * len(stat_columns)
    metrics = list(dict.fromkeys(list(oa) + list(ob)))
    overall_rows, overall_data = _usage_rows(metrics, oa, ob, with_node=False)
    node_keys = list(dict.fromkeys(list(ia) + list(ib)))
    node_rows, node_data = _usage_rows(node_keys, ia, ib, with_node=True)
    if overall_rows:
        multi = max([o.get("nodes", 1) for o in list(oa.values()) + list(ob.values())] or [1]) > 1
        section.add(Text("Percentiles of each metric, A and B side by side, with the change Δ = B − A "
                         "(utilization in percentage points; network in bytes per second)."
                         + (" Over all nodes: the highest maximum, the mean of the per-node percentiles and the "
                            "lowest minimum." if multi else "")))
        section.add(Heading("All nodes", 4))
        section.add(Table("utilization-overall", ["Metric", "Unit", *stat_columns], overall_rows,
                          ["text", "text", *fmts], row_header=True))
        p95 = [m for m in metrics if oa.get(m, {}).get("unit", "percentage") == "percentage"
               and ob.get(m, {}).get("unit", "percentage") == "percentage"]
        section.add(Chart("utilization-p95-chart",
                          _grouped_bars(p95, {f"A: {a.name}": [oa.get(m, {}).get("p95") for m in p95],
                                              f"B: {b.name}": [ob.get(m, {}).get("p95") for m in p95]},
                                        "95th percentile of utilization, A vs B (%)", "%"),
                          "Bar chart (needs JavaScript); the same numbers are in the table above."))
        section.add(Heading("Per node", 4))
        section.add(Table("utilization-nodes", ["Metric", "Node", "Unit", *stat_columns], node_rows,
                          ["text", "text", "text", *fmts], row_header=True))
    else:
        section.data["available"] = False
    section.data.update({"overall": overall_data, "nodes": node_data})
    return section


def _step_summary(nodes: dict) -> dict:
    """Mean over nodes of each step statistic (a single node's own statistics)."""
    out = {}
    for key in ("mean", "max", "p99", "p95", "p50", "min"):
        values = [number(as_dict(n.get("stats")).get(key)) for n in nodes.values()]
        values = [v for v in values if v is not None]
        out[key] = sum(values) / len(values) if values else None
    return out


def _histogram(side: Side) -> dict:
    rule = side.outputs.get("StepOutlier")
    series = {}
    for node, info in as_dict(as_dict(rule.details).get("step_details") if rule else {}).items():
        probs, edges = as_dict(info).get("probs"), as_dict(info).get("binedges")
        if isinstance(probs, list) and isinstance(edges, list) and probs:
            total = sum(p for p in probs if number(p) is not None) or 1
            series[f"{side.label}: {node}"] = ([(number(p, 0.0) / total) * 100 for p in probs], edges)
    return series


def _steps(a: Side, b: Side) -> Section:
    section = Section("step-durations", "Step durations")
    na = as_dict(a.data("step-duration-analysis").get("nodes"))
    nb = as_dict(b.data("step-duration-analysis").get("nodes"))
    for side, nodes in ((a, na), (b, nb)):
        if not nodes:
            section.add(Text(f"{side.label} has no step durations (no StepOutlier output or no steps profiled).",
                             tone="missing"))
    keys = ("mean", "p50", "p95", "p99", "max")
    rows = []
    for side, nodes in ((a, na), (b, nb)):
        for node, info in nodes.items():
            stats = as_dict(info.get("stats"))
            rows.append([side.label, node, *[stats.get(k) for k in keys], info.get("number_of_outliers")])
    sa, sb = _step_summary(na), _step_summary(nb)
    if na and nb:
        d = {k: delta(sa[k], sb[k]) for k in keys}
        rows.append(["Δ (B − A)", "mean over nodes" if len(na) > 1 or len(nb) > 1 else "",
                     *[signed(d[k], 4) for k in keys], None])
    if rows:
        section.add(Text("Step durations in seconds per node, as each run's StepOutlier rule measured them."))
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
    trace_blocks, trace_data = traces.steps_blocks(a.traces(), b.traces(),
                                                   a.data("training-job-summary").get("job_duration_s"),
                                                   b.data("training-job-summary").get("job_duration_s"))
    if trace_blocks:
        section.add(*trace_blocks)
        section.data.pop("available", None)
    section.data["traces"] = trace_data or None
    section.data.update({"a": {"nodes": na, "summary": sa}, "b": {"nodes": nb, "summary": sb},
                         "delta": {k: delta(sa.get(k), sb.get(k)) for k in sa} if na and nb else None})
    return section


def _framework(a: Side, b: Side) -> Section:
    section = Section("framework", "Framework phases")
    fa, fb = a.data("framework-metrics-summary"), b.data("framework-metrics-summary")
    ok_a, ok_b = a.available("framework-metrics-summary"), b.available("framework-metrics-summary")
    for side, ok in ((a, ok_a), (b, ok_b)):
        if not ok:
            section.add(Text(f"{side.label} has no framework data (framework profiling was off or produced no "
                             "metrics): its training/evaluation phases and CPU/GPU split cannot be compared.",
                             tone="missing"))
    rows, data = [], []
    for group, title in (("phase", "Share of time"), ("ratio", "CPU vs GPU operators")):
        ga, gb = as_dict(fa.get(group)), as_dict(fb.get(group))
        for key in dict.fromkeys(list(ga) + list(gb)):
            va, vb = number(ga.get(key)), number(gb.get(key))
            rows.append([title, key, va, vb, signed(delta(va, vb))])
            data.append({"group": group, "key": key, "a_pct": va, "b_pct": vb, "delta": delta(va, vb)})
    if rows:
        section.add(Table("framework-table", ["", "Part", "A (%)", "B (%)", "Δ (points)"], rows,
                          ["text", "text", "num2", "num2", "num2"]))
    if not (ok_a or ok_b):
        section.data["available"] = False
    section.data.update({"rows": data, "a_available": ok_a, "b_available": ok_b})
    return section


def _operators(a: Side, b: Side) -> Section:
    section = Section("operators", "Top operators")
    data = {}
    trace_blocks, trace_data = traces.operators_blocks(a.traces(), b.traces())
    for kind in ("cpu", "gpu"):
        sid = f"{kind}-operators-overview"
        ra = (a.data(sid).get("rows") or [])[:TOP_OPERATORS]
        rb = (b.data(sid).get("rows") or [])[:TOP_OPERATORS]
        section.add(Heading(f"{kind.upper()} operators", 4))
        data[kind] = {"a": ra, "b": rb}
        for side, rows in ((a, ra), (b, rb)):
            if not rows and kind == "cpu" and (side.traces() or {}).get("op_ms_per_step"):
                section.add(Text(f"{side.label} has no SageMaker Debugger CPU operator data; its PyTorch profiler "
                                 "traces' CPU operators are compared below.", tone="note"))
            elif not rows:
                section.add(Text(f"{side.label} has no {kind.upper()} operator data (detailed framework profiling "
                                 "was off, or no operator took more than 2 % of the time).", tone="missing"))
        if kind == "cpu" and trace_blocks:
            section.add(*trace_blocks)
        if not (ra or rb):
            continue
        table_rows = []
        for i in range(max(len(ra), len(rb))):
            xa = ra[i] if i < len(ra) else {}
            xb = rb[i] if i < len(rb) else {}
            table_rows.append([i + 1, xa.get("operator"), xa.get("percentage"), xb.get("operator"),
                               xb.get("percentage")])
        section.add(Table(f"{kind}-operators-compare", ["Rank", "A operator", "A %", "B operator", "B %"],
                          table_rows, ["int", "text", "num2", "text", "num2"]))
    if not any(v["a"] or v["b"] for v in data.values()) and not trace_blocks:
        section.data["available"] = False
    section.data.update(data)
    section.data["traces"] = trace_data or None
    return section


def rule_status(ta, tb) -> str:
    if ta is None:
        return "new" if tb else "only in B"
    if tb is None:
        return "fixed" if ta else "only in A"
    if ta and tb:
        return "still firing"
    if ta:
        return "fixed"
    if tb:
        return "new"
    return "not firing"


def _rules(a: Side, b: Side) -> Section:
    section = Section("rules", "Rules fired in A and B")
    ra = {r["rule"]: r for r in a.data("rules-summary-section").get("rows") or []}
    rb = {r["rule"]: r for r in b.data("rules-summary-section").get("rows") or []}
    for side, rules in ((a, ra), (b, rb)):
        if not rules:
            section.add(Text(f"{side.label} has no rule outputs besides the usage summaries.", tone="missing"))
    rows, data = [], []
    for rule in dict.fromkeys(list(ra) + list(rb)):
        ta = ra[rule]["times_triggered"] if rule in ra else None
        tb = rb[rule]["times_triggered"] if rule in rb else None
        status = rule_status(ta, tb)
        rows.append([rule, ta, tb, status])
        data.append({"rule": rule, "a_times_triggered": ta, "b_times_triggered": tb, "status": status})
    order = {"still firing": 0, "new": 1, "fixed": 2, "only in A": 3, "only in B": 3, "not firing": 4}
    rows.sort(key=lambda r: order[r[3]])
    groups = {s: [d["rule"] for d in data if d["status"] == s] for s in ("fixed", "new", "still firing")}
    if rows:
        parts = [f"{len(groups['fixed'])} fixed", f"{len(groups['new'])} new",
                 f"{len(groups['still firing'])} still firing"]
        section.add(Text("Rules: " + ", ".join(parts) + "." + "".join(
            f" {s.capitalize()}: {', '.join(groups[s])}." for s in ("fixed", "new", "still firing") if groups[s]),
            tone="finding" if groups["new"] or groups["still firing"] else "ok"))
        section.add(Table("rules-compare", ["Rule", "A: times triggered", "B: times triggered", "Status"], rows,
                          ["text", "int", "int", "text"], row_header=True))
    else:
        section.data["available"] = False
    section.data.update({"rows": data, **{k.replace(" ", "_"): v for k, v in groups.items()}})
    return section


def _data_quality(a: Side, b: Side) -> Section:
    section = Section("data-quality", "Data quality")
    data = {}
    for side in (a, b):
        dq = side.data("data-quality")
        data[side.label.lower()] = {"problems": dq.get("problems", 0)}
        n = dq.get("problems", 0)
        section.add(Text(f"{side.label}: " + ("every input file was read completely." if not n else
                                               f"{n} problem(s) met while reading; see its own report."),
                         tone="ok" if not n else "note"))
    section.data = data
    return section


def _verdict(a: Side, b: Side, phases: Section, usage: Section, rules: Section, ca: RunCost, cb: RunCost,
             saving: dict) -> Section:
    section = Section("verdict", "Verdict")
    sentences, data = [], {}
    da = a.data("training-job-summary").get("job_duration_s")
    db = b.data("training-job-summary").get("job_duration_s")
    if da is not None and db is not None:
        rel = (db - da) / da * 100 if da else 0.0
        speed = "about as fast as" if abs(rel) <= SAME_TIME_PCT else "faster than" if rel < 0 else "slower than"
        data.update(duration_a_s=da, duration_b_s=db, duration_delta_s=db - da, duration_delta_pct=rel,
                    speed=speed.replace(" than", "").replace(" as", ""))
        sentences.append(f"B ran {speed} A: {db} s against {da} s ({signed(rel, 1)} %).")
    else:
        sentences.append("The durations cannot be compared: " + " and ".join(
            f"{s.label} has no job start and end times" for s, d in ((a, da), (b, db)) if d is None) + ".")
    ta, tb = a.traces(), b.traces()
    rate = traces.throughput(ta, tb, da, db)
    data["throughput"] = rate
    if rate["job_same_work_change_pct"] is not None and (ta or tb):
        cover = " and ".join(f"{100 * t['coverage']:.1f} % of {s.label}" for s, t in ((a, ta), (b, tb))
                             if t and t.get("coverage") is not None)
        sentences.append(
            f"For the same work, that is {signed(rate['job_same_work_change_pct'], 1)} % throughput (steps and "
            f"samples per second). The profiled steps cover only {cover}: in them B runs "
            f"{signed(rate['profiled_change_pct'], 1)} % steps per second, a sample, not the job's figure.")
        data["profiled_coverage"] = {"a": (ta or {}).get("coverage"), "b": (tb or {}).get("coverage")}
    overall = {o["metric"]: o for o in usage.data.get("overall", [])}
    util = {}
    for metric in ("GPU", "CPU"):
        o = overall.get(metric)
        if not o:
            continue
        pa, pb = o["a"].get("p95"), o["b"].get("p95")
        if pa is None or pb is None:
            missing = "A" if pa is None else "B"
            sentences.append(f"{metric} utilization cannot be compared: {missing} has no {metric} data.")
            continue
        d = pb - pa
        word = "about the same" if abs(d) < SAME_UTIL_POINTS else "better" if d > 0 else "worse"
        util[metric] = {"a_p95": pa, "b_p95": pb, "delta": d, "utilization": word}
        how = (f"stayed about the same ({pa:.0f} % → {pb:.0f} %)" if word == "about the same" else
               f"{'rose' if d > 0 else 'fell'} from {pa:.0f} % to {pb:.0f} % ({word} use of the {metric}s)")
        sentences.append(f"The 95th percentile of {metric} utilization {how}.")
    data["utilization_p95"] = util
    if saving.get("saving") is not None:
        if saving["saving"] >= 0:
            sentences.append(f"A run of B costs ${cb.cost_rounded:.2f} instead of ${ca.cost_rounded:.2f}: "
                             f"{saving['saving_pct_from_rounded']:.1f} % less (${saving['saving_rounded']:.2f} "
                             "saved per run).")
        else:
            sentences.append(f"A run of B costs ${cb.cost_rounded:.2f} instead of ${ca.cost_rounded:.2f}: "
                             f"{-saving['saving_pct_from_rounded']:.1f} % more.")
        data["saving_pct"] = saving["saving_pct"]
        data["saving_pct_from_rounded"] = saving["saving_pct_from_rounded"]
    else:
        why = "; ".join(f"for {s.label} {r.missing()}" for s, r in ((a, ca), (b, cb)) if r.cost is None)
        sentences.append(f"Cost not compared: {why}.")
    rd = rules.data
    if rd.get("rows"):
        sentences.append(f"Rules: {len(rd['fixed'])} fixed, {len(rd['new'])} new, "
                         f"{len(rd['still_firing'])} still firing.")
    good = (saving.get("saving") or 0) > 0 or any(u["utilization"] == "better" for u in util.values())
    bad = data.get("speed") == "slower" or any(u["utilization"] == "worse" for u in util.values())
    section.add(Text(" ".join(sentences), tone="ok" if good and not bad else "finding" if bad else "plain"))
    data["text"] = " ".join(sentences)
    section.data = data
    return section


def build_comparison(a: Side, b: Side, prices: PriceTable | None = None) -> Report:
    """The comparison page's sections (ids in ``SECTION_IDS``), each with its numbers in ``data``."""
    prices = prices or load_prices()
    cost, ca, cb, saving = _cost(a, b, prices)
    phases, usage, rules = _phases(a, b), _utilization(a, b), _rules(a, b)
    verdict = _verdict(a, b, phases, usage, rules, ca, cb, saving)
    sections = [verdict, cost, phases, usage, _steps(a, b), _framework(a, b), _operators(a, b), rules,
                _data_quality(a, b)]
    assert tuple(s.id for s in sections) == SECTION_IDS
    report = Report(job_name=f"{a.name} vs {b.name}", sections=sections, notes=a.notes + b.notes,
                    source=f"{a.source} vs {b.source}")
    return report
