"""Training job summary: start/end, training loop, initialization and finalization."""

from __future__ import annotations

import math

from reportgen.formatting import day_and_hour, timestamp
from reportgen.report import charts
from reportgen.report.model import Chart, Section, Table, Text
from reportgen.report.trace_facts import steps_sentence, trace_facts
from reportgen.rule_outputs import RuleOutputs, job_times_plausible, step_times_plausible, time_problems


def _finite_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def compute(details: dict) -> dict | None:
    """The summary numbers, computed exactly as the original report does (int truncation)."""
    start, end = details.get("job_start"), details.get("job_end")
    if not (_finite_number(start) and _finite_number(end)) or not job_times_plausible(details):
        return None  # impossible times are no facts (the loader's note says why, under Data quality)
    summary = {"job_start": start, "job_end": end, "job_duration_s": int(end - start)}
    step = details.get("step_num") if isinstance(details.get("step_num"), dict) else {}
    first, last = step.get("first"), step.get("last")
    if _finite_number(first) and _finite_number(last) and step_times_plausible(details):
        duration = summary["job_duration_s"]
        init = int(first / 1e6 - start)
        final = int(abs(end - last / 1e6))
        loop = int((last - first) / 1e6)
        summary.update(
            training_loop_start=first / 1e6,
            training_loop_end=last / 1e6,
            training_loop_duration_s=loop,
            initialization_s=init,
            finalization_s=final,
            # The original divides by zero on a zero-length job; we report 0 % instead.
            initialization_pct=int(init / duration * 100) if duration else 0,
            training_loop_pct=int(loop / duration * 100) if duration else 0,
            finalization_pct=int(final / duration * 100) if duration else 0,
        )
    return summary


def build(outputs: RuleOutputs) -> Section:
    section = Section("training-job-summary", "Training job summary")
    rule = outputs.get("MaxInitializationTime")
    summary = compute(rule.details) if rule else None
    if summary is None and rule is not None and time_problems(rule.details):
        return section.missing(
            "The job's recorded start and end times are impossible (see Data quality), so its start, end and "
            "duration are unknown."
        )
    if summary is None:
        return section.missing(
            "No job start and end times were recorded (MaxInitializationTime output missing or "
            "without system metrics), so the training job summary cannot be shown."
        )
    day, hour = day_and_hour(summary["job_start"])
    section.add(Text(
        "This table summarises the training job: when it started and ended, and how its time "
        "divides between initialization, the training loop and finalization. "
        f"The job started on {day} at {hour} and ran for {summary['job_duration_s']} seconds."
    ))
    rows = [
        ["Start time", timestamp(summary["job_start"])],
        ["End time", timestamp(summary["job_end"])],
        ["Job duration", f"{summary['job_duration_s']} seconds"],
    ]
    if "training_loop_start" in summary:
        rows += [
            ["Training loop start", timestamp(summary["training_loop_start"])],
            ["Training loop end", timestamp(summary["training_loop_end"])],
            ["Training loop duration", f"{summary['training_loop_duration_s']} seconds"],
            ["Initialization time", f"{summary['initialization_s']} seconds"],
            ["Finalization time", f"{summary['finalization_s']} seconds"],
            ["Initialization", f"{summary['initialization_pct']} %"],
            ["Training loop", f"{summary['training_loop_pct']} %"],
            ["Finalization", f"{summary['finalization_pct']} %"],
        ]
    table = Table("job-summary", ["", "Job Statistics"], rows, ["text", "text"], row_header=True)
    section.add(table)
    if "training_loop_start" in summary:
        phases = {
            "Initialization": summary["initialization_pct"],
            "Training loop": summary["training_loop_pct"],
            "Finalization": summary["finalization_pct"],
        }
        section.add(Chart("job-phases", charts.pie(phases, "Time spent in each phase of the job (%)"),
                          "Chart of the phase split; the same numbers are in the table above."))
    elif trace_facts(outputs).steps:
        section.add(Text(
            "The system metrics hold no step boundaries, so the training loop, initialization and finalization "
            "times cannot be computed. " + steps_sentence(trace_facts(outputs), summary.get("job_duration_s")), tone="note"))
    else:
        section.add(Text(
            "No step information was profiled from this training job, so the training loop, "
            "initialization and finalization times cannot be computed.", tone="note"))
    section.data = summary
    return section
