"""A small, renderer-neutral model of the report: sections made of blocks.

Section builders fill it; ``reportgen.render.blocks`` turns it into HTML and
``Report.to_data`` into the machine-readable ``report.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union


@dataclass
class Text:
    """A paragraph. ``tone`` is one of plain, finding (a rule fired), ok, note, missing."""

    text: str
    tone: str = "plain"


@dataclass
class Heading:
    text: str
    level: int = 4


@dataclass
class Table:
    """A real HTML table; ``formats`` per column: "text", "int", "num2" (2 decimals), "pct"."""

    id: str
    columns: list[str]
    rows: list[list[Any]]
    formats: list[str]
    caption: str = ""
    row_header: bool = False  # first column labels the row (key/value tables)


@dataclass
class Chart:
    """A plotly figure (as a plain dict) plus the one line shown when scripts cannot run."""

    id: str
    figure: dict
    fallback: str


@dataclass
class ChartRow:
    """Charts shown side by side."""

    charts: list[Chart]


Block = Union[Text, Heading, Table, Chart, ChartRow]


@dataclass
class Section:
    id: str
    title: str
    level: int = 2
    blocks: list[Block] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)  # machine-readable numbers for report.json
    # Not shown (nor listed in the contents) but kept in report.json: a section that cannot apply to
    # this kind of input (see build.fold_inapplicable).
    hidden: bool = False

    def add(self, *blocks: Block) -> "Section":
        self.blocks.extend(blocks)
        return self

    def missing(self, what: str) -> "Section":
        """Say in one line that the data for this section is absent."""
        self.blocks.append(Text(what, tone="missing"))
        self.data.setdefault("available", False)
        return self


@dataclass
class Report:
    job_name: str
    sections: list[Section]
    notes: list[str] = field(default_factory=list)
    source: str = ""
    description: str = ""  # what the source resolved to, e.g. "processing job X: rule outputs in s3://..."
    incomplete: bool = False  # the job was still running: data so far only
    intro: str = ""  # the header's first paragraph when the default one does not fit the input
    diagnosis: Any = None  # reportgen.diagnosis.Diagnosis: the At a glance block and report.json's "diagnosis"
    raw: bool = False  # made from raw profiler data by reportgen's engine (its corrected rules)
    cost: dict = field(default_factory=dict)  # the cost section's data when the instance is known

    def section(self, section_id: str) -> Section:
        for section in self.sections:
            if section.id == section_id:
                return section
        raise KeyError(section_id)
