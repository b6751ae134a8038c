"""The analysis notebook: generated from the one section order, run by papermill as a Jupyter user runs it
(repository root, notebooks/, an installed wheel), and its failures named after the section."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from reportgen.errors import InputError, RenderError
from reportgen.render.html import execute_notebook
from reportgen.report.sections import SECTION_IDS
from reportgen.resources import notebook_path
from tests.support.paths import ROOT


def _make_notebook_module():
    spec = importlib.util.spec_from_file_location("make_notebook", ROOT / "scripts" / "make_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_notebook_is_what_the_section_order_makes():
    made = nbformat.writes(_make_notebook_module().analysis_notebook()) + "\n"  # nbformat.write ends the file
    committed = (ROOT / "notebooks" / "profiler_report.ipynb").read_text(encoding="utf-8")
    assert committed == made, "notebooks/profiler_report.ipynb is stale: run python scripts/make_notebook.py"


def test_notebook_shows_every_section_once_in_the_section_order():
    nb = nbformat.read(str(notebook_path()), as_version=4)
    shown = [cell.source.split('"')[1] for cell in nb.cells if cell.source.startswith("report.show(")]
    assert shown == list(SECTION_IDS)


def _sections_shown(nb) -> list[str]:
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    return [o.metadata["reportgen"]["id"] for o in outputs
            if o.output_type == "display_data" and o.get("metadata", {}).get("reportgen", {}).get("role") == "section"]


def _papermill(notebook: Path, out: Path, *args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "papermill", str(notebook), str(out), "--no-progress-bar", *args],
                          cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("where", ["repository root", "notebooks/"])
def test_notebook_runs_with_papermill_on_its_default_source(tmp_path, where):
    cwd = ROOT if where == "repository root" else ROOT / "notebooks"
    out = tmp_path / "out.ipynb"
    run = _papermill(Path("notebooks/profiler_report.ipynb") if where == "repository root"
                     else Path("profiler_report.ipynb"), out, cwd=cwd)
    assert run.returncode == 0, run.stderr[-2000:]
    nb = nbformat.read(str(out), as_version=4)
    assert _sections_shown(nb)[:3] == ["training-job-summary", "system-usage-statistics", "utilization-over-time"]
    header = next(o for c in nb.cells for o in c.get("outputs", [])
                  if o.get("metadata", {}).get("reportgen", {}).get("role") == "header")
    assert header.metadata["reportgen"]["job_name"] == "sample_data"
    live = [o for c in nb.cells for o in c.get("outputs", []) if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert len(live) >= 20  # charts drawn by Jupyter's plotly renderer, not only as page specs


def test_notebook_runs_from_an_installed_wheel_with_only_the_source_given(tmp_path, installed_wheel):
    _, target = installed_wheel
    env = {"PYTHONPATH": str(target)}
    bundled = target / "reportgen" / "_bundled" / "notebooks" / "profiler_report.ipynb"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = _papermill(bundled, tmp_path / "out.ipynb", "-p", "source", str(ROOT / "sample_data"), cwd=elsewhere,
                     env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    nb = nbformat.read(str(tmp_path / "out.ipynb"), as_version=4)
    assert "data-quality" in _sections_shown(nb)
    # and without a source, a wheel says what to give rather than failing on a path
    run = _papermill(bundled, tmp_path / "out2.ipynb", cwd=elsewhere, env=env)
    assert run.returncode == 1
    assert "set the notebook's source parameter (papermill ... -p source <folder>)" in run.stderr


def test_failing_section_cell_fails_the_run_naming_the_section(tmp_path):
    nb = nbformat.read(str(notebook_path()), as_version=4)
    cell = next(c for c in nb.cells if c.source == 'report.show("gpu-memory")')
    cell.source = 'report.show("gpu-memory")\nraise ValueError("chart of doom")'
    broken = tmp_path / "broken.ipynb"
    nbformat.write(nb, str(broken))
    with pytest.raises(RenderError) as info:
        execute_notebook({"source": str(ROOT / "sample_data")}, notebook=broken, cwd=tmp_path)
    assert str(info.value) == "the analysis notebook failed in section gpu-memory: ValueError: chart of doom"


def test_unreadable_rule_output_in_the_notebook_stays_an_input_error(tmp_path):
    rules = tmp_path / "profiler-reports"
    rules.mkdir()
    (rules / "CPUBottleneck.json").write_text("{not json")
    with pytest.raises(InputError) as info:
        execute_notebook({"source": str(tmp_path)}, cwd=tmp_path)
    assert "CPUBottleneck.json" in str(info.value)


@pytest.mark.parametrize("page_process, imported", [("1", "[]"), ("0", "['papermill']")])
def test_generate_on_a_local_folder_does_not_import_boto3(tmp_path, page_process, imported):
    """papermill's S3 handler would import boto3 (a third of papermill's import time) for nothing; with the
    page's worker process (render/process.py) this process imports not even papermill."""
    code = ("import sys; from pathlib import Path; from reportgen.pipeline import generate; "
            f"generate({str(ROOT / 'sample_data')!r}, Path({str(tmp_path / 'r.html')!r})); "
            "print(sorted(m for m in ('boto3', 'botocore', 'papermill') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "REPORTGEN_NOTEBOOK_PROCESS": page_process})
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == imported
