"""The command line as a user meets it: one-line errors, exit codes, atomic output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.paths import REAL, need

run = run_cli


def run_quiet(*args):
    return run(*args, "--quiet")


def one_line_error(result, code=2):
    assert result.returncode == code
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("reportgen: error: ")
    return lines[0]


def test_help_lists_generate():
    result = run("generate", "--help")
    assert result.returncode == 0
    assert "SOURCE" in result.stdout and "--output" in result.stdout and "--quiet" in result.stdout


def test_missing_folder(tmp_path):
    line = one_line_error(run_quiet("generate", str(tmp_path / "nope"), "-o", str(tmp_path / "r.html")))
    assert line == f"reportgen: error: no folder {tmp_path / 'nope'} here ({Path.cwd()})"
    assert list(tmp_path.iterdir()) == []


def test_folder_without_rule_outputs(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("hello")
    line = one_line_error(run_quiet("generate", str(tmp_path / "empty"), "-o", str(tmp_path / "r.html")))
    assert "No profiler data in" in line and "expected rule outputs (profiler-reports/*.json) or raw profiler data" in line
    assert not (tmp_path / "r.html").exists()


def test_malformed_rule_json_names_the_file_and_writes_nothing(tmp_path):
    rules = tmp_path / "job" / "profiler-reports"
    rules.mkdir(parents=True)
    (rules / "StepOutlier.json").write_text('{"RuleTriggered": 0, "Violations": ')
    out = tmp_path / "r.html"
    out.write_text("previous report")
    line = one_line_error(run_quiet("generate", str(tmp_path / "job"), "-o", str(out)))
    assert "StepOutlier.json: malformed JSON at line 1" in line
    assert out.read_text() == "previous report"  # the old report is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job", "r.html"]  # no temp files left


def test_rule_json_that_is_not_an_object(tmp_path):
    rules = tmp_path / "job" / "profiler-reports"
    rules.mkdir(parents=True)
    (rules / "BatchSize.json").write_text("[1, 2]")
    line = one_line_error(run_quiet("generate", str(tmp_path / "job"), "-o", str(tmp_path / "r.html")))
    assert "BatchSize.json: expected a JSON object, found list" in line


@pytest.mark.fixtures
def test_unwritable_output_folder(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    folder = need(REAL / "beauvilerobed-dd30fc8e")
    line = one_line_error(run_quiet("generate", str(folder), "-o", str(blocker / "r.html")))
    assert "is a file" in line


@pytest.mark.fixtures
def test_generate_quiet_writes_html_and_json(tmp_path):
    folder = need(REAL / "beauvilerobed-dd30fc8e")
    result = run("generate", str(folder), "-o", str(tmp_path / "out" / "r.html"), "-q")
    assert result.returncode == 0 and result.stderr == ""
    data = json.loads((tmp_path / "out" / "r.json").read_text())
    assert data["schema_version"] == "1.2"
    assert data["job"]["name"] == "beauvilerobed-dd30fc8e"
    summary = data["sections"]["training-job-summary"]
    assert (summary["job_duration_s"], summary["initialization_s"], summary["training_loop_pct"]) == (625, 302, 51)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["r.html", "r.json"]
