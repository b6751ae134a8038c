"""CPU and I/O bottlenecks: moments with the GPU nearly idle while cores are busy or waiting."""

from __future__ import annotations

from reportgen.report import charts
from reportgen.formatting import pct1
from reportgen.report.model import Chart, Fallback, Section, Text
from reportgen.report.sections.framework import refer_back
from reportgen.report.util import as_dict, number
from reportgen.rule_outputs import BottleneckDetails, RuleOutputs
from reportgen.rulebook import RuleName
from reportgen.section_ids import SectionId


def _build(outputs: RuleOutputs, rule_name: str, kind: str) -> Section:
    cpu = kind == "CPU"
    section = Section(SectionId.CPU_BOTTLENECKS if cpu else SectionId.IO_BOTTLENECKS, f"{kind} bottlenecks", level=3)
    rule = outputs.get(rule_name)
    if rule is None:
        return section.missing(f"No {rule_name} output was found.")
    threshold = rule.param("threshold", 50)
    gpu_thr = rule.param("gpu_threshold", 10)
    busy_thr = rule.param("cpu_threshold", 90) if cpu else rule.param("io_threshold", 50)
    condition = (f"CPU utilization was above {busy_thr} %" if cpu
                 else f"I/O wait was above {busy_thr} %")
    details = as_dict(rule.details)
    view = BottleneckDetails.of(details)
    bottlenecks = len(view.moments)
    count = rule.violations
    perc = int(count / rule.datapoints * 100) if rule.datapoints and count else 0
    word = "below" if perc < (number(threshold) or 0) else "above"
    section.add(Text(
        f"The {rule_name} rule counted the moments when {condition} on a core while GPU utilization was "
        f"below {gpu_thr} %. The first {rule.param('patience', 1000)} datapoints are skipped. It found "
        f"{count} {kind} bottlenecks, {perc} % of all datapoints, {word} the threshold of {threshold} %. "
        f"It analysed {rule.datapoints} datapoints and fired {rule.triggered} times.",
        tone="finding" if rule.triggered else "plain"))
    low_gpu = number(view.low_gpu_utilization)
    if rule.triggered and low_gpu is not None and rule.datapoints:
        slices = {
            "GPU usage above threshold": max(rule.datapoints - low_gpu, 0),
            "GPU usage below threshold, no bottleneck": max(low_gpu - bottlenecks, 0),
            f"Low GPU usage due to {kind} bottlenecks": bottlenecks,
        }
        section.add(Text(
            f"{int(low_gpu)} of {rule.datapoints} datapoints had GPU utilization below {gpu_thr} %; "
            f"{bottlenecks} of them ({bottlenecks / rule.datapoints * 100:.2f} % of all datapoints) "
            f"coincided with a {kind} bottleneck.", tone="finding"))
        shares = {label: count / rule.datapoints * 100 for label, count in slices.items()}
        section.add(Chart(f"{kind.lower()}-bottleneck-share",
                          charts.share_bar(shares, f"Datapoints by GPU usage and {kind} bottleneck (%)"),
                          "Bar chart (needs JavaScript); its shares:",
                          numbers=Fallback(["", "datapoints", "share"],
                                           [[label, int(count), pct1(shares[label])] for label, count in slices.items()])))
        section.add(*refer_back(details, f"the {kind} bottleneck moments"))
    section.data = {"triggered": rule.triggered, "violations": count, "datapoints": rule.datapoints,
                    "percent_of_datapoints": perc, "low_gpu_utilization": low_gpu}
    return section


def build_cpu(outputs: RuleOutputs) -> Section:
    return _build(outputs, RuleName.CPU_BOTTLENECK, "CPU")


def build_io(outputs: RuleOutputs) -> Section:
    return _build(outputs, RuleName.IO_BOTTLENECK, "I/O")
