"""The analysis notebook's parameters, declared once.

The notebook's papermill ``parameters`` cell and its ``open_report(...)`` call (both written by
``scripts/make_notebook.py``), what ``pipeline.generate`` sends (``to_papermill``) and
``reportgen.notebook.open_report``'s keywords (a test keeps them equal) all derive from this class,
so a new parameter is one field here. Layer 0: the pipeline imports it before the engine runs, and it
imports nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any


def _help(text: str, **kwargs: Any) -> Any:
    return field(metadata={"help": text}, **kwargs)


@dataclass(frozen=True)
class NotebookParameters:
    source: str = _help("rule outputs or raw profiler data: a folder, s3:// URI, ARN or job:NAME; empty: sample_data/",
                        default="")
    output_dir: str = _help("where report.json is written; empty: not written", default="")
    job_name: str = _help("shown in the header; empty: guessed from the folder", default="")
    standalone: bool = _help("True when rendered to HTML by reportgen (charts drawn by the page)", default=False)
    notes: list[str] = _help("data-quality notes from earlier pipeline stages", default_factory=list)
    description: str = _help("what the source resolved to (shown in the header)", default="")
    incomplete: bool = _help("the job was still running when the data was read", default=False)
    source_label: str = _help("what the user asked for (ARN, s3:// URI, folder); empty: source", default="")
    cost: dict[str, Any] = _help("instance_type, instance_count, region, prices_file: adds the cost section; empty: none",
                       default_factory=dict)
    debug: bool = _help("generate --debug: a section builder that raises fails the run", default=False)

    # Read by the notebook itself, not passed to open_report.
    NOT_OPENED = ("output_dir",)
    # Sent to papermill only when set: a run without --debug injects what it always injected.
    ONLY_WHEN_SET = ("debug",)

    def to_papermill(self) -> dict[str, Any]:
        """The values papermill injects, in declaration order (plain JSON-able values)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in self.ONLY_WHEN_SET or getattr(self, f.name)}

    @classmethod
    def cell_source(cls) -> str:
        """The notebook's ``parameters`` cell: one line per field, its default and what it is."""
        lines = ["# Parameters (papermill injects new values below this cell)"]
        for f in fields(cls):
            default = f.default_factory() if callable(f.default_factory) else f.default
            literal = json.dumps(default) if isinstance(default, str) else repr(default)
            lines.append(f"{f.name} = {literal}  # {f.metadata['help']}")
        return "\n".join(lines)

    @classmethod
    def opened(cls) -> tuple[str, ...]:
        """The fields ``open_report`` takes, in order (``source`` positional, the rest by keyword)."""
        return tuple(f.name for f in fields(cls) if f.name not in cls.NOT_OPENED)

    @classmethod
    def open_report_call(cls, width: int = 110) -> str:
        """``report = open_report(source, job_name=job_name, ...)``, wrapped at ``width``."""
        head, indent = "report = open_report(", " " * len("report = open_report(")
        first, *rest = cls.opened()
        parts = [first, *(f"{name}={name}" for name in rest)]
        lines, line = [], head
        for index, part in enumerate(parts):
            piece = part + (", " if index < len(parts) - 1 else ")")
            if len(line) + len(piece.rstrip()) > width and line.strip() != head.strip():
                lines.append(line.rstrip())
                line = indent
            line += piece
        lines.append(line)
        return "\n".join(lines)
