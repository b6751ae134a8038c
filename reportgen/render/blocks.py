"""Turn the report model into HTML fragments, one small Jinja template per concept.

Autoescaping is on: every string from the data is escaped. Chart specs travel as JSON in
``<script type="application/json">`` elements with ``<`` escaped, so no data string can
close the script element.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache

import jinja2

from dataclasses import dataclass

from reportgen.formatting import cell_parts, format_cell
from reportgen.report.model import (Chart, ChartRow, Columns, Details, Heading, ItemList, Report, Section, Table,
                                    TableWithChart, Text)
from reportgen.resources import template_dir
from reportgen.report.glance import glance
from reportgen.render.static_chart import static_picture


def _json_default(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(type(value).__name__)


def _clean(value):
    """JSON has no NaN/Infinity: plotly gets null for them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def script_json(data) -> str:
    try:  # most charts hold no NaN/Infinity: the C encoder alone, without walking every value in Python
        text = json.dumps(data, default=_json_default, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_clean(data), default=_json_default, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir() / "blocks")),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["cell"] = format_cell
    env.filters["script_json"] = script_json
    return env


def compile_templates(bytecode_cache: jinja2.BytecodeCache | None = None) -> None:
    """Load and compile every block template now (the page's worker does it while the engine runs), each from
    ``bytecode_cache`` where it holds its compiled code (``render.template_cache``)."""
    env = environment()
    if bytecode_cache is not None:
        env.bytecode_cache = bytecode_cache
    for name in env.list_templates(extensions=["j2"]):
        env.get_template(name)


@dataclass
class Cell:
    """One table cell ready to print: the text shown, the exact value (``data-value``) when the text
    rounds or reformats it, SageMaker's printed text (``data-sagemaker``) when it differs from the
    text, the in-cell bar length (% of the column's largest value), and the lines of a "lines" cell."""

    text: str
    exact: str | None = None
    sagemaker: str | None = None
    bar: float | None = None
    lines: list[str] | None = None


def table_cells(table: Table) -> list[list[Cell]]:
    """Every cell of ``table`` as displayed; the only place where a table's values become text."""
    peak = 0.0
    if table.bar_column is not None:
        column = [row[table.bar_column] for row in table.rows if len(row) > table.bar_column]
        peak = max((v for v in column if isinstance(v, (int, float)) and math.isfinite(v) and v > 0), default=0.0)
    rows = []
    for row in table.rows:
        cells = []
        for index, value in enumerate(row):
            fmt = table.formats[index] if index < len(table.formats) else "text"
            text, exact, printed = cell_parts(value, fmt)
            cell = Cell(text, exact, printed)
            if fmt == "lines":
                cell.lines = str(value or "").splitlines()
            if index == table.bar_column and peak and isinstance(value, (int, float)) and math.isfinite(value):
                cell.bar = round(max(value, 0.0) / peak * 100.0, 1)
            cells.append(cell)
        rows.append(cells)
    return rows


def render_block(block) -> str:
    env = environment()
    if isinstance(block, Text):
        return env.get_template("text.html.j2").render(block=block)
    if isinstance(block, Heading):
        return env.get_template("heading.html.j2").render(block=block)
    if isinstance(block, Table):
        return env.get_template("table.html.j2").render(table=block, rows=table_cells(block))
    if isinstance(block, Chart):
        return env.get_template("chart.html.j2").render(chart=block, static=static_picture(block.figure))
    if isinstance(block, TableWithChart):
        return env.get_template("table_with_chart.html.j2").render(table=render_block(block.table),
                                                                   chart=render_block(block.chart))
    if isinstance(block, Columns):
        columns = ["".join(render_block(b) for b in column) for column in block.columns]
        return env.get_template("columns.html.j2").render(columns=columns)
    if isinstance(block, Details):
        inner = "".join(render_block(b) for b in block.blocks)
        return env.get_template("details.html.j2").render(block=block, inner=inner)
    if isinstance(block, ItemList):
        return env.get_template("item_list.html.j2").render(block=block)
    if isinstance(block, ChartRow):
        inner = "".join(render_block(chart) for chart in block.charts)
        return env.get_template("chart_row.html.j2").render(inner=inner)
    raise TypeError(f"unknown block {type(block).__name__}")


def render_section(section: Section) -> str:
    body = "".join(render_block(block) for block in section.blocks)
    return environment().get_template("section.html.j2").render(section=section, body=body)


def render_glance(report: Report) -> str:
    """The At a glance block (empty when the report has no diagnosis)."""
    view = glance(report)
    return environment().get_template("at_a_glance.html.j2").render(g=view) if view else ""


def render_header(report: Report, generated_at: str, version: str) -> str:
    return environment().get_template("header.html.j2").render(
        report=report, generated_at=generated_at, version=version, glance=render_glance(report))
