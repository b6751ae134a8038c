"""The comparison's ``compare.json`` and its Markdown form (for a pull-request comment)."""

from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass
from pathlib import PurePath
from typing import Any

from reportgen import __version__
from reportgen.formatting import format_cell
from reportgen.report.json_output import json_safe
from reportgen.report.model import Chart, ChartRow, Heading, Report, Table, Text
from reportgen.terminal_text import printable

SCHEMA_VERSION = "1.0"


@dataclass(frozen=True)
class RunMeta:
    """What compare.json (``a``, ``b``: ``as_data``) and the Markdown say about one run besides its numbers."""

    label: str
    name: str
    source: str
    description: str
    instance_type: str | None = None
    instance_count: int | None = None
    instance_from: str | None = None  # where the instance type came from, None when not given
    region: str | None = None

    def as_data(self) -> dict[str, Any]:
        return asdict(self)


def compare_data(report: Report, a_meta: RunMeta, b_meta: RunMeta, generated_at: str) -> dict:
    return json_safe({
        "schema_version": SCHEMA_VERSION,
        "generator": {"name": "reportgen", "version": __version__, "generated_at": generated_at},
        "a": a_meta.as_data(),
        "b": b_meta.as_data(),
        "sections": {section.id: section.data for section in report.sections},
    })


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#!@])")
# What GitHub turns into a live link without any markup: a scheme's "://" and a bare "www.".
_AUTOLINK = (("://", "&#58;//"), ("www.", "www&#46;"))


def md_escape(value) -> str:
    """A data string made inert in GitHub Markdown (the comparison is meant for pull-request comments):
    HTML escaped, Markdown punctuation and ``@`` mentions / ``#`` references backslashed, URLs and
    ``www.`` names broken so they do not autolink, newlines flattened (a table cell is one line), controls
    and bidi overrides shown as escapes (``terminal_text``)."""
    text = printable(" ".join(str(value).split())).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))
    for live, inert in _AUTOLINK:
        text = text.replace(live, inert)
    return text


def public_source(source) -> str:
    """How a run's source is named in a comment others read: an S3 URI or an ARN as it is, a local
    folder by its own name only (an absolute path tells readers about the machine, not the run)."""
    text = str(source or "")
    if re.match(r"^[a-z0-9]+://|^arn:", text) or not text:
        return text
    name = PurePath(text).name or text
    return f"local folder {name}"


def _hide_local_paths(text: str, metas: tuple[RunMeta, ...]) -> str:
    """Every spelling of the local sources' paths in ``text`` replaced by their public names."""
    for meta in metas:
        source = str(meta.source or "")
        if not source or public_source(source) == source:
            continue
        spellings = {p for p in (source, os.path.abspath(source), os.path.realpath(source)) if os.path.isabs(p)}
        for spelling in sorted(spellings, key=len, reverse=True):
            for form in (spelling, md_escape(spelling)):
                if len(form) > 1:
                    text = text.replace(form, md_escape(public_source(source)))
    return text


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


def to_markdown(report: Report, a_meta: RunMeta, b_meta: RunMeta, generated_at: str) -> str:
    out = [f"## Comparison: {md_escape(a_meta.name)} (A) vs {md_escape(b_meta.name)} (B)", ""]
    for meta in (a_meta, b_meta):
        out.append(f"- **{meta.label}**: {md_escape(meta.name)} — {md_escape(public_source(meta.source))}")
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
    return _hide_local_paths("\n".join(out) + "\n", (a_meta, b_meta))
