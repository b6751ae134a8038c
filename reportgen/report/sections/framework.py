"""Framework metrics summary: train/eval vs others, forward/backward, CPU/GPU operators, Horovod."""

from __future__ import annotations

from reportgen.report import charts
from reportgen.report.model import Chart, ChartRow, Heading, Section, Text
from reportgen.report.trace_facts import trace_facts
from reportgen.report.util import int_pct, numeric_items, slug
from reportgen.rule_outputs import RuleOutputs

NO_JS = "Pie chart (needs JavaScript); the percentages are given in the text."


def _max_item(values: dict) -> tuple[str, float]:
    key = max(values, key=values.get)
    return key, values[key]


def framework_blocks(details: dict, prefix: str, *, where: str = "training time") -> list:
    """Texts and pies for the framework-metric breakdowns a rule output carries.

    Used by the summary (whole job) and by the rules that correlate framework events with
    their findings (step outliers, CPU/I/O bottlenecks).
    """
    blocks, row1, row2 = [], [], []
    phase = numeric_items(details.get("phase"))
    if phase and sum(phase.values()) > 0:
        text = ("The share of time spent in the TRAIN and EVAL phases versus 'others' (time between "
                "steps, after one step finished and before the next one started). Most time should "
                "be spent in the training and evaluation steps.")
        others = phase.get("others")
        if others is not None and others > 25:
            text += (f" A large share, {others:.2f} %, was spent in 'others': check what happens "
                     "between steps (data loading, logging, checkpoints, synchronization).")
            tone = "finding"
        else:
            tone = "plain"
        blocks.append(Text(text, tone=tone))
        row1.append(Chart(f"{prefix}-phase", charts.pie(phase, "TRAIN/EVAL phases and others (%)"), NO_JS))
    fwd = numeric_items(details.get("forward_backward"))
    if fwd and sum(fwd.values()) > 0:
        event, perc = _max_item(fwd)
        if perc > 70:
            blocks.append(Text(f"{int_pct(perc)} % of the forward/backward time was spent in the "
                               f"{event}: the two passes differ strongly, which may be expected "
                               "(backward is usually longer) or point at an inefficient layer.", tone="finding"))
        else:
            blocks.append(Text(f"The {event} took the larger share of forward/backward time: {int_pct(perc)} %."))
        row1.append(Chart(f"{prefix}-fwdbwd", charts.pie(fwd, "Forward vs backward pass (%)"), NO_JS))
    ratio = numeric_items(details.get("ratio"))
    if ratio and sum(ratio.values()) > 0:
        key, value = _max_item(ratio)
        blocks.append(Text(f"Breakdown of {where} between CPU and GPU operators: {int_pct(value)} % "
                           f"was spent in \u201c{key}\u201d."))
        row2.append(Chart(f"{prefix}-ratio", charts.pie(ratio, "CPU vs GPU operators (%)"), NO_JS))
    general = numeric_items(details.get("general"))
    if general and sum(general.values()) > 0:
        key, value = _max_item(general)
        blocks.append(Text(f"Among general framework operations, \u201c{key}\u201d took the largest share: {value:.2f} %."))
        row2.append(Chart(f"{prefix}-general", charts.pie(general, "General framework operations (%)"), NO_JS))
    for row in (row1, row2):
        if row:
            blocks.append(ChartRow(row))
    horovod = numeric_items(details.get("horovod"))
    if horovod and sum(horovod.values()) > 0:
        key, value = _max_item(horovod)
        blocks.append(Heading("Horovod metrics", 4))
        blocks.append(Text(f"The most expensive Horovod operation was \u201c{key}\u201d with {int_pct(value)} %."))
        blocks.append(Chart(f"{prefix}-horovod", charts.pie(horovod, "Horovod operations (%)"), NO_JS))
    return blocks


def build(outputs: RuleOutputs) -> Section:
    section = Section("framework-metrics-summary", "Framework metrics summary")
    rule = outputs.get("OverallFrameworkMetrics")
    if rule is None:
        return section.missing("No framework metrics output (OverallFrameworkMetrics) was found.")
    blocks = framework_blocks(rule.details, "fw")
    facts = trace_facts(outputs)
    if not blocks and facts.any:
        return section.missing(
            "SageMaker Debugger's framework metrics were not recorded; the PyTorch profiler traces hold "
            f"{facts.steps} profiled step(s) and {facts.cpu_ops} CPU operator calls ({facts.pointer()}).")
    if not blocks:
        return section.missing("No framework metrics were recorded for this job (framework profiling was off "
                               "or produced no events).")
    section.add(*blocks)
    section.data = {key: numeric_items(rule.details.get(key))
                    for key in ("phase", "forward_backward", "ratio", "general", "horovod")
                    if numeric_items(rule.details.get(key))}
    return section


__all__ = ["build", "framework_blocks", "slug"]
