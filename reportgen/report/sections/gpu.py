"""GPU utilization (LowGPUUtilization) and workload balancing between GPUs (LoadBalancing)."""

from __future__ import annotations

from reportgen.formatting import iso_utc
from reportgen.report import charts
from reportgen.report.model import Chart, Fallback, Heading, Section, Table, Text, chart_rows, column_rows
from reportgen.report.util import as_dict, number, pct_text, slug
from reportgen.rule_outputs import RuleOutputs, balancing_of, gpus_of
from reportgen.rulebook import RuleName
from reportgen.section_ids import SectionId

BOX_NOTE = ("Box plot (needs JavaScript): whiskers at 1.5 x the interquartile range; an open circle marks a "
            "maximum beyond them, open triangles the 5th percentile and minimum below them. Its values:")
# (label, keys in the rule outputs, first found): the columns of a box plot's table without scripts.
BOX_COLUMNS = (("min", ("gpu_min", "min")), ("p5", ("gpu_5", "p05", "p5")), ("lower whisker", ("lower",)),
               ("p25", ("p25",)), ("median", ("p50",)), ("p75", ("p75",)), ("upper whisker", ("upper",)),
               ("p95", ("gpu_95", "p95")), ("max", ("gpu_max", "max")))


def box_numbers(stats: dict[str, dict]) -> Fallback | None:
    """What a box plot draws, as a small table shown without JavaScript."""
    def first(s: dict, keys: tuple) -> float | None:
        return next((number(s.get(k)) for k in keys if number(s.get(k)) is not None), None)

    columns = [(label, keys) for label, keys in BOX_COLUMNS
               if any(first(as_dict(s), keys) is not None for s in stats.values())]
    rows = [[str(name), *["" if first(as_dict(s), keys) is None else f"{first(as_dict(s), keys):.1f}"
                          for _, keys in columns]] for name, s in stats.items()]
    return Fallback(["", *[label for label, _ in columns]], rows) if rows and columns else None


def last_triggered(details: dict) -> str:
    ts = number(as_dict(details).get("last_timestamp"))
    if ts is None or ts <= 0:
        return ""
    return f" The rule last fired at {iso_utc(ts / 1e6)}."


def build_utilization(outputs: RuleOutputs) -> Section:
    section = Section(SectionId.GPU_UTILIZATION_ANALYSIS, "GPU utilization analysis", level=3)
    rule = outputs.get(RuleName.LOW_GPU_UTILIZATION)
    if rule is None:
        return section.missing("No LowGPUUtilization output was found.")
    p95_thr = rule.param("threshold_p95", 70)
    p5_thr = rule.param("threshold_p5", 10)
    window = rule.param("window", 500)
    patience = rule.param("patience", 1000)
    if rule.datapoints == 0:
        return section.missing("No GPU utilization metrics were recorded (CPU-only job, or no GPU metrics).")
    section.add(Text(
        f"The LowGPUUtilization rule checks each GPU for low or strongly fluctuating utilization: over the "
        f"last {window} datapoints it computes the 95th and 5th percentiles; utilization is low when the "
        f"95th percentile is below {p95_thr} %, and fluctuating when the 95th percentile is above "
        f"{p95_thr} % while the 5th is below {p5_thr} %. The first {patience} datapoints (initialization) "
        f"are skipped. The rule found {rule.violations} such cases in {rule.datapoints} datapoints and "
        f"fired {rule.triggered} times.", tone="finding" if rule.triggered else "plain"))
    nodes = gpus_of(rule.details)
    data = {}
    groups = []  # one column per node: heading, per-GPU sentences, box plot
    if nodes:
        section.add(Text("The instance may be underused: consider a smaller instance type or a larger batch."
                         + last_triggered(rule.details), tone="finding"))
    for node_gpus in nodes:
        node = node_gpus.node
        group = [Heading(f"GPU utilization on node {node}", 4)]
        for stats in node_gpus.gpus:
            gpu = stats.gpu
            gmax, g95, g5 = (number(stats.stat(k)) for k in ("gpu_max", "gpu_95", "gpu_5"))
            parts = [f"The maximum utilization of {gpu} on node {node} was {pct_text(gmax)}."]
            if g95 is not None and g95 < p95_thr:
                parts.append(f"Its 95th percentile was only {pct_text(g95)}: the GPU is underutilized.")
            if g5 is not None and g5 < p5_thr:
                parts.append(f"Its 5th percentile was only {pct_text(g5)}.")
            if g95 is not None and g5 is not None and g95 - g5 > 50:
                parts.append(f"The gap between the 5th ({pct_text(g5)}) and 95th ({pct_text(g95)}) percentile is "
                             "large: utilization fluctuates strongly.")
            group.append(Text(" ".join(parts)))
            data[f"{node}/{gpu}"] = {k: number(v) for k, v in stats.values.items()}
        gpus = node_gpus.stats()
        group.append(Chart(f"gpu-util-{slug(node)}", charts.boxes(gpus, f"GPU utilization on node {node}"), BOX_NOTE,
                           numbers=box_numbers(gpus)))
        groups.append(group)
    section.add(*column_rows(groups))
    section.data = {"triggered": rule.triggered, "violations": rule.violations,
                    "datapoints": rule.datapoints, "gpus": data}
    return section


def build_balancing(outputs: RuleOutputs) -> Section:
    section = Section(SectionId.WORKLOAD_BALANCING, "Workload balancing", level=3)
    rule = outputs.get(RuleName.LOAD_BALANCING)
    if rule is None:
        return section.missing("No LoadBalancing output was found.")
    nodes = balancing_of(rule.details)
    workloads = [node for node in nodes if node.gpus]
    if not workloads:
        return section.missing("No GPU utilization histograms were recorded (CPU-only job, or no GPU metrics).")
    section.add(Text(
        f"The LoadBalancing rule builds a histogram of utilization per GPU and compares the histograms of "
        f"GPU pairs; it fires when their distance exceeds {rule.param('threshold', 0.2)}. The first "
        f"{rule.param('patience', 1000)} datapoints are skipped. It fired {rule.triggered} times.",
        tone="finding" if rule.triggered else "plain"))
    total_gpus = sum(len(node.gpus) for node in workloads)
    histograms = []
    for node in workloads:
        series = {gpu: (counts, [2.0 * i for i in range(len(counts) + 1)]) for gpu, counts in node.histograms.items()}
        histograms.append(Chart(f"workloads-{slug(node.node)}",
                                charts.histograms(series, f"Workloads on node {node.node}", "GPU utilization in %"),
                                "Histogram of the utilization of each GPU (needs JavaScript)."))
    if total_gpus == 1:
        section.add(Text("The job used a single GPU, so there is no balancing issue."))
    section.add(Text("Utilization histogram of each GPU, one chart per node; click a legend entry to hide or show "
                     "a GPU.", needs_js=True))
    section.add(*chart_rows(histograms))
    distances = [[node.node, pair.gpu, pair.other, number(pair.distance)] for node in nodes for pair in node.distances]
    if distances:
        section.add(Table("gpu-distances", ["node", "GPU", "other GPU", "distance"], distances,
                          ["text", "text", "text", "num2"]))
    section.data = {"triggered": rule.triggered, "distances": distances}
    return section
