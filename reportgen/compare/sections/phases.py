"""Duration and phases (initialization, training loop, finalization) of A and B."""

from __future__ import annotations

from reportgen.compare.common import delta, signed_cell
from reportgen.compare.side import Side
from reportgen.report.charts import grouped_bars
from reportgen.report.model import Chart, Section, Table, Text
from reportgen.section_ids import SectionId


PHASES = (("Job duration", "job_duration_s", None), ("Initialization", "initialization_s", "initialization_pct"),
          ("Training loop", "training_loop_duration_s", "training_loop_pct"),
          ("Finalization", "finalization_s", "finalization_pct"))


def build(a: Side, b: Side) -> Section:
    section = Section("duration-phases", "Duration and phases")
    sa, sb = a.data(SectionId.TRAINING_JOB_SUMMARY), b.data(SectionId.TRAINING_JOB_SUMMARY)
    for side, data in ((a, sa), (b, sb)):
        if not side.available(SectionId.TRAINING_JOB_SUMMARY):
            section.add(Text(f"{side.label} has no job start and end times (training job summary missing).",
                             tone="missing"))
        elif "training_loop_duration_s" not in data and side.traces():
            section.add(Text(f"{side.label}'s system metrics hold no step boundaries, so its phases are unknown; its "
                             f"PyTorch profiler traces hold {side.traces().profiled_steps:.0f} profiled steps per "
                             "rank (see Step durations).", tone="missing"))
        elif "training_loop_duration_s" not in data:
            section.add(Text(f"{side.label} has no step information, so its phases are unknown.", tone="missing"))
    rows, data_rows = [], []
    for title, key, pct in PHASES:
        va, vb = sa.get(key), sb.get(key)
        if va is None and vb is None:
            continue
        d = delta(va, vb)
        rel = d / va * 100 if d is not None and va else None
        rows.append([title, va, sa.get(pct) if pct else None, vb, sb.get(pct) if pct else None,
                     signed_cell(d, 0), signed_cell(rel, 1)])
        data_rows.append({"phase": key, "a_s": va, "b_s": vb, "delta_s": d, "delta_pct": rel,
                          "a_pct": sa.get(pct) if pct else None, "b_pct": sb.get(pct) if pct else None})
    if rows:
        section.add(Table("phases", ["Phase", "A (s)", "A (% of job)", "B (s)", "B (% of job)", "Δ (s)", "Δ (%)"],
                          rows, ["text", "int", "int", "int", "int", "num2", "num2"], row_header=True))
        names = [r[0] for r in rows]
        section.add(Chart("phases-chart", grouped_bars(names, {f"A: {a.name}": [r[1] for r in rows],
                                                                 f"B: {b.name}": [r[3] for r in rows]},
                                                        "Duration of each phase (s)", "seconds"),
                          "Bar chart (needs JavaScript); the same numbers are in the table above."))
    else:
        section.data["available"] = False
    section.data.update({"rows": data_rows, "a": sa, "b": sb})
    return section
