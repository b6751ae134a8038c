"""Execute the analysis notebook with papermill and convert it to one standalone HTML file."""

from __future__ import annotations

import logging
from pathlib import Path

from reportgen.atomic import write_text_atomic
from reportgen.errors import RenderError
from reportgen.render import disclaimer
from reportgen.render.kernel import KERNEL_NAME, ThisPythonKernelManager
from reportgen.resources import notebook_path, plotly_js, template_dir


def execute_notebook(parameters: dict, executed_path: Path, notebook: Path | None = None) -> None:
    """Run the report notebook (or ``notebook``); a failing cell is recorded in the notebook, not raised."""
    import papermill

    logging.getLogger("papermill").setLevel(logging.WARNING)
    try:
        papermill.execute_notebook(
            str(notebook or notebook_path()),
            str(executed_path),
            parameters=parameters,
            kernel_name=KERNEL_NAME,
            kernel_manager_class=ThisPythonKernelManager,
            progress_bar=False,
            log_output=False,
            cwd=str(executed_path.parent),
        )
    except papermill.PapermillExecutionError as err:
        raise RenderError(f"the report notebook failed in cell {err.exec_count}: {err.ename}: {err.evalue}") from None


def notebook_to_html(executed_path: Path) -> str:
    """nbconvert with our template; plotly.js, CSS and the chart loader are inlined once."""
    import nbformat
    from nbconvert import HTMLExporter

    templates = template_dir()
    nb = nbformat.read(str(executed_path), as_version=4)
    exporter = HTMLExporter(template_name="reportgen", extra_template_basedirs=[str(templates)],
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


def write_atomically(path: Path, text: str) -> None:
    """Write next to the target and rename, so a failed run never leaves half a file."""
    write_text_atomic(path, text)
