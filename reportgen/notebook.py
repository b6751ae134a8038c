"""What the analysis notebook calls: open a source, display the header and each section.

The notebook stays thin; everything it shows is computed by ``reportgen.report`` and
rendered by ``reportgen.render.blocks``, so a Jupyter user gets the same report as the CLI.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

from reportgen import __version__
from reportgen.atomic import write_text_atomic
from reportgen.errors import InputError
from reportgen.render.blocks import render_header, render_section
from reportgen.render.page_cache import generation_time
from reportgen.report.build import build_report
from reportgen.report.charts import for_plotly
from reportgen.report.json_output import report_data
from reportgen.report.model import Chart, Report
from reportgen.report.sections import OPTIONAL
from reportgen.rule_outputs import find_rule_output_dir, load_rule_outputs
from reportgen.sources.layout import job_folder_name


class ReportSession:
    """A built report plus display helpers for a notebook."""

    def __init__(self, report: Report, standalone: bool):
        self.report = report
        self.standalone = standalone
        self.generated_at = generation_time()  # a placeholder while a page is made for the page cache

    def _display(self, html: str, meta: dict) -> None:
        from IPython.display import HTML, display

        display(HTML(html), metadata={"reportgen": meta})

    def header(self) -> None:
        self._display(render_header(self.report, self.generated_at, __version__),
                      {"role": "header", "job_name": self.report.job_name, "generated_at": self.generated_at,
                       "version": __version__})

    def show(self, *section_ids: str) -> None:
        """Display sections; in live Jupyter also draw their charts with plotly's own renderer.
        An optional section this report does not have (``cost`` without an instance type) shows nothing."""
        present = {section.id for section in self.report.sections}
        for section_id in section_ids:
            if section_id in OPTIONAL and section_id not in present:
                continue
            section = self.report.section(section_id)
            if section.hidden:
                continue
            self._display(render_section(section),
                          {"role": "section", "id": section.id, "title": section.title, "level": section.level})
            if not self.standalone:
                self._show_live_charts(section)

    def show_all(self) -> None:
        self.show(*(section.id for section in self.report.sections))

    def _show_live_charts(self, section) -> None:
        from IPython.display import display

        for chart in _charts(section):
            display({"application/vnd.plotly.v1+json": for_plotly(chart.figure)}, raw=True)

    def figures(self, section_id: str) -> list:
        """The section's charts as ``plotly.graph_objects.Figure`` objects, to restyle and ``.show()``
        (e.g. ``fig = report.figures("gpu-memory")[0]; fig.update_layout(height=600); fig.show()``).
        plotly is imported here, only when asked: the report itself draws its charts with the page's
        plotly.js from the same specs."""
        import plotly.graph_objects as go

        return [go.Figure(for_plotly(chart.figure)) for chart in _charts(self.report.section(section_id))]

    def save_json(self, output_dir: str | os.PathLike) -> Path:
        """Write ``report.json`` (the numbers of the tables) atomically into ``output_dir``."""
        folder = Path(output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "report.json"
        write_text_atomic(target, json.dumps(report_data(self.report, self.generated_at), indent=1, allow_nan=False))
        return target


def open_report(source: str | os.PathLike, job_name: str = "", standalone: bool = False,
                notes: list[str] | None = None, description: str = "", incomplete: bool = False,
                source_label: str = "", cost: dict | None = None, debug: bool = False) -> ReportSession:
    """Build the report of ``source``: a rule-output folder, raw profiler data, s3:// or a SageMaker job.

    reportgen's pipeline passes a ready rule-output folder; in Jupyter any source works (raw data is
    analysed by the engine into a temporary folder that lives as long as the kernel). ``debug``: a section
    builder that raises fails here (``generate --debug``) instead of becoming a note on its section.
    """
    if not str(source).strip():  # the notebook's default
        from reportgen.resources import sample_data_dir

        try:
            source = sample_data_dir()
        except FileNotFoundError as err:
            raise InputError(str(err)) from None
    folder = Path(source).expanduser()
    rule_dir = find_rule_output_dir(folder) if folder.is_dir() else None
    if rule_dir is None:
        from reportgen.pipeline import prepare_rule_outputs

        work = Path(tempfile.mkdtemp(prefix="reportgen-notebook-"))
        atexit.register(shutil.rmtree, work, True)
        prepared = prepare_rule_outputs(str(source), work)
        rule_dir = prepared.rule_dir
        description = description or f"{prepared.resolved.description} — report made from the {prepared.used}"
        job_name = job_name or prepared.resolved.job_name or ""
    outputs = load_rule_outputs(rule_dir)
    name = job_name or job_folder_name(folder.resolve())
    report = build_report(outputs, job_name=name, extra_notes=notes, cost=cost or None, debug=debug)
    report.description = description
    report.source = source_label or report.source
    report.incomplete = incomplete
    return ReportSession(report, standalone)


def _charts(section) -> list[Chart]:
    """Every chart of the section, wherever it sits (in a row, beside a table, behind a <details>)."""
    return section.charts()
