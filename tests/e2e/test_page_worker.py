"""The page's worker process (``render.process`` / ``render.worker``): started before the engine, it makes the
same page as this process would, keeps the notebook's errors as they are, and a dead or unneeded worker
never leaves the run hanging or half done."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from reportgen.errors import InputError, RenderError
from reportgen.render import process as page_process
from reportgen.render.html import render_page
from reportgen.render.process import NotebookProcess
from reportgen.resources import notebook_path
from tests.support.paths import ROOT

_MINUTE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")


@pytest.fixture(scope="module")
def rule_dir(sample_rule_outputs) -> Path:
    return sample_rule_outputs


def _params(rule_dir: Path, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    return {"source": str(rule_dir), "output_dir": str(out), "standalone": True, "job_name": "worker-test"}


def test_the_worker_makes_the_page_this_process_makes(rule_dir, tmp_path):
    with NotebookProcess(tmp_path) as maker:
        assert maker.process is not None and maker.process.pid > 0  # a second process really made it
        page = maker.render(_params(rule_dir, tmp_path / "w"), keep_notebook=True)
        assert maker.process.wait(timeout=30) == 0  # it ends by itself once it has answered
    here = render_page(_params(rule_dir, tmp_path / "h"))
    assert _MINUTE.sub("T", page.html) == _MINUTE.sub("T", here.html)
    # the whole page: plotly.js inlined (gzip'd, in base64: ~0.59 MB) and the job's name
    assert "worker-test" in page.html and '<script type="application/gzip-base64" id="plotly-js">' in page.html
    assert len(page.html) > 600_000
    executed = nbformat.reads(page.notebook, as_version=4)
    assert any(o.get("metadata", {}).get("reportgen", {}).get("id") == "data-quality"
               for c in executed.cells for o in c.get("outputs", []))
    assert (tmp_path / "w" / "report.json").read_text() != ""


def test_an_unreadable_rule_output_stays_an_input_error_through_the_worker(tmp_path):
    rules = tmp_path / "profiler-reports"
    rules.mkdir()
    (rules / "CPUBottleneck.json").write_text("{not json")
    with NotebookProcess(tmp_path) as maker, pytest.raises(InputError) as info:
        maker.render({"source": str(tmp_path), "output_dir": str(tmp_path)})
    assert "CPUBottleneck.json" in str(info.value)


def test_a_failing_cell_is_named_through_the_worker(rule_dir, tmp_path):
    nb = nbformat.read(str(notebook_path()), as_version=4)
    cell = next(c for c in nb.cells if c.source == 'report.show("gpu-memory")')
    cell.source = 'report.show("gpu-memory")\nraise ValueError("chart of doom")'
    broken = tmp_path / "broken.ipynb"
    nbformat.write(nb, str(broken))
    with NotebookProcess(tmp_path) as maker, pytest.raises(RenderError) as info:
        maker.render(_params(rule_dir, tmp_path / "o"), notebook=broken)
    assert str(info.value) == "the analysis notebook failed in section gpu-memory: ValueError: chart of doom"


def test_a_killed_worker_costs_only_the_worker_the_page_is_made_here(rule_dir, tmp_path):
    notices: list[str] = []
    maker = NotebookProcess(tmp_path, notices.append)
    maker.process.send_signal(signal.SIGKILL)
    maker.process.wait(timeout=30)
    page = maker.render(_params(rule_dir, tmp_path / "o"))
    maker.close()
    assert "worker-test" in page.html and (tmp_path / "o" / "report.json").is_file()
    assert notices == ["the page's worker process ended without a page (exit code -9); making the page in this "
                       "process"]


def test_a_worker_that_cannot_start_its_module_costs_only_the_worker(rule_dir, tmp_path, monkeypatch):
    """An interpreter where ``-m reportgen.render.worker`` fails (a frozen or broken install): same page."""
    monkeypatch.setattr(sys, "executable", "/bin/false")
    notices: list[str] = []
    with NotebookProcess(tmp_path, notices.append) as maker:
        page = maker.render(_params(rule_dir, tmp_path / "o"))
    assert "worker-test" in page.html
    assert notices and notices[0].startswith("the page's worker process ended without a page (exit code 1")


def test_an_unneeded_worker_ends_at_once_when_the_run_fails_before_its_page(tmp_path):
    maker = NotebookProcess(tmp_path)
    worker = maker.process
    started = time.monotonic()
    maker.close()  # what generate's finally does after an input error in the engine
    assert worker.returncode == -signal.SIGKILL and time.monotonic() - started < 5  # not waited for
    assert maker.process is None
    maker.close()  # twice is harmless


def test_a_bad_source_fails_as_fast_as_before(tmp_path):
    """The worker's imports never delay an input error (it is killed, not waited for)."""
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "reportgen", "generate", str(tmp_path / "nothing-here"), "-o",
                          str(tmp_path / "r.html")], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert run.returncode == 2 and run.stderr.startswith("reportgen: error: ")
    assert not (tmp_path / "r.html").exists()
    assert time.monotonic() - started < 30


def test_the_worker_keeps_its_templates_compiled_and_makes_the_same_page(rule_dir, tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    pages, kept = [], []
    for run in ("filled", "served"):
        (tmp_path / run).mkdir()
        with NotebookProcess(tmp_path / run, template_folder=folder) as maker:
            assert maker.process is not None and maker.process.args[-2:] == ["--template-cache", str(folder)]
            pages.append(maker.render(_params(rule_dir, tmp_path / run / "o")).html)
        kept.append(sorted(p.name for p in folder.glob("*.jinja")))
    assert len(kept[0]) >= 14 and kept[1] == kept[0]  # the 13 block templates and the exporter's, kept once
    here = render_page(_params(rule_dir, tmp_path / "h")).html
    assert _MINUTE.sub("T", pages[0]) == _MINUTE.sub("T", pages[1]) == _MINUTE.sub("T", here)


_LAZY_LEFT = r"""
import json, sys
from reportgen.render import worker
from reportgen.render.html import render_page
from reportgen.render.lazy_imports import LAZY, LEFT_OUT
worker.warm_up()
page = render_page(json.loads(sys.argv[1]))
state = {name: type(sys.modules[name]).__name__ for name in LAZY if name in sys.modules}
left = [name for name in LEFT_OUT if name in sys.modules]
import nbconvert.postprocessors
from reportgen.render.stand_ins import PLUGINS, STAND_INS
from papermill import engines
never = ["jupyter_client", "zmq", "tornado", "mistune", "bs4", "html5lib", PLUGINS, *STAND_INS, "IPython.core.completer"]
print(json.dumps({"state": state, "page": len(page.html), "left": left,
                  "serve": nbconvert.postprocessors.ServePostProcessor is None, "tornado.web": "tornado.web" in sys.modules,
                  "loaded": [name for name in never if name in sys.modules],
                  "stood_in": [type(engines.PapermillNotebookClient).__name__, engines.entrypoints.__doc__]}))
"""


def test_the_worker_makes_its_page_without_running_its_lazy_packages(rule_dir, tmp_path):
    """The packages ``render.lazy_imports`` leaves lazy are imported by the warm-up and never used by a page (a
    library that starts to use one would load it, correctly, and this says to drop it from the list)."""
    run = subprocess.run([sys.executable, "-c", _LAZY_LEFT, json.dumps(_params(rule_dir, tmp_path / "o"))],
                         capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["page"] > 600_000
    assert "requests" in found["state"] and "click" in found["state"]  # papermill's, imported by the warm-up
    assert found["state"] == dict.fromkeys(found["state"], "_LazyModule")
    # nbconvert's serve post-processor, left out by the warm-up, is not imported by the page either
    assert found["left"] == [] and found["serve"] and not found["tornado.web"]
    # what render.stand_ins stands in for (nbclient's kernel client, nbconvert's markdown filter, sanitizer and bs4,
    # papermill's plugins), and what they would bring, is never loaded by the warm-up nor by the page; nor is IPython's
    # completer (render.inprocess's shell has none)
    assert found["loaded"] == []
    assert found["stood_in"] == ["Deferred", "A stand-in that finds no entry point (render.stand_ins.no_plugins)."]


def test_without_a_worker_the_page_is_made_here(rule_dir, tmp_path, monkeypatch):
    def no_processes(*args, **kwargs):
        raise OSError("fork: resource temporarily unavailable")

    monkeypatch.setattr(subprocess, "Popen", no_processes)
    with NotebookProcess(tmp_path) as maker:
        assert maker.process is None
        page = maker.render(_params(rule_dir, tmp_path / "o"))
    assert "worker-test" in page.html


def test_one_usable_cpu_makes_the_page_here(tmp_path, monkeypatch):
    """A second process only pays off where it has a core of its own."""
    monkeypatch.setattr(page_process, "usable_cpus", lambda: 1)
    with NotebookProcess(tmp_path) as maker:
        assert maker.process is None


def test_the_worker_says_the_page_caches_placeholder_for_the_time(rule_dir, tmp_path):
    with NotebookProcess(tmp_path) as maker:
        assert maker.process is not None
        page = maker.render(_params(rule_dir, tmp_path / "w"), generated_at="reportgen-time-0123abcd")
    assert "Generated reportgen-time-0123abcd by reportgen" in page.html and not _MINUTE.search(page.html)
    assert '"generated_at": "reportgen-time-0123abcd"' in (tmp_path / "w" / "report.json").read_text()


def test_a_second_generate_serves_the_first_page(tmp_path):
    """Through the command line: the first run's worker makes the page with the placeholder; the second serves it,
    the same bytes with its own time."""
    from tests.support.cli import run_cli

    env = {"REPORTGEN_PAGE_CACHE": None}
    sample = ROOT / "sample_data"
    runs = []
    for name in ("first", "second"):
        done = run_cli("generate", sample, "-o", tmp_path / f"{name}.html", "--cache-dir", tmp_path / "cache",
                       env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        runs.append(done.stderr)
    assert "executing the analysis notebook" in runs[0] and "from the page cache" in runs[1]
    for suffix in (".html", ".json"):
        first, second = ((tmp_path / f"{name}{suffix}").read_text() for name in ("first", "second"))
        assert _MINUTE.search(second) and _MINUTE.sub("T", first) == _MINUTE.sub("T", second)
