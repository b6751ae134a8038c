"""Which diagnosed causes B fixed, which remain and which are new, with the change in their impact."""

from __future__ import annotations

from reportgen.compare.side import Side
from reportgen.compare.work import Work, amounts, in_samples
from reportgen.formatting import human_duration
from reportgen.report.model import Table, Text


def _counted(side: Side) -> dict:
    diagnosis = side.report.diagnosis
    return {f.cause: f for f in diagnosis.findings if f.counts} if diagnosis is not None else {}


def _not_judged(side: Side, cause: str) -> bool:
    """Whether the side's data could not have shown the cause (its question was not judged there)."""
    diagnosis = side.report.diagnosis
    return diagnosis is not None and not diagnosis.could_judge(cause)


def _impact(finding) -> str:
    if finding is None:
        return ""
    if finding.risk is not None:
        return "risk, no time lost"
    shown = human_duration(finding.seconds) if 0 < finding.seconds < 1 else f"{finding.seconds:.0f} s"
    return f"{shown} ({finding.share * 100:.0f} %)"


def delta_text(delta: float) -> str:
    """``+12 s`` / ``-3 s``; below a second in ms (``+180 ms``: a profiler's dozen steps lose fractions of a
    second, printed ``0 s (18 %)`` before); a delta of zero is ``0 s``."""
    if 0 < abs(delta) < 1:
        return ("+" if delta > 0 else "") + human_duration(delta)
    shown = f"{delta:+.0f}"
    return f"{'0' if float(shown) == 0 else shown} s"


def _seconds(value) -> str:
    return delta_text(value).replace("-", "\u2212")  # a true minus sign in the table


def _measured(a: Side, b: Side, work: tuple[Work, Work] | None = None) -> float | None:
    """B's job duration − A's, as measured (each run's training-job summary); with ``work`` (different work), B's
    duration scaled to A's steps first."""
    da = a.summary().job_duration_s
    db = b.summary().job_duration_s
    ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (da, db))
    if not ok:
        return None
    if work is None:
        return db - da
    na, nb = amounts(*work)
    return db * na / nb - da


def _differ(measured: float, estimate: float) -> bool:
    return abs(measured - estimate) > max(1.0, 0.1 * abs(estimate))


def compare_causes(a: Side, b: Side, work: tuple[Work, Work] | None = None) -> tuple[list, dict]:
    """(blocks for the verdict section, data). Only causes that count (≥ 5 % of the job, or a serious risk).

    A cause's impact is an estimate ("up to"); what the two runs measured is their duration. A cause alone
    in the table gets the measured change of the job, with the estimate beside it when they differ; with
    several, each shows its estimate and a note below gives the job's measured change (causes overlap, so
    their estimates need not add up to it). ``work``: A's and B's work when they differ (``compare.work``):
    then B's duration is scaled to A's steps before it is set against A's, so a fix that saved time per step
    measures as a saving even when B ran more steps."""
    ca, cb = _counted(a), _counted(b)
    measured = _measured(a, b, work)
    unit = "samples" if work is not None and in_samples(*work) else "steps"
    for_steps = f" for A's {amounts(*work)[0]:.0f} {unit}" if work is not None else ""
    rows, data = [], []
    for cause in dict.fromkeys(list(ca) + list(cb)):
        fa, fb = ca.get(cause), cb.get(cause)
        status = "remaining" if fa and fb else "fixed" if fa else "new"
        # a side with too little data to judge fixes nothing and adds nothing
        if status == "fixed" and _not_judged(b, cause):
            status = "not judged in B"
        elif status == "new" and _not_judged(a, cause):
            status = "not judged in A"
        delta = (fb.seconds if fb else 0.0) - (fa.seconds if fa else 0.0)
        rows.append([cause, _impact(fa), _impact(fb), delta, status])
        data.append({"cause": cause, "status": status, "a_seconds": fa.seconds if fa else None,
                     "b_seconds": fb.seconds if fb else None, "a_share": fa.share if fa else None,
                     "b_share": fb.share if fb else None, "delta_seconds": delta, "measured_delta_seconds": None})
    single = len(rows) == 1 and measured is not None
    for row, entry in zip(rows, data):
        estimate = row[3]
        if single:
            entry["measured_delta_seconds"] = measured
            row[3] = (f"{_seconds(measured)} measured{for_steps}" + (f" (estimate {_seconds(estimate)})"
                                                           if _differ(measured, estimate) else ""))
        else:
            row[3] = f"{_seconds(estimate)} estimated"

    statuses = {s: [d["cause"] for d in data if d["status"] == s] for s in ("fixed", "remaining", "new")}
    da, db = a.report.diagnosis, b.report.diagnosis
    summary = {"a_status": da.status if da else None, "b_status": db.status if db else None, "causes": data,
               "measured_delta_seconds": measured, **statuses}
    if work is not None:  # different work: the measured change is B's duration scaled to A's steps, less A's
        summary["measured_for_a_steps"] = work[0].steps
        if unit == "samples":
            summary["measured_for_a_samples"] = amounts(*work)[0]
    if not rows:
        return [Text(f"Diagnosis: A {summary['a_status'] or 'unknown'}, B {summary['b_status'] or 'unknown'}; "
                     "no cause costs 5 % of either job.", tone="ok")], summary
    text = (f"Diagnosis: A {summary['a_status']}, B {summary['b_status']}. Causes: "
            + ", ".join(f"{len(statuses[s])} {s}" + (f" ({', '.join(statuses[s])})" if statuses[s] else "")
                        for s in ("fixed", "remaining", "new")) + ".")
    blocks = [Text(text, tone="finding" if statuses["new"] or statuses["remaining"] else "ok"),
              Table("causes-compare", ["Cause", "A: impact", "B: impact", "Change", "Status"], rows,
                    ["text", "text", "text", "text", "text"], row_header=True)]
    if len(rows) > 1 and measured is not None:
        scaled = f", B's scaled to A's {amounts(*work)[0]:.0f} {unit}," if work is not None else ""
        blocks.append(Text(f"Measured: the job's duration{scaled} changed by {_seconds(measured)}. Each cause's impact is an "
                           "estimate (\"up to\"), and causes overlap, so their changes need not add up to it.",
                           tone="note"))
    return blocks, summary
