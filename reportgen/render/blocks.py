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

from reportgen.formatting import format_cell
from reportgen.report.model import Chart, ChartRow, Heading, Report, Section, Table, Text
from reportgen.resources import template_dir


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


def render_block(block) -> str:
    env = environment()
    if isinstance(block, Text):
        return env.get_template("text.html.j2").render(block=block)
    if isinstance(block, Heading):
        return env.get_template("heading.html.j2").render(block=block)
    if isinstance(block, Table):
        return env.get_template("table.html.j2").render(table=block)
    if isinstance(block, Chart):
        return env.get_template("chart.html.j2").render(chart=block)
    if isinstance(block, ChartRow):
        inner = "".join(render_block(chart) for chart in block.charts)
        return env.get_template("chart_row.html.j2").render(inner=inner)
    raise TypeError(f"unknown block {type(block).__name__}")


def render_section(section: Section) -> str:
    body = "".join(render_block(block) for block in section.blocks)
    return environment().get_template("section.html.j2").render(section=section, body=body)


def render_glance(report: Report) -> str:
    """The At a glance block (empty when the report has no diagnosis)."""
    from reportgen.report.glance import glance

    view = glance(report)
    return environment().get_template("at_a_glance.html.j2").render(g=view) if view else ""


def render_header(report: Report, generated_at: str, version: str) -> str:
    return environment().get_template("header.html.j2").render(
        report=report, generated_at=generated_at, version=version, glance=render_glance(report))
