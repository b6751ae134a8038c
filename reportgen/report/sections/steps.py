"""Step duration analysis (StepOutlier): per-node statistics, histograms, correlated metrics."""

from __future__ import annotations

from typing import Any

from reportgen.report import charts
from reportgen.report.model import Chart, Columns, Details, Heading, Section, Table, Text, column_rows
from reportgen.report.outlier_steps import outlier_steps, outlier_table, per_worker
from reportgen.report.sections.framework import refer_back
from reportgen.report.trace_facts import steps_sentence, trace_facts
from reportgen.report.util import number, slug
from reportgen.rule_outputs import NO_PHASE, STEP_STATS, RuleOutputs, StepDetails
from reportgen.rulebook import RuleName
from reportgen.section_ids import SectionId

STAT_KEYS = STEP_STATS


MAX_BINS = 1000  # a histogram with more bins than this is left out of report.json (StepOutlier writes 100)


def step_histogram(probs, edges) -> dict | None:
    """StepOutlier's histogram of step durations (``probs`` are step counts per bin, ``binedges`` in
    seconds) as report.json keeps it: ``{"counts", "edges"}``, or None when it is not a usable histogram."""
    if not (isinstance(probs, list) and isinstance(edges, list) and 0 < len(probs) <= MAX_BINS
            and len(edges) == len(probs) + 1):
        return None
    counts, bounds = [number(c) for c in probs], [number(e) for e in edges]
    if any(c is None or c < 0 for c in counts) or any(e is None for e in bounds):
        return None
    if any(hi < lo for lo, hi in zip(bounds, bounds[1:])) or not sum(counts):
        return None
    return {"counts": [int(c) if c.is_integer() else c for c in counts], "edges": bounds}


def build(outputs: RuleOutputs) -> Section:
    section = Section(SectionId.STEP_DURATION_ANALYSIS, "Step duration analysis", level=3)
    rule = outputs.get(RuleName.STEP_OUTLIER)
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
        f"{rule.triggered} times (a count of its checks, not of steps: the outlier steps are counted per node "
        "below).", tone="finding" if rule.triggered else "plain"))
    per_node = StepDetails.of(rule.details).workers
    if not per_node:
        facts = trace_facts(outputs)
        section.missing(steps_sentence(facts) if facts.steps else "No step information was profiled from this "
                        "training job.")
        section.data = {"datapoints": rule.datapoints, "triggered": rule.triggered, "nodes": {}}
        return section
    nodes_data: dict[str, dict[str, Any]] = {}  # report.json's nodes
    hist, per_node_blocks = {}, []
    for node, info in per_node.items():
        stats = {k: info.stats.stat(k) for k in STAT_KEYS}
        n_out = info.outliers_as_written
        std = 0.0 if info.stddev is None else info.stddev
        phase = None if info.phase is NO_PHASE else info.phase
        # PyTorch profiler steps last milliseconds: shown in ms (SageMaker's own tables keep seconds).
        in_ms = phase == "ProfilerStep"
        unit, scale = ("ms", 1000.0) if in_ms else ("s", 1.0)
        where = "rank" if in_ms and node.startswith("rank-") else "node"
        name = node[len("rank-"):] if where == "rank" else node
        mean = stats["mean"]
        per_node_blocks.append([
            Heading(f"Step durations on {where} {name}", 4),
            Text(f"Steps of phase {'unknown' if info.phase is NO_PHASE else phase} on {where} {name}: the average step took "
                 f"{mean if mean is None else f'{mean * scale:.2f}'} {unit}. {n_out} steps were outliers (longer "
                 f"than the mean plus {stddev} times the standard deviation of {std * scale:.2f} {unit})."),
            Table(f"step-durations-{slug(node)}", ["", *STAT_KEYS],
                  [[f"Step Durations in [{unit}]", *[None if stats[k] is None else stats[k] * scale for k in STAT_KEYS]]],
                  ["text"] + ["num2"] * len(STAT_KEYS), row_header=True)])
        probs, edges = info.probs, info.binedges
        if isinstance(probs, list) and isinstance(edges, list):
            hist[node] = (probs, edges)
        nodes_data[node] = {"phase": phase, "stats": stats, "number_of_outliers": n_out,
                            "stddev": std, "outlier_steps": info.step_numbers}
        counts = step_histogram(probs, edges)
        if counts is not None:  # the step-time distribution, for the regression gate (compare, check --base)
            nodes_data[node]["histogram"] = counts
    histogram = []
    if hist:
        text = "Histogram of step durations per node, without the outliers."
        clip = max((charts.clip_edge(*h) or float("inf") for h in hist.values()), default=None)
        clip = None if clip in (None, float("inf")) else clip
        if clip is not None:
            beyond = sum(c for counts, edges in hist.values() for c, e in zip(counts, edges[1:]) if e > clip)
            text += (f" The axis ends at {clip:.3g} s so the bulk is visible: {beyond:.3g} of the plotted share "
                     "lies beyond it (hover or zoom out to see it).")
        histogram = [Text(text), Text("Click a legend entry to hide or show a node.", needs_js=True),
                     Chart("step-durations-hist",
                                       charts.histograms(hist, "Step durations", "Step duration in [s]", clip_at=clip),
                                       "Histogram (needs JavaScript); the statistics are in the tables.")]
    if histogram and per_node_blocks:  # the nodes' statistics beside the histogram of their steps
        section.add(Columns([[b for group in per_node_blocks for b in group], histogram]))
    else:
        section.add(*column_rows(per_node_blocks), *histogram)
    listed = outlier_steps(outputs)
    if listed:  # a long list: one click away, its summary line says how many
        section.add(Details(f"The {len(listed)} outlier steps ({per_worker(listed)}), each against the median step "
                            "of its node or rank", [
            Text("They are marked with a red \u00d7 on the framework phases in Node utilization over time."),
            outlier_table(listed)]))
        for o in listed:
            nodes_data.get(o["worker"], {}).setdefault("outliers", []).append(
                {k: o[k] for k in ("step", "start_s", "duration_s", "median_s")})
    if rule.triggered:
        section.add(*refer_back(rule.details, "the outlier steps"))
    section.data = {"datapoints": rule.datapoints, "triggered": rule.triggered, "nodes": nodes_data}
    return section
