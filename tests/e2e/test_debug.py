"""``generate --debug`` (issue #31, item 6): the page is made in the run's own process, so ``breakpoint()`` in a
section builder reads the terminal; a builder that raises fails the run (exit 3) with its traceback, where
without ``--debug`` it costs only its section, shown on the page."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from reportgen.engine import analyze
from reportgen.errors import EXIT_INTERNAL, RenderError
from reportgen.pipeline import GenerateOptions, generate
from reportgen.render import process as page_process
from reportgen.report import build
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def rule_dir(tmp_path_factory) -> Path:
    return analyze(ROOT / "sample_data", tmp_path_factory.mktemp("engine") / "analysis").report_dir


def broken_gpu_memory(outputs):
    raise ValueError("planted failure in the gpu-memory builder")


def _plant(monkeypatch, builder) -> None:
    sections = tuple((sid, builder if sid == "gpu-memory" else b) for sid, b in build.SECTIONS)
    monkeypatch.setattr(build, "SECTIONS", sections)


def test_debug_fails_on_a_raising_builder_with_its_traceback(rule_dir, tmp_path, monkeypatch, capsys):
    def no_worker(*args, **kwargs):
        raise AssertionError("--debug must not start the page's worker process")

    # only render/process.py's view of subprocess: a module imported meanwhile keeps the real Popen
    monkeypatch.setattr(page_process, "subprocess", types.SimpleNamespace(Popen=no_worker, PIPE=subprocess.PIPE))
    _plant(monkeypatch, broken_gpu_memory)
    out = tmp_path / "out" / "report.html"
    with pytest.raises(RenderError) as caught:
        generate(str(rule_dir), out, GenerateOptions(debug=True))
    assert caught.value.exit_code == EXIT_INTERNAL == 3
    assert str(caught.value) == ("the analysis notebook failed in section gpu-memory: ValueError: planted failure in "
                                 "the gpu-memory builder")
    stderr = capsys.readouterr().err
    assert "Traceback" in stderr and "in broken_gpu_memory" in stderr and "in build_report" in stderr
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_without_debug_the_failing_section_is_a_note_on_the_page(rule_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("REPORTGEN_NOTEBOOK_PROCESS", "0")  # this process makes the page: the planted builder runs
    _plant(monkeypatch, broken_gpu_memory)
    out = tmp_path / "report.html"
    result = generate(str(rule_dir), out, GenerateOptions())
    data = json.loads(result.json_path.read_text(encoding="utf-8"))
    notes = data["sections"]["data-quality"]["notes"]
    note = [n for n in notes if n.startswith("section gpu-memory could not be built")]
    line = broken_gpu_memory.__code__.co_firstlineno + 1
    assert note == ["section gpu-memory could not be built: ValueError: planted failure in the gpu-memory builder "
                    f"(at broken_gpu_memory:{line})"]
    assert "This section could not be built from the data (ValueError: planted failure" in out.read_text("utf-8")


SCRIPT = textwrap.dedent("""
    import sys
    from reportgen.cli import main
    from reportgen.report import build

    def paused(outputs, _real=dict(build.SECTIONS)["gpu-memory"]):
        answer = 6 * 7
        breakpoint()
        return _real(outputs)

    build.SECTIONS = tuple((sid, paused if sid == "gpu-memory" else b) for sid, b in build.SECTIONS)
    sys.exit(main(["generate", sys.argv[1], "-o", sys.argv[2], "--debug"]))
""")


def test_breakpoint_in_a_builder_reads_the_terminal_under_debug(rule_dir, tmp_path):
    """A real ``reportgen generate --debug`` process: pdb stops in the builder and takes its commands from
    standard input (without --debug it read the worker's request pipe and quit at once: BdbQuit)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONBREAKPOINT", "GITHUB_STEP_SUMMARY")}
    environ["PYTHONPATH"] = str(ROOT)
    out = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(rule_dir), str(out)], input="p answer + 1\nc\n",
                         capture_output=True, text=True, env=environ, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "(Pdb) 43" in run.stdout  # the command typed on stdin ran in the builder's frame
    assert "paused()" in run.stdout
    data = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert not [n for n in data["sections"]["data-quality"]["notes"] if "gpu-memory" in n]  # built after `c`
    assert "gpu-memory" in data["sections"]


RAISING = textwrap.dedent("""
    import sys
    from reportgen.cli import main
    from reportgen.report import build

    def broken(outputs):
        raise KeyError("planted")

    build.SECTIONS = tuple((sid, broken if sid == "gpu-memory" else b) for sid, b in build.SECTIONS)
    sys.exit(main(["generate", sys.argv[1], "-o", sys.argv[2], *sys.argv[3:]]))
""")


def test_the_command_line_exits_3_with_the_traceback_under_debug_and_0_without(rule_dir, tmp_path):
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    environ.update(PYTHONPATH=str(ROOT), REPORTGEN_NOTEBOOK_PROCESS="0")  # without --debug: the page made here too
    out = tmp_path / "report.html"
    debug = subprocess.run([sys.executable, "-c", RAISING, str(rule_dir), str(out), "--debug"], capture_output=True,
                           text=True, env=environ, timeout=300)
    assert debug.returncode == 3
    assert "Traceback (most recent call last)" in debug.stderr and ", in broken\n" in debug.stderr
    assert debug.stderr.rstrip().splitlines()[-1] == ("reportgen: error: the analysis notebook failed in section "
                                                      "gpu-memory: KeyError: 'planted'")
    assert not out.exists()
    plain = subprocess.run([sys.executable, "-c", RAISING, str(rule_dir), str(out)], capture_output=True, text=True,
                           env=environ, timeout=300)
    assert plain.returncode == 0, plain.stderr
    assert "Traceback" not in plain.stderr
    page = out.read_text("utf-8")
    assert "This section could not be built from the data (KeyError: &#39;planted&#39; (at broken:7))." in page
