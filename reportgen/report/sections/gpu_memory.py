"""GPU memory (GPUMemoryIncrease): large increases of the moving average of memory use."""

from __future__ import annotations

from reportgen.report import charts
from reportgen.report.model import Chart, Heading, Section, Text, column_rows
from reportgen.report.sections.gpu import BOX_NOTE, box_numbers, last_triggered
from reportgen.report.util import number, pct_text, slug
from reportgen.rule_outputs import RuleOutputs, gpus_of
from reportgen.rulebook import RuleName
from reportgen.section_ids import SectionId


def build(outputs: RuleOutputs) -> Section:
    section = Section(SectionId.GPU_MEMORY, "GPU memory", level=3)
    rule = outputs.get(RuleName.GPU_MEMORY_INCREASE)
    if rule is None:
        return section.missing("No GPUMemoryIncrease output was found.")
    increase = number(rule.param("increase", 5), 5.0)
    section.add(Text(
        f"The GPUMemoryIncrease rule fires when the moving average of GPU memory utilization (GPUMemoryUtilization: "
        f"memory-controller activity, how busy the GPU's memory is, not how full) grows by more "
        f"than {increase:g} percentage points (for example from 10 % to {10 + increase:g} %). Moving-average "
        f"window: {rule.param('window', 10)} datapoints; the first {rule.param('patience', 1000)} are skipped. "
        f"It found {rule.violations} increases in {rule.datapoints} datapoints and fired {rule.triggered} times.",
        tone="finding" if rule.triggered else "plain"))
    if rule.datapoints == 0:
        return section.missing("No GPU memory metrics were recorded (CPU-only job, or no GPU metrics).")
    nodes = gpus_of(rule.details)
    groups = []  # one column per node: heading, per-GPU sentences, box plot
    if nodes:
        section.add(Text("GPU memory-controller activity rose sharply during training. It is how busy the memory "
                         "is, not how full: torch.cuda.max_memory_reserved() or a trace recorded with "
                         "profile_memory=True tells whether the GPU is close to running out."
                         + last_triggered(rule.details), tone="finding"))
    for node_gpus in nodes:
        node, gpus = node_gpus.node, node_gpus.stats()
        group = [Heading(f"GPU memory on node {node}", 4)]
        for stats in node_gpus.gpus:
            p95, p05, gmax = (number(stats.stat(k)) for k in ("p95", "p05", "gpu_max"))
            parts = [f"The maximum memory utilization of {stats.gpu} on node {node} was {pct_text(gmax)}."]
            if p95 is not None and p95 < 50:
                parts.append(f"Its 95th percentile was only {pct_text(p95)}.")
            if p05 is not None and p05 < 5:
                parts.append(f"Its 5th percentile was only {pct_text(p05)}.")
            # the gap of the values themselves (the original rounded p95 down first: a 50.9-point gap
            # was not "large"; docs/report.md, deviations)
            if p95 is not None and p05 is not None and p95 - p05 > 50:
                parts.append(f"The gap between the 5th percentile ({pct_text(p05)}) and the 95th percentile "
                             f"({pct_text(p95)}) is large: memory use fluctuates strongly.")
            group.append(Text(" ".join(parts)))
        group.append(Chart(f"gpu-memory-{slug(node)}", charts.boxes(gpus, f"GPU memory on node {node}",
                                                                     "Memory utilization in %"), BOX_NOTE,
                           numbers=box_numbers(gpus)))
        groups.append(group)
    section.add(*column_rows(groups))
    section.data = {"triggered": rule.triggered, "violations": rule.violations, "datapoints": rule.datapoints}
    return section
