"""The analysis notebook as a Jupyter user runs it: default parameters, any source, live charts."""

from __future__ import annotations

import nbformat

from reportgen.render.html import execute_notebook
from reportgen.resources import notebook_path


def test_notebook_runs_on_its_default_source_the_raw_sample(tmp_path, monkeypatch):
    # Run as in Jupyter: from the notebooks/ folder, with the parameters cell as committed.
    executed = notebook_path().parent / f".test-executed-{tmp_path.name}.ipynb"
    try:
        execute_notebook({}, executed)
        nb = nbformat.read(executed, as_version=4)
    finally:
        executed.unlink(missing_ok=True)
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    sections = [o.metadata["reportgen"]["id"] for o in outputs
                if o.output_type == "display_data" and "reportgen" in o.get("metadata", {})
                and o.metadata["reportgen"]["role"] == "section"]
    assert sections[:3] == ["training-job-summary", "system-usage-statistics", "utilization-over-time"]
    live = [o for o in outputs if o.output_type == "display_data" and "application/vnd.plotly.v1+json" in o.data]
    assert len(live) >= 20  # charts drawn by Jupyter's plotly renderer, not only as page specs
    header = next(o for o in outputs if o.output_type == "display_data" and
                  o.get("metadata", {}).get("reportgen", {}).get("role") == "header")
    assert header.metadata["reportgen"]["job_name"] == "sample_data"
