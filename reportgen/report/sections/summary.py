"""Training job summary: start/end, training loop, initialization and finalization."""

from __future__ import annotations

from reportgen.formatting import exact_number, human_duration, iso_utc, pct1, timestamp
from reportgen.report import charts
from reportgen.report.model import Chart, Section, Shown, Table, TableWithChart, Text
from reportgen.report.trace_facts import steps_sentence, trace_facts
from reportgen.rule_outputs import JobTimes, RuleOutputs
from reportgen.rulebook import RuleName
from reportgen.section_ids import SectionId


def compute(details: dict) -> dict | None:
    """The summary numbers, computed exactly as the original report does (int truncation)."""
    times = JobTimes.of(details)
    if not times.job_known:
        return None  # impossible times are no facts (the loader's note says why, under Data quality)
    start, end = times.start_s, times.end_s
    summary = {"job_start": start, "job_end": end, "job_duration_s": int(end - start)}
    first, last = times.first_step_us, times.last_step_us
    if times.steps_known:
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
        # The same shares unrounded (from the exact instants), for the table's one-decimal display
        # and the chart: both then show the same value (the int columns above are the original's).
        exact = end - start
        if exact > 0:
            summary["phase_shares_pct"] = {
                "Initialization": max(first / 1e6 - start, 0.0) / exact * 100,
                "Training loop": max((last - first) / 1e6, 0.0) / exact * 100,
                "Finalization": abs(end - last / 1e6) / exact * 100,
            }
    return summary


def _when(seconds: float) -> Shown:
    """A moment: ISO on screen, Unix seconds as the exact value, the original's "HH:MM:SS MM/DD/YYYY" kept."""
    return Shown(iso_utc(seconds), exact_number(seconds), timestamp(seconds))


def _took(seconds: int, exact: float) -> Shown:
    """A duration the original truncated to whole seconds ("39 seconds"); the exact seconds kept beside it."""
    return Shown(human_duration(seconds), exact_number(exact), f"{seconds} seconds")


def exact_durations(summary: dict) -> dict:
    """The summary's durations in seconds before the original's int truncation, from its own instants."""
    start, end = summary["job_start"], summary["job_end"]
    out = {"job_duration_s": end - start}
    if "training_loop_start" in summary:
        first, last = summary["training_loop_start"], summary["training_loop_end"]
        out.update(training_loop_duration_s=last - first, initialization_s=first - start,
                   finalization_s=abs(end - last))
    return out


def build(outputs: RuleOutputs) -> Section:
    section = Section(SectionId.TRAINING_JOB_SUMMARY, "Training job summary")
    rule = outputs.get(RuleName.MAX_INITIALIZATION_TIME)
    summary = compute(rule.details) if rule else None
    if summary is None and rule is not None and JobTimes.of(rule.details).problems:
        return section.missing(
            "The job's recorded start and end times are impossible (see Data quality), so its start, end and "
            "duration are unknown."
        )
    if summary is None:
        return section.missing(
            "No job start and end times were recorded (MaxInitializationTime output missing or "
            "without system metrics), so the training job summary cannot be shown."
        )
    section.add(Text(
        "This table summarises the training job: when it started and ended, and how its time "
        "divides between initialization, the training loop and finalization. "
        f"The job started at {iso_utc(summary['job_start'])} and ran for "
        f"{human_duration(summary['job_duration_s'])}."
    ))
    exact = exact_durations(summary)
    rows = [
        ["Start time", _when(summary["job_start"])],
        ["End time", _when(summary["job_end"])],
        ["Job duration", _took(summary["job_duration_s"], exact["job_duration_s"])],
    ]
    shares = summary.get("phase_shares_pct") or {}
    if "training_loop_start" in summary:
        rows += [
            ["Training loop start", _when(summary["training_loop_start"])],
            ["Training loop end", _when(summary["training_loop_end"])],
            *[[label, _took(summary[key], exact[key])] for label, key in (
                ("Training loop duration", "training_loop_duration_s"), ("Initialization time", "initialization_s"),
                ("Finalization time", "finalization_s"))],
        ]
        for label, key in (("Initialization", "initialization_pct"), ("Training loop", "training_loop_pct"),
                           ("Finalization", "finalization_pct")):
            printed = f"{summary[key]} %"  # the original's int-truncated share; the exact one in percent
            rows.append([label, Shown(pct1(shares[label]), exact_number(shares[label]), printed)
                         if label in shares else printed])
    table = Table("job-summary", ["", "Job Statistics"], rows, ["text", "text"], row_header=True)
    if shares:
        chart = Chart("job-phases", charts.share_bar(shares, "Time spent in each phase of the job"),
                      "Bar of the phase split (needs JavaScript); the same shares are in the table.")
        section.add(TableWithChart(table, chart))
    else:
        section.add(table)
    if "training_loop_start" not in summary and trace_facts(outputs).steps:
        section.add(Text(
            "The system metrics hold no step boundaries, so the training loop, initialization and finalization "
            "times cannot be computed. " + steps_sentence(trace_facts(outputs), summary.get("job_duration_s")), tone="note"))
    elif "training_loop_start" not in summary:
        section.add(Text(
            "No step information was profiled from this training job, so the training loop, "
            "initialization and finalization times cannot be computed.", tone="note"))
    section.data = summary
    return section
