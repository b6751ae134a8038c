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
    link: str = ""  # an in-page target ("#sec-...") appended after the text as a link
    link_text: str = ""
    needs_js: bool = False  # about an interactive chart (e.g. "click a legend entry"): hidden without scripts


@dataclass
class Heading:
    text: str
    level: int = 4


@dataclass
class Shown:
    """A table cell whose displayed text differs from its exact value (a humane unit, an ISO time).

    The HTML shows ``text``, keeps ``exact`` (the value in full precision, or None where the source
    holds nothing finer than the text) in the cell's ``data-value`` and ``sagemaker`` (the text
    SageMaker's report printed there, when it differs) in ``data-sagemaker``: the fidelity tests
    compare that with the original report."""

    text: str
    exact: Any
    sagemaker: str | None = None


@dataclass
class Table:
    """A real HTML table; ``formats`` per column: "text", "int", "num2" (2 decimals), "pct", "lines",
    or a humane unit (see ``reportgen.formatting.HUMANE``): the cell then shows e.g. "596.3 MB/s" and
    carries the exact value in ``data-value`` (see ``reportgen.formatting.cell_parts``)."""

    id: str
    columns: list[str]
    rows: list[list[Any]]
    formats: list[str]
    caption: str = ""
    row_header: bool = False  # first column labels the row (key/value tables)
    bar_column: int | None = None  # a percentage column drawn as an in-cell bar (share of the largest)


@dataclass
class Chart:
    """A plotly figure (as a plain dict) plus the one line shown when scripts cannot run."""

    id: str
    figure: dict
    fallback: str
    # The chart's numbers when they are not in the text: shown in place of the chart without scripts.
    numbers: Fallback | None = None


@dataclass
class ChartRow:
    """Charts shown side by side."""

    charts: list[Chart]


def chart_rows(charts: list[Chart]) -> list[Block]:
    """Charts two by two, side by side (one under the other on narrow screens)."""
    out: list = []
    for start in range(0, len(charts), 2):
        pair = charts[start:start + 2]
        out.append(ChartRow(pair) if len(pair) == 2 else pair[0])
    return out


@dataclass
class Columns:
    """Groups of blocks side by side (one under the other on narrow screens), e.g. one per node."""

    columns: list[list]


def column_rows(groups: list[list]) -> list:
    """Groups two by two in ``Columns``; a lone group stays as its blocks."""
    out: list = []
    for start in range(0, len(groups), 2):
        pair = groups[start:start + 2]
        if len(pair) == 2:
            out.append(Columns(pair))
        else:
            out.extend(pair[0])
    return out


@dataclass
class TableWithChart:
    """A table with the chart of the same numbers beside it (below it on narrow screens)."""

    table: Table
    chart: Chart


@dataclass
class Details:
    """Blocks behind a one-line summary the reader can open (<details>: works without JavaScript)."""

    summary: str
    blocks: list
    open: bool = False


@dataclass
class ItemList:
    """A compact bulleted list (one short line per item)."""

    items: list[str]


@dataclass
class Fallback:
    """What a chart's numbers are when scripts cannot draw it: a small table shown under <noscript>."""

    columns: list[str]
    rows: list[list[Any]]


Block = Union[Text, Heading, Table, Chart, ChartRow, Columns, TableWithChart, ItemList, Details]


def leaves(blocks: list) -> list:
    """Every block inside ``blocks``, containers (rows, columns, details) opened, in reading order."""
    found: list = []
    for block in blocks:
        if isinstance(block, ChartRow):
            found.extend(block.charts)
        elif isinstance(block, TableWithChart):
            found.extend([block.table, block.chart])
        elif isinstance(block, Details):
            found.extend(leaves(block.blocks))
        elif isinstance(block, Columns):
            for column in block.columns:
                found.extend(leaves(column))
        else:
            found.append(block)
    return found


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
    # A per-rule deep dive: shown as <details>, open when ``open``; ``verdict`` is its one-line summary.
    collapsible: bool = False
    open: bool = True
    verdict: str = ""
    half: bool = False  # two consecutive half sections sit side by side on wide screens

    def add(self, *blocks: Block) -> "Section":
        self.blocks.extend(blocks)
        return self

    def charts(self) -> list[Chart]:
        """Every chart of the section, in order, wherever it sits (alone, in a row, beside a table)."""
        return [b for b in leaves(self.blocks) if isinstance(b, Chart)]

    def tables(self) -> list[Table]:
        return [b for b in leaves(self.blocks) if isinstance(b, Table)]

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
