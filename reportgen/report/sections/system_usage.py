"""System usage statistics: per-node percentiles of CPU, GPU, memory, I/O and network."""

from __future__ import annotations

from reportgen.formatting import exact_number, human_rate, num2
from reportgen.report.model import Section, Shown, Table, Text
from reportgen.report.trace_facts import trace_facts
from reportgen.report.util import as_dict, int_pct, number
from reportgen.rule_outputs import (USAGE_STATS, NodeUsage, RuleOutputs, recorded_command, recorded_run_queue,
                                    system_usage_of)
from reportgen.rulebook import RuleName
from reportgen.section_ids import SectionId

STATS = USAGE_STATS
UNITS = {"Network": "bytes"}


def rows_of(details: dict) -> tuple[list[dict], list[str]]:
    """Rows metric by metric, node by node (the original's order), and the stats present."""
    rows, present = [], set()
    for usage in system_usage_of(details):
        row = {"node": usage.node, "metric": usage.metric, "unit": UNITS.get(usage.metric, "percentage")}
        for key in usage.listed:
            row[key] = number(usage.stat(key))
        present.update(usage.listed)
        rows.append(row)
    return rows, [key for key in STATS if key in present]


def _display_row(row: dict, present: list[str]) -> list:
    """A table row; network throughput shows as "596.3 MB/s", its exact bytes/s in data-value and the
    original's printed "596310691.39" (unit "bytes") in data-sagemaker."""
    if row["unit"] != "bytes":
        return [row["node"], row["metric"], row["unit"], *[row.get(k) for k in present]]
    return [row["node"], row["metric"], Shown("bytes/s", None, row["unit"]),
            *[Shown(human_rate(row[k]), exact_number(row[k]), num2(row[k])) if row.get(k) is not None else None
              for k in present]]


def node_sentence(node: str, gpu: NodeUsage | None, cpu: NodeUsage | None) -> str | None:
    """One sentence per node on how well it was used (fixes the original's CPU-only gap)."""
    cpu95 = number(cpu.p95 if cpu else None)
    if gpu:
        gpu95, gpu50 = number(gpu.p95), number(gpu.p50)
        if gpu95 is None or cpu95 is None:
            return None
        if gpu95 < 70 and cpu95 < 70:
            return (f"On node {node} the 95th percentile of total GPU utilization is only "
                    f"{int_pct(gpu95)} % and of total CPU utilization only {int_pct(cpu95)} %: the node "
                    "is underutilized. A smaller instance type may do the same work.")
        if gpu95 < 70 and cpu95 > 70:
            return (f"On node {node} the 95th percentile of total GPU utilization is only "
                    f"{int_pct(gpu95)} % while that of CPU utilization is {int_pct(cpu95)} %: the GPUs "
                    "are probably starved by CPU-side bottlenecks.")
        if gpu50 is not None and gpu50 > 70:
            return (f"On node {node} the median GPU utilization is {int_pct(gpu50)} %: the GPUs are "
                    "well utilized.")
        cpu50 = number(cpu.p50 if cpu else None, 0.0)
        return (f"On node {node} the median GPU utilization is {int_pct(gpu50)} % and the median "
                f"CPU utilization {int_pct(cpu50)} %.")
    if cpu95 is None:
        return None
    if cpu95 > 70:
        return (f"Node {node} has no GPU metrics; the 95th percentile of its total CPU utilization "
                f"is {int_pct(cpu95)} %: the CPUs are well utilized.")
    return (f"Node {node} has no GPU metrics; the 95th percentile of its total CPU utilization is "
            f"only {int_pct(cpu95)} %: the node is underutilized and a smaller instance type may do.")


def _input_bound_caveat(facts) -> str:
    """Idle cores beside a training loop that waits for data loaded in its own process: the cores are the fix."""
    if facts.dataloader_share is None or facts.dataloader_share < 0.3 or facts.workers is not False:
        return ""
    return (f"But the PyTorch profiler traces show training waiting for its data: "
            f"{100 * facts.dataloader_share:.0f} % of the profiled step time is spent in a DataLoader without "
            "workers. Put the idle cores to work with DataLoader workers (num_workers) before choosing a smaller "
            "instance.")


def build(outputs: RuleOutputs) -> Section:
    section = Section(SectionId.SYSTEM_USAGE_STATISTICS, "System usage statistics")
    rule = outputs.get(RuleName.OVERALL_SYSTEM_USAGE)
    details = as_dict(rule.details) if rule else {}
    rows, present = rows_of(details)
    if not rows:
        return section.missing("No system metrics were recorded (OverallSystemUsage output missing or empty).")
    usages = system_usage_of(details)
    gpu = {u.node: u for u in usages if u.metric == "GPU"}
    cpu = {u.node: u for u in usages if u.metric == "CPU"}
    command = recorded_command(outputs.recording)
    for node in dict.fromkeys(list(cpu) + list(gpu)):
        node_cpu = cpu.get(node)
        shared = command is not None and command["host_shared"] and command["job_cpu_pct_of_host_p95"] is not None
        if shared:  # a recording on a shared host: judge the node by the recorded command's own CPU
            node_cpu = NodeUsage("CPU", node, p95=command["job_cpu_pct_of_host_p95"],
                                 p50=command["job_cpu_pct_of_host_p50"])
        node_gpu = gpu.get(node)
        sentence = node_sentence(node, node_gpu if node_gpu and node_gpu.any_listed else None, node_cpu)
        if sentence and shared:
            sentence = ("The host was shared with other work, so this is judged by the recorded command's own CPU "
                        "use (its share of the host's cores), not the host's: "
                        + sentence.replace("total CPU utilization", "CPU use by the recorded command"))
        if sentence:
            section.add(Text(sentence, tone="finding" if "underutilized" in sentence or "starved" in sentence else "plain"))
        if sentence and "underutilized" in sentence:
            caveat = _input_bound_caveat(trace_facts(outputs))
            if caveat:
                section.add(Text(caveat, tone="finding"))
    section.add(Text(
        f"Per node, the {', '.join(present)} of CPU and GPU utilization (mean over cores and GPUs), CPU and GPU "
        "memory, I/O wait (mean over cores) and the training container's network traffic (received plus sent)."
    ))
    columns = ["node", "metric", "unit", *present]
    table_rows = [_display_row(r, present) for r in rows]
    section.add(Table("system-usage", columns, table_rows, ["text"] * 3 + ["num2"] * len(present)))
    if command is not None:
        section.add(Text(command_sentence(command, recorded_run_queue(outputs.recording)),
                         tone="finding" if command["host_shared"] else "plain"))
    section.data = {"rows": rows, "datapoints": rule.datapoints if rule else 0,
                    **({"recorded_command": command} if command is not None else {})}
    return section


def command_sentence(c: dict, run_queue_pct: float | None = None) -> str:
    """The recorded command's own CPU and memory beside the host's, and the CPU it waited for on the scheduler's
    run queue (``run_queue_pct``, % of the host's cores; None: the recording has no such account)."""
    cores = c["job_cpu_pct_of_host"] / 100 * c["cpu_cores"]
    own = (f"The recorded command's own processes used {c['job_cpu_pct_of_host']:.0f} % of the host's CPU on "
           f"average ({cores:.2f} of {c['cpu_cores']} cores; peak memory {c['job_rss_peak_bytes'] / 1e6:.0f} MB) "
           f"while the host's CPU was at {c['host_cpu_pct']:.0f} %.")
    if run_queue_pct is not None:
        own += (f" Its threads also waited for a core while runnable (the scheduler's run queue): "
                f"{run_queue_pct / 100 * c['cpu_cores']:.2f} of a core on average, CPU it asked for and did not get.")
    if c["host_shared"]:
        return (own + " The host was shared: the CPU figures above are the host's, not the job's; judge the job "
                "by its own share (job-metrics.jsonl in the recording has it tick by tick).")
    return own + " The host's CPU figures above are the job's."
