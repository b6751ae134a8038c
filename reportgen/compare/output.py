"""The comparison's ``compare.json`` and its Markdown form (for a pull-request comment)."""

from __future__ import annotations

import math
import re

from reportgen import __version__
from reportgen.formatting import format_cell
from reportgen.report.json_output import _clean
from reportgen.report.model import Chart, ChartRow, Heading, Report, Table, Text

SCHEMA_VERSION = "1.0"


def compare_data(report: Report, a_meta: dict, b_meta: dict, generated_at: str) -> dict:
    return _clean({
        "schema_version": SCHEMA_VERSION,
        "generator": {"name": "reportgen", "version": __version__, "generated_at": generated_at},
        "a": a_meta,
        "b": b_meta,
        "sections": {section.id: section.data for section in report.sections},
    })


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_escape(value) -> str:
    """A data string made inert in GitHub Markdown: HTML escaped, Markdown punctuation backslashed,
    newlines flattened (a table cell is one line)."""
    text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def md_paragraph(value) -> str:
    """``md_escape`` plus what only matters at the start of a line (headings, lists, rules)."""
    text = md_escape(value)
    text = re.sub(r"^(\d+)([.)])", r"\1\\\2", text)
    return re.sub(r"^([#+\-=])", r"\\\1", text)


def _cell(value, fmt: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—" if value is None else "n/a"
    if fmt == "lines":
        fmt = "text"
    return md_escape(format_cell(value, fmt))


def _table(table: Table) -> list[str]:
    align = {"num2": "---:", "int": "---:", "pct": "---:"}
    lines = ["| " + " | ".join(md_escape(c) or " " for c in table.columns) + " |",
             "| " + " | ".join(align.get(f, "---") for f in table.formats) + " |"]
    for row in table.rows:
        lines.append("| " + " | ".join(_cell(v, f) for v, f in zip(row, table.formats)) + " |")
    return lines


def to_markdown(report: Report, a_meta: dict, b_meta: dict, generated_at: str) -> str:
    out = [f"## Comparison: {md_escape(a_meta.get('name'))} (A) vs {md_escape(b_meta.get('name'))} (B)", ""]
    for meta in (a_meta, b_meta):
        out.append(f"- **{meta['label']}**: {md_escape(meta.get('name'))} — {md_escape(meta.get('source'))}")
    out.append("")
    for section in report.sections:
        out += [f"### {md_escape(section.title)}", ""]
        for block in section.blocks:
            if isinstance(block, Text):
                text = md_paragraph(block.text)
                out += [f"_{text}_" if block.tone in ("missing", "note") else text, ""]
            elif isinstance(block, Heading):
                out += [f"**{md_escape(block.text)}**", ""]
            elif isinstance(block, Table):
                out += _table(block) + [""]
            elif isinstance(block, (Chart, ChartRow)):
                continue  # charts are in the HTML page; their numbers are in the tables
    out.append(f"<sub>Generated {md_escape(generated_at)} by reportgen {__version__}. "
               "Costs are estimates from approximate list prices.</sub>")
    return "\n".join(out) + "\n"
