"""Execute the analysis notebook with papermill and convert it to one standalone HTML file."""

from __future__ import annotations

import importlib
import logging
import re
import sys
from pathlib import Path

from reportgen.atomic import write_text_atomic
from reportgen.errors import InputError, RenderError
from reportgen.render import disclaimer, inprocess
from reportgen.resources import notebook_path, plotly_js, template_dir


class NotebookKernel:
    """Where the analysis notebook runs. Normally nowhere else: its cells run in this process
    (``render.inprocess``), which already holds everything they import once the engine has run. Inside
    another IPython shell (``generate`` called from Jupyter) a kernel process on this interpreter is
    launched instead, before the engine runs, so that its start-up overlaps the engine's work.
    ``close()`` ends that kernel; papermill does not, as it did not start it."""

    def __init__(self, cwd: Path):
        from reportgen.render import inprocess

        self.manager = None
        if inprocess.available():
            return
        from jupyter_core.utils import run_sync

        from reportgen.render.kernel import ThisPythonKernelManager

        self.manager = ThisPythonKernelManager(warm_imports=True)
        # the connection file inside the run's work folder: a killed run leaves it nowhere else
        # (the next run removes the dead run's work folder; see workdir.py)
        self.manager.connection_file = str(Path(cwd) / "kernel-connection.json")
        run_sync(self.manager.start_kernel)(cwd=str(cwd))

    def __enter__(self) -> NotebookKernel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        from jupyter_core.utils import run_sync

        if self.manager is not None and self.manager.has_kernel:
            run_sync(self.manager.shutdown_kernel)(now=True)  # also removes its connection file


def execute_notebook(parameters: dict, notebook: Path | None = None, kernel: NotebookKernel | None = None,
                     cwd: Path | None = None):
    """Run the report notebook (or ``notebook``) with papermill and return the executed notebook (in memory:
    papermill saves nothing, neither per cell nor at the end). The cells run in this process
    (``render.inprocess``) unless ``kernel`` holds a kernel process (see ``NotebookKernel``) or another
    IPython shell lives here; then on a kernel process on this interpreter, in ``cwd``.

    A failing cell fails the run, naming the section its cell shows: an ``InputError`` raised in the notebook
    (an unreadable rule output) stays an ``InputError`` (exit code 2), anything else is a ``RenderError``."""
    from reportgen.render.kernel import KERNEL_NAME, ThisPythonKernelManager

    papermill = _papermill()
    logging.getLogger("papermill").setLevel(logging.WARNING)
    if kernel is not None and kernel.manager is not None:
        engine = {"km": kernel.manager}
    elif inprocess.available():
        inprocess.register()
        engine = {"engine_name": inprocess.ENGINE_NAME}
    else:
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
        if err.ename == "InputError":
            raise InputError(err.evalue) from None
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


def notebook_to_html(nb) -> str:
    """The executed notebook (a node) through nbconvert with our template; plotly.js, CSS and the chart
    loader are inlined once."""
    templates = template_dir()
    exporter = _report_exporter_class()(template_name="reportgen", extra_template_basedirs=[str(templates)],
                            exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    resources = {"reportgen": {
        "css": (templates / "reportgen" / "report.css").read_text(encoding="utf-8"),
        "charts_js": (templates / "reportgen" / "charts.js").read_text(encoding="utf-8"),
        "plotly_js": plotly_js().replace("</script", "<\\/script"),
        "disclaimer_short": disclaimer.SHORT,
        "disclaimer": disclaimer.FULL,
    }}
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return body


def _report_exporter_class():
    """nbconvert's HTML exporter without its last step. ``HTMLExporter.from_notebook_node`` re-parses the
    finished page with BeautifulSoup to add alt text to ``<img>`` elements and ``tabindex`` to JupyterLab
    cell wrappers, then re-serialises it: the report has neither (its template shows no cells, and it has
    no images), and the pass cost more than everything else of the conversion (0.3-0.7 s of 2.2 MB).
    Templating, preprocessors and resources are nbconvert's own (``TemplateExporter``)."""
    from nbconvert import HTMLExporter
    from nbconvert.exporters.templateexporter import TemplateExporter

    class ReportExporter(HTMLExporter):
        def from_notebook_node(self, nb, resources=None, **kw):
            return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

    return ReportExporter


def write_atomically(path: Path, text: str) -> None:
    """Write next to the target and rename, so a failed run never leaves half a file."""
    write_text_atomic(path, text)
