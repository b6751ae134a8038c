"""Batch size (BatchSize): CPU, GPU and GPU memory all low at once."""

from __future__ import annotations

from reportgen.report import charts
from reportgen.report.model import Chart, Section, Text, chart_rows
from reportgen.report.sections.gpu import BOX_NOTE, box_numbers, last_triggered
from reportgen.report.util import slug
from reportgen.rule_outputs import RuleOutputs, gpus_of
from reportgen.rulebook import RuleName
from reportgen.section_ids import SectionId


def build(outputs: RuleOutputs) -> Section:
    section = Section(SectionId.BATCH_SIZE, "Batch size", level=3)
    rule = outputs.get(RuleName.BATCH_SIZE)
    if rule is None:
        return section.missing("No BatchSize output was found.")
    section.add(Text(
        "The BatchSize rule checks whether the GPUs are underused because the batch is too small: it fires "
        f"when, over the last {rule.param('window', 500)} datapoints, the 95th percentiles of CPU utilization "
        f"(below {rule.param('cpu_threshold_p95', 70)} %), GPU utilization (below "
        f"{rule.param('gpu_threshold_p95', 70)} %) and GPU memory utilization (memory-controller activity: how busy, not how full; below "
        f"{rule.param('gpu_memory_threshold_p95', 70)} %) are all low. The first "
        f"{rule.param('patience', 1000)} datapoints are skipped. It found {rule.violations} such cases in "
        f"{rule.datapoints} datapoints and fired {rule.triggered} times.",
        tone="finding" if rule.triggered else "plain"))
    nodes = {n.node: n.stats() for n in gpus_of(rule.details)}
    if rule.datapoints == 0 and not nodes:
        return section.missing("No GPU metrics were recorded, so the batch size could not be assessed.")
    if nodes:
        section.add(Text("The instance is underused: consider a larger batch size or a smaller instance type."
                         + last_triggered(rule.details), tone="finding"))
    section.add(*chart_rows([Chart(f"batch-size-{slug(node)}", charts.boxes(stats, f"Node {node}: CPU, GPU and GPU memory"),
                                   BOX_NOTE, numbers=box_numbers(stats)) for node, stats in nodes.items()]))
    section.data = {"triggered": rule.triggered, "violations": rule.violations, "datapoints": rule.datapoints}
    return section
