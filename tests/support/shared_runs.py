"""Work that several test files read and none changes, done once: the engine's rule outputs of the sample
job and its whole report (session), the wheel built and installed (session), and a local Dask cluster (per
module). A test that writes into a shared result copies it
first (``shutil.copytree``)."""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

import pytest

from tests.support.paths import REAL, SAMPLE_DATA, need, real_jobs


@contextlib.contextmanager
def page_in_this_process():
    """The page of every ``generate``/``compare`` run inside it is made in this process, as on a one-CPU
    machine (``render.process.usable_cpus``), not by a worker process that imports papermill, nbconvert
    and pandas again for each run: those imports are done once per test session instead (a real job's
    generate: 0.6-0.9 s instead of 14-24 s at load 17). The page is the same either way
    (tests/e2e/test_page_worker.py). Patched in Python, not by ``REPORTGEN_NOTEBOOK_PROCESS``, so that
    a child process a test starts keeps its worker."""
    from reportgen.render import process

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(process, "usable_cpus", lambda: 1)
        yield


@pytest.fixture(scope="session")
def sample_rule_outputs(tmp_path_factory):
    """The rule-output folder (``profiler-reports``, data-quality.json, timeline.json) our engine makes
    from ``sample_data/``, made once per session. Read it; never write into it."""
    from reportgen.engine import analyze

    out = tmp_path_factory.mktemp("sample-engine") / "analysis"
    made = analyze(SAMPLE_DATA, out).report_dir
    before = tree_digest(out)
    yield made
    assert tree_digest(out) == before, "a test wrote into the shared sample_rule_outputs: copy it first"


@pytest.fixture(scope="session")
def sample_report(tmp_path_factory):
    """``reportgen generate sample_data`` (in this process; the page made by its worker process), once per
    session: the path of report.html, report.json beside it. Read them; never write beside them."""
    from reportgen.pipeline import generate

    out = tmp_path_factory.mktemp("sample-report") / "report.html"
    with page_in_this_process():
        generate(str(SAMPLE_DATA), out)
    before = tree_digest(out.parent)
    yield out
    assert tree_digest(out.parent) == before, "a test wrote into the shared sample_report's folder: copy it first"


@pytest.fixture(scope="session", params=real_jobs())
def real_report(request, tmp_path_factory):
    """One real SageMaker job of ../shared/fixtures/real, generated once per session (pytest runs the tests
    of one job together, then the next: one report is held at a time): its id, expected.json (the numbers
    the original report printed), the HTML and its tables by id, report.json, the fixture folder."""
    import json

    from reportgen.pipeline import generate
    from tests.support.html_tables import read_sagemaker_tables, read_tables

    folder = need(REAL / request.param)
    expected = json.loads((folder / "expected.json").read_text())
    out = tmp_path_factory.mktemp(request.param) / "report.html"
    with page_in_this_process():
        result = generate(str(folder), out)
    html = out.read_text(encoding="utf-8")
    return {"id": request.param, "expected": expected, "html": html, "tables": read_sagemaker_tables(html),
            "exact": read_tables(html), "json": json.loads(result.json_path.read_text()), "folder": folder}


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory) -> tuple[Path, Path]:
    """``pip wheel`` of this checkout (no build isolation: hatchling from the test extra, no network) and
    that wheel ``pip install --target``-ed into a folder of its own: (the wheel, the folder to put on
    PYTHONPATH). Built once: the packaging test and the notebook's installed-wheel test read both."""
    import subprocess
    import sys

    from tests.support.paths import ROOT

    wheels, target = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(wheels)], check=True, capture_output=True)
    (built,) = wheels.glob("reportgen-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(built)],
                   check=True, capture_output=True)
    return built, target


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by its relative path and SHA-256 (a shared result must stay unchanged)."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def dask_cluster():
    """A local two-process Dask cluster and its client (skipped without ``distributed``)."""
    pytest.importorskip("distributed")
    import logging

    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.ERROR)
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
