"""Execute the analysis notebook with papermill and convert it to one standalone HTML file."""

from __future__ import annotations

import base64
import importlib
import logging
import re
import sys
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from reportgen.errors import InputError, RenderError
from reportgen.render import chart_parts, disclaimer, inprocess
from reportgen.resources import notebook_path, plotly_js_gzip, template_dir

if TYPE_CHECKING:
    import jinja2


# The kernel name papermill is given (and keeps in the executed notebook's metadata), whichever engine runs it.
KERNEL_NAME = "reportgen-python"
# Errors of the environment a cell can raise (by name: papermill reports a cell's exception as text).
ENVIRONMENT_ERRORS = frozenset(
    cls.__name__ for cls in (OSError, FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError,
                             FileExistsError, InterruptedError, UnicodeError, UnicodeEncodeError, UnicodeDecodeError,
                             MemoryError))


def execute_notebook(parameters: dict, notebook: Path | None = None, cwd: Path | None = None):
    """Run the report notebook (or ``notebook``) with papermill and return the executed notebook (in memory:
    papermill saves nothing, neither per cell nor at the end). The cells run in this process
    (``render.inprocess``), unless another IPython shell lives here (a Jupyter kernel calling reportgen):
    then on a kernel process on this interpreter, in ``cwd``, so that the user's shell is never used.

    A failing cell fails the run, naming the section its cell shows: an ``InputError`` raised in the notebook
    (an unreadable rule output) stays an ``InputError`` (exit code 2), anything else is a ``RenderError``.
    ``parameters["debug"]`` (``generate --debug``): the cells keep this process's terminal (``breakpoint()``
    works) and a failing cell's traceback is printed on stderr before the error is raised."""
    papermill = _papermill()
    logging.getLogger("papermill").setLevel(logging.WARNING)
    debug = bool(parameters.get("debug"))
    if inprocess.available():
        inprocess.register()
        engine = {"engine_name": inprocess.ENGINE_NAME, **({"passthrough": True} if debug else {})}
    else:
        from reportgen.render.kernel import ThisPythonKernelManager

        engine = {"kernel_manager_class": ThisPythonKernelManager}
    try:
        return papermill.execute_notebook(
            str(notebook or notebook_path()),
            None,
            parameters=parameters,
            kernel_name=KERNEL_NAME,
            request_save_on_cell_execute=False,
            progress_bar=False,
            log_output=False,
            cwd=str(cwd) if cwd else None,
            **engine,
        )
    except papermill.PapermillExecutionError as err:
        if debug:
            sys.stderr.write("".join(line if line.endswith("\n") else line + "\n" for line in err.traceback or ()))
            sys.stderr.flush()
        if err.ename == "InputError":
            raise InputError(err.evalue) from None
        if err.ename in ENVIRONMENT_ERRORS:  # a full disk or $TMPDIR while a cell writes: not a bug (exit 2)
            raise InputError(f"{err.ename}: {err.evalue}") from None
        if err.ename == "SectionBuildError":  # report.build under --debug: "section <id>: <the builder's error>"
            raise RenderError(f"the analysis notebook failed in {err.evalue}") from None
        raise RenderError(f"the analysis notebook failed in {_failed_part(err.source, err.exec_count)}: "
                          f"{err.ename}: {err.evalue}") from None


def _papermill():
    """papermill, without importing boto3 for its S3 notebook handler (~0.3 s of CPU, a third of papermill's
    import): the report notebook is always read from a local path and kept in memory. Where boto3 is loaded
    already (an S3 source) papermill imports normally; afterwards ``papermill.s3`` imports as usual."""
    if "papermill" not in sys.modules and "boto3" not in sys.modules:
        sys.modules["papermill.s3"] = None  # papermill.iorw: `try: from .s3 import S3 except ImportError`
        try:
            import papermill  # noqa: F401
        finally:
            del sys.modules["papermill.s3"]
    return importlib.import_module("papermill")


_SHOWN = re.compile(r'report\.show\("([a-z0-9-]+)"\)')


def _failed_part(source: str, exec_count) -> str:
    """What a failing cell makes: 'section <id>' for a section's cell, the opening cell, else its number."""
    shown = _SHOWN.search(source or "")
    if shown:
        return f"section {shown.group(1)}"
    if "open_report(" in (source or ""):
        return "its opening cell (reading the rule outputs)"
    return f"cell {exec_count}"


@dataclass
class Page:
    html: str
    notebook: str | None = None  # the executed notebook (.ipynb text), when asked for


def render_page(parameters: dict, notebook: Path | None = None, keep_notebook: bool = False) -> Page:
    """Execute the notebook in this process and convert it (what ``render.worker`` runs)."""
    executed = execute_notebook(parameters, notebook=notebook)
    html = notebook_to_html(executed)
    if not keep_notebook:
        return Page(html)
    import nbformat

    return Page(html, nbformat.writes(executed))


def warm_up(bytecode_cache: jinja2.BytecodeCache | None = None) -> None:
    """Import what executing and converting the notebook needs (papermill, IPython's shell, nbconvert, the
    report builders) and compile the templates, so that ``render_page`` then only runs and converts.
    ``bytecode_cache``: where compiled templates are kept between runs (``render.template_cache``)."""
    _papermill()
    inprocess.register()
    inprocess.warm_up()
    import IPython.display  # noqa: F401  (what reportgen.notebook displays with)
    import nbformat

    # reading the notebook compiles nbformat's schema validator (~70 ms), which papermill's read then reuses
    nbformat.read(str(notebook_path()), as_version=4)

    import reportgen.report.build  # noqa: F401  (the report builders, pandas: what the notebook's cells run)
    import reportgen.rule_outputs  # noqa: F401
    from reportgen.render.blocks import compile_templates

    compile_templates(bytecode_cache)
    exporter = _exporter(_report_exporter_class())
    if bytecode_cache is not None:
        exporter.environment.bytecode_cache = bytecode_cache
    _ = exporter.template


def notebook_to_html(nb) -> str:
    """The page of the executed notebook (a node): ``convert_notebook``'s, its charts' repeated attributes
    listed once (``chart_parts``)."""
    return chart_parts.share(convert_notebook(nb))


def convert_notebook(nb) -> str:
    """The executed notebook (a node) through nbconvert with our template; plotly.js, CSS and the chart
    loader are inlined once."""
    templates = template_dir()
    resources = {"reportgen": {
        "css": (templates / "reportgen" / "report.css").read_text(encoding="utf-8"),
        "charts_js": (templates / "reportgen" / "charts.js").read_text(encoding="utf-8"),
        "plotly_gzip_base64": _plotly_base64(),
        "disclaimer_short": disclaimer.SHORT,
        "disclaimer": disclaimer.FULL,
    }}
    with _EXPORTING:
        body, _ = _exporter(_report_exporter_class()).from_notebook_node(nb, resources=resources)
    return body


@lru_cache(maxsize=1)
def _plotly_base64() -> str:
    """The gzip'd plotly.js in base64 (0.59 MB; nothing in it can end its <script> element): the
    page's chart loader inflates it with the browser's DecompressionStream."""
    return base64.b64encode(plotly_js_gzip()).decode("ascii")


_EXPORTING = threading.Lock()  # one exporter per process (its template compiled once): one page at a time


@lru_cache(maxsize=2)
def _exporter(exporter_class):
    return exporter_class(template_name="reportgen", extra_template_basedirs=[str(template_dir())],
                          exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)


@lru_cache(maxsize=1)
def _report_exporter_class():
    """nbconvert's HTML exporter without its last step. ``HTMLExporter.from_notebook_node`` re-parses the
    finished page with BeautifulSoup to add alt text to ``<img>`` elements and ``tabindex`` to JupyterLab
    cell wrappers, then re-serialises it: the report has neither (its template shows no cells, and it has
    no images), and the pass cost more than everything else of the conversion (0.3-0.7 s of 2.2 MB).
    Templating and resources are nbconvert's own (``TemplateExporter``); no preprocessor runs (below)."""
    from nbconvert import HTMLExporter
    from nbconvert.exporters.templateexporter import TemplateExporter

    class ReportExporter(HTMLExporter):
        # nbconvert's default preprocessors remove tagged or matching cells, highlight magics, or are off;
        # the report notebook has none of those, and nbformat validated the notebook after each one (11
        # validations and a second schema compiled: ~0.1 s of the page's critical path)
        default_preprocessors: list = []

        def from_notebook_node(self, nb, resources=None, **kw):
            return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

    return ReportExporter
