"""``reportgen trend``: three runs' report.json in one table, regressions marked; run as a user would."""

from __future__ import annotations

import json
import shutil

import pytest

from reportgen.compare.regression import judge
from tests.support.cli import run_cli
from testdata.synthetic import Scenario, generate

HOSTILE = '<b>pr "1"</b> & *x* [l](http://e.invalid)'


run = run_cli


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """main, a noise-only re-run, and a run with 8 % longer steps: their report.json."""
    out = tmp_path_factory.mktemp("trend")
    for name, seed, step_ms in (("main", 1, 300), ("rerun", 2, 300), ("slower", 4, 324)):
        generate(out / name, nodes=1, cores=4, gpus=1, duration_s=300, interval_ms=500, seed=seed,
                 scenario=Scenario(step_ms=step_ms))
        result = run("generate", str(out / name), "-o", str(out / name / "report.html"), "-q")
        assert result.returncode == 0, result.stderr
    return out, [out / n / "report.json" for n in ("main", "rerun", "slower")]


def test_trend_markdown_marks_the_regression(three):
    out, reports = three
    result = run("trend", *map(str, reports), "-o", "-", "--format", "md", "--json", str(out / "trend.json"))
    assert result.returncode == 0, result.stderr
    text = result.stdout
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| Run")]
    assert [r.split(" | ")[0] for r in rows] == ["| main", "| rerun", "| slower"]  # labels: the job names
    assert "first run" in rows[0] and "REGRESSION" not in rows[1] and "REGRESSION +" in rows[2]
    assert "**Regressions: slower**" in text
    data = json.loads((out / "trend.json").read_text(encoding="utf-8"))
    sections = [json.loads(p.read_text(encoding="utf-8"))["sections"] for p in reports]
    expected = judge(sections[1], sections[2], 0.05)
    got = data["runs"][2]["against_previous"]
    assert got["ratio"] == pytest.approx(expected.ratio) and got["tripped"] is True
    assert data["runs"][1]["against_previous"]["tripped"] is False
    assert [r["steps_per_s"] for r in data["runs"]] == pytest.approx([1 / r["median_step_s"] for r in data["runs"]])
    assert 0.29 < data["runs"][0]["median_step_s"] < 0.31 and 0.31 < data["runs"][2]["median_step_s"] < 0.34
    assert all(r["gpu_p50_pct"] > 50 for r in data["runs"])  # the scenario's GPUs are busy


def test_trend_html_is_standalone_and_escapes_labels(three, tmp_path):
    _, reports = three
    result = run("trend", *map(str, reports), "-o", str(tmp_path / "t.html"), "--label", "main", "--label", HOSTILE,
                 "--label", "pr-2", "--threshold", "10%", "-q")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "t.html").read_text(encoding="utf-8")
    assert "<script" not in page and "http://" not in page.replace("http://e.invalid", "") and "src=" not in page
    assert "<b>pr" not in page and "&lt;b&gt;pr &quot;1&quot;&lt;/b&gt; &amp; *x*" in page
    assert "REGRESSION" not in page.split("<tbody>")[1]  # +8 % is within a 10 % threshold
    assert "No regression." in page


def test_trend_with_causes_and_usage_errors(tmp_path, sample_report):
    for run_folder in ("a", "b"):  # the sample's report.json twice: the same run
        (tmp_path / run_folder).mkdir()
        shutil.copyfile(sample_report.with_suffix(".json"), tmp_path / run_folder / "report.json")
    reports = [str(tmp_path / d / "report.json") for d in ("a", "b")]
    result = run("trend", *reports, "-o", "-", "--format", "md")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| sample")]
    assert len(rows) == 2 and rows[0].startswith("| sample\\_data \\#1 | problems |")
    # gpu-memory-growth is minor on the sample: its peak is memory-controller activity (GPUMemoryUtilization), which
    # says nothing of running out (issue 48), so trend lists the serious causes only
    assert rows[1].endswith("| input-pipeline, step-outliers |")
    assert "+0.0 % \\[" in rows[1]  # the same run: no change, with its interval
    bad = run("trend", reports[0], "-o", str(tmp_path / "t.html"))
    assert bad.returncode == 2 and "at least two" in bad.stderr
    bad = run("trend", *reports, "--label", "one", "-o", str(tmp_path / "t.html"))
    assert bad.returncode == 2 and "--label given 1 times for 2 reports" in bad.stderr
    bad = run("trend", reports[0], str(tmp_path / "nope.json"), "-o", str(tmp_path / "t.html"))
    assert bad.returncode == 2 and "no such file" in bad.stderr
    assert not (tmp_path / "t.html").exists()
