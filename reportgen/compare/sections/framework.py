"""Framework phases (training/evaluation shares, CPU vs GPU operators) of A and B."""

from __future__ import annotations

from reportgen.compare.common import delta, signed_cell
from reportgen.compare.side import Side
from reportgen.report.model import Section, Table, Text
from reportgen.report.util import as_dict, number
from reportgen.section_ids import SectionId


def build(a: Side, b: Side) -> Section:
    section = Section("framework", "Framework phases")
    fa, fb = a.data(SectionId.FRAMEWORK_METRICS_SUMMARY), b.data(SectionId.FRAMEWORK_METRICS_SUMMARY)
    ok_a, ok_b = a.available(SectionId.FRAMEWORK_METRICS_SUMMARY), b.available(SectionId.FRAMEWORK_METRICS_SUMMARY)
    for side, ok in ((a, ok_a), (b, ok_b)):
        if not ok:
            section.add(Text(f"{side.label} has no framework data (framework profiling was off or produced no "
                             "metrics): its training/evaluation phases and CPU/GPU split cannot be compared.",
                             tone="missing"))
    rows, data = [], []
    for group, title in (("phase", "Share of time"), ("ratio", "CPU vs GPU operators")):
        ga, gb = as_dict(fa.get(group)), as_dict(fb.get(group))
        for key in dict.fromkeys(list(ga) + list(gb)):
            va, vb = number(ga.get(key)), number(gb.get(key))
            rows.append([title, key, va, vb, signed_cell(delta(va, vb))])
            data.append({"group": group, "key": key, "a_pct": va, "b_pct": vb, "delta": delta(va, vb)})
    if rows:
        section.add(Table("framework-table", ["", "Part", "A (%)", "B (%)", "Δ (points)"], rows,
                          ["text", "text", "num2", "num2", "num2"]))
    if not (ok_a or ok_b):
        section.data["available"] = False
    section.data.update({"rows": data, "a_available": ok_a, "b_available": ok_b})
    return section
