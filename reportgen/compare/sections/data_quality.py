"""Whether each run's input files were read completely."""

from __future__ import annotations

from reportgen.compare.side import Side
from reportgen.report.json_views import problems_of
from reportgen.report.model import Section, Text
from reportgen.section_ids import SectionId


def build(a: Side, b: Side) -> Section:
    section = Section("data-quality", "Data quality")
    data = {}
    for side in (a, b):
        n = problems_of(side.data(SectionId.DATA_QUALITY))
        data[side.label.lower()] = {"problems": n}
        section.add(Text(f"{side.label}: " + ("every input file was read completely." if not n else
                                               f"{n} problem(s) met while reading; see its own report."),
                         tone="ok" if not n else "note"))
    section.data = data
    return section
