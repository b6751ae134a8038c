"""Step duration analysis (StepOutlier): per-node statistics, histograms, correlated metrics."""

from __future__ import annotations

from reportgen.report import charts
from reportgen.report.model import Chart, Heading, Section, Table, Text
from reportgen.report.outlier_steps import outlier_steps, outlier_table
from reportgen.report.sections.framework import framework_blocks
from reportgen.report.trace_facts import steps_sentence, trace_facts
from reportgen.report.util import as_dict, number, slug
from reportgen.rule_outputs import RuleOutputs

STAT_KEYS = ("mean", "max", "p99", "p95", "p50", "min")


def build(outputs: RuleOutputs) -> Section:
    section = Section("step-duration-analysis", "Step duration analysis", level=3)
    rule = outputs.get("StepOutlier")
    if rule is None:
        return section.missing("No StepOutlier output was found.")
    stddev = rule.param("stddev", 3)
    mode = rule.param("mode", None)
    mode = "" if mode in (None, "None", "") else f" Mode: {mode}."
    n_outliers = rule.param("n_outliers", 10)
    section.add(Text(
        f"The StepOutlier rule measures step durations and flags a step as an outlier when it is longer "
        f"than the mean plus {stddev} standard deviations.{mode} The rule fires when more than "
        f"{n_outliers} outliers are found. It analysed {rule.datapoints} datapoints and fired "
        f"{rule.triggered} times.", tone="finding" if rule.triggered else "plain"))
    details = as_dict(rule.details)
    per_node = as_dict(details.get("step_details"))
    if not per_node:
        facts = trace_facts(outputs)
        section.missing(steps_sentence(facts) if facts.steps else "No step information was profiled from this "
                        "training job.")
        section.data = {"datapoints": rule.datapoints, "triggered": rule.triggered, "nodes": {}}
        return section
    nodes_data, hist = {}, {}
    for node, info in per_node.items():
        info = as_dict(info)
        stats = {k: number(as_dict(info.get("step_stats")).get(k)) for k in STAT_KEYS}
        node = str(node)
        n_out = info.get("number_of_outliers", 0)
        std = number(info.get("stddev"), 0.0)
        # PyTorch profiler steps last milliseconds: shown in ms (SageMaker's own tables keep seconds).
        in_ms = info.get("phase") == "ProfilerStep"
        unit, scale = ("ms", 1000.0) if in_ms else ("s", 1.0)
        where = "rank" if in_ms and node.startswith("rank-") else "node"
        name = node[len("rank-"):] if where == "rank" else node
        section.add(Heading(f"Step durations on {where} {name}", 4))
        mean = stats["mean"]
        section.add(Text(
            f"Steps of phase {info.get('phase', 'unknown')} on {where} {name}: the average step took "
            f"{mean if mean is None else f'{mean * scale:.2f}'} {unit}. {n_out} steps were outliers (longer than "
            f"the mean plus {stddev} times the standard deviation of {std * scale:.2f} {unit})."))
        section.add(Table(f"step-durations-{slug(node)}", ["", *STAT_KEYS],
                          [[f"Step Durations in [{unit}]",
                            *[None if stats[k] is None else stats[k] * scale for k in STAT_KEYS]]],
                          ["text"] + ["num2"] * len(STAT_KEYS), row_header=True))
        probs, edges = info.get("probs"), info.get("binedges")
        if isinstance(probs, list) and isinstance(edges, list):
            hist[node] = (probs, edges)
        nodes_data[node] = {"phase": info.get("phase"), "stats": stats, "number_of_outliers": n_out,
                            "stddev": std, "outlier_steps": info.get("step_numbers", [])}
    if hist:
        section.add(Text("Histogram of step durations per node, without the outliers; click a legend "
                         "entry to hide or show a node."))
        section.add(Chart("step-durations-hist", charts.histograms(hist, "Step durations", "Step duration in [s]"),
                          "Histogram (needs JavaScript); the statistics are in the tables above."))
    listed = outlier_steps(outputs)
    if listed:
        section.add(Heading("Outlier steps", 4))
        section.add(Text("Each outlier step with its duration against the median step of its node or rank; they "
                         "are marked with a red × on the framework phases in Node utilization over time."))
        section.add(outlier_table(listed))
        for o in listed:
            nodes_data.get(o["worker"], {}).setdefault("outliers", []).append(
                {k: o[k] for k in ("step", "start_s", "duration_s", "median_s")})
    if rule.triggered:
        extra = framework_blocks(details, "steps", where="the outlier steps")
        if extra:
            section.add(Text("What the framework was doing during the outlier steps:"))
            section.add(*extra)
    section.data = {"datapoints": rule.datapoints, "triggered": rule.triggered, "nodes": nodes_data}
    return section
