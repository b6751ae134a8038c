"""The "At a glance" block at the top of the report: who the job is, its status, the top findings.

Only words and numbers already computed (by the diagnosis, the summary and the cost section) are
put together here, so the block template stays free of logic.
"""

from __future__ import annotations

from reportgen.diagnosis.causes import secs
from reportgen.formatting import binary_bytes, money_text
from reportgen.report.trace_flops import glance_item
from reportgen.report.model import Report
from reportgen.report.views import CostFigures

TOP = 3
STATUS_LABELS = {"healthy": "Healthy", "problems": "Problems found", "insufficient-data": "Insufficient data"}
DEVIATIONS_DOC = "docs/deviations.md"  # in reportgen's documentation (the report is read offline)


def currency(report: Report) -> str:
    """The price table's currency, as the cost section recorded it (a --prices file in euros)."""
    return CostFigures.of(report.cost).currency




def sentence(text: str) -> str:
    """Text that starts a sentence starts with a capital (node and operator names never come first)."""
    return text[:1].upper() + text[1:]


def impact_text(finding, money_in: str = "USD") -> str:
    if finding.risk is not None:
        risk = finding.risk
        parts = [f"grows {binary_bytes(risk['per_step_bytes'])} per step"] if "per_step_bytes" in risk else []
        if "time_to_full_s" in risk:
            parts.append(f"full in {secs(risk['time_to_full_s'])} at this rate")
        if "peak_pct" in risk:
            parts.append(f"peak {risk['peak_pct']:.0f} % of GPU memory")
        if "peak_activity_pct" in risk:  # GPUMemoryUtilization: how busy the memory was, never how full
            parts.append(f"peak memory-controller activity {risk['peak_activity_pct']:.0f} %")
        return "Risk, no time lost yet: " + ", ".join(parts) if parts else "Risk, no time lost yet"
    if finding.base == "profiled steps":
        text = f"about {secs(finding.seconds)} of the profiled steps ({finding.share * 100:.0f} %)"
    elif finding.loop_share is not None:
        text = (f"about {secs(finding.seconds)} ({finding.loop_share * 100:.0f} % of the training loop, "
                f"{finding.share * 100:.0f} % of the job)")
    else:
        text = f"about {secs(finding.seconds)} ({finding.share * 100:.0f} % of the job)"
    if finding.cost is not None:
        text += f", about {money_text(finding.cost, money_in)}"
    return text


def identity(report: Report) -> list[tuple[str, str]]:
    """(label, value) pairs of what identifies the job; unknown ones are left out."""
    diagnosis = report.diagnosis
    ev = diagnosis.evidence if diagnosis is not None else None
    items: list[tuple[str, str]] = []
    cost = CostFigures.of(report.cost)
    if str(report.source).startswith("arn:"):
        items.append(("ARN", str(report.source)))
    if cost.instance_type:
        items.append(("Instance", f"{cost.instance_type} × {cost.instance_count or 1}"))
    if ev is not None:
        if ev.nodes:
            items.append(("Nodes", str(len(ev.nodes))))
        elif ev.trace_ranks:
            items.append(("Ranks", str(len(ev.trace_ranks))))
        if ev.gpus_per_node:
            items.append(("GPUs per node", str(ev.gpus_per_node)))
        elif ev.has_gpu is False:
            items.append(("GPUs", "none recorded"))
        if ev.cores:
            items.append(("CPU cores per node", str(ev.cores)))
        if ev.trace_only and ev.duration_s is not None:
            covers = f" of a trace covering {secs(ev.trace_span_s)}" \
                if ev.trace_span_s and ev.trace_span_s > 1.05 * ev.duration_s else ""
            items.append(("Profiled", f"{secs(ev.duration_s)}{covers}"))
            if ev.profiled_steps_s and ev.profiled_steps_s < 0.95 * ev.duration_s:  # what impacts are shares of
                items.append(("Profiled steps", secs(ev.profiled_steps_s)))
        elif ev.duration_s is not None:
            items.append(("Duration", secs(ev.duration_s)))
            if ev.loop_s:
                items.append(("Training loop", secs(ev.loop_s)))
            if ev.profiler_export_s:  # the profiler's own time: left out of the loop above and of every share
                items.append(("Profiler export", f"{secs(ev.profiler_export_s)} (not counted as training)"))
        overhead = ev.profiler_overhead
        if overhead is not None and overhead.per_step_ms is not None and overhead.share is not None and \
                (overhead.pauses or overhead.excluded):  # after a window: shown where it is more than the drift
            items.append(("Profiler overhead", f"{overhead.per_step_ms:.1f} ms a recorded step "
                          f"({100 * overhead.share:.0f} % of its {overhead.recorded_median_ms:.1f} ms): "
                          f"{overhead.measured_from} took {overhead.unrecorded_mean_ms:.{2 if overhead.unrecorded_mean_ms < 10 else 1}f} "
                          "ms each"
                          + ("; left out of every share" if overhead.excluded else "")))
        elif overhead is not None and overhead.pauses:  # several cycles, yet not measurable: say why
            items.append(("Profiler overhead", f"not measured: {overhead.note}"))
        compute = glance_item(list(ev.trace_ranks.values()))  # FLOPs and MFU from the traces
        if compute is not None:
            items.append(compute)
    if cost.cost_rounded is not None:
        items.append(("Cost", money_text(cost.cost_rounded, cost.currency)))
    return items


def glance(report: Report) -> dict | None:
    """The view model of templates/blocks/at_a_glance.html.j2."""
    diagnosis = report.diagnosis
    if diagnosis is None:
        return None
    findings = []
    for finding in diagnosis.findings[:TOP]:
        findings.append({
            "cause": finding.cause, "title": finding.title, "impact": impact_text(finding, currency(report)),
            "evidence": sentence("; ".join(finding.evidence[:3])), "fix": finding.fix, "note": finding.note,
            "basis": finding.basis,
            "minor": not finding.counts,
            "links": [(f"#sec-{x.id}", x.title) for s in finding.sections for x in report.sections
                      if x.id == s and not x.hidden][:3],
        })
    counted = sum(f.counts for f in diagnosis.findings)
    if diagnosis.status == "healthy":
        summary = ("No cause costs 5 % or more of the job. " if not findings else
                   "No cause costs 5 % or more of the job (minor findings below). ") + diagnosis.coverage_text()
    elif diagnosis.status == "insufficient-data" and not diagnosis.questions_judged:
        summary = ("Nothing could be judged: too little data for any rule or utilization check. "
                   + diagnosis.coverage_text())
    elif diagnosis.status == "insufficient-data":
        summary = "No problem found in what could be judged, but not everything could be. " + diagnosis.coverage_text()
    else:
        minor = len(diagnosis.findings) - counted  # listed too, after them: the count says so (one story)
        also = f", and {minor} minor finding{'s' if minor != 1 else ''}" if minor else ""
        summary = ("1 cause found" if counted == 1 else f"{counted} causes found, most costly first") + also + ". " \
            + diagnosis.coverage_text()
    not_evaluated = list(diagnosis.not_evaluated)
    return {
        "status": diagnosis.status,
        "status_label": STATUS_LABELS.get(diagnosis.status, diagnosis.status),
        "summary": summary,
        "identity": identity(report),
        "findings": findings,
        "more": max(len(diagnosis.findings) - TOP, 0),
        "not_evaluated": not_evaluated,
        "unexplained": list(diagnosis.unexplained.values()),

        "not_judged": diagnosis.not_judged,
        "raw": report.raw,
        "deviations": DEVIATIONS_DOC,
    }
