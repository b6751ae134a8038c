"""``reportgen compare`` and the cost of a run: real fixture jobs, the published case study, missing data."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.cli import main
from reportgen.compare.build import build_comparison
from reportgen.compare.sections.rules import rule_status
from reportgen.compare.side import load_side
from reportgen.compare.output import md_escape, to_markdown
from reportgen.pipeline import CostOptions
from reportgen.cost import compare_costs, load_prices, make_run_cost, money, run_cost
from tests.support.paths import REAL, ROOT, need

A_JOB, B_JOB = "beauvilerobed-dd30fc8e", "chloeqiao-cacc7cc5"
CPU_ONLY_JOB = "aitormagan-e461f460"  # no GPU metrics, no GPU operators
NO_FRAMEWORK_JOB = "araz1103-f6ddb38f"  # GPU metrics, but no framework metrics


def _rules_dir(job: str) -> Path:
    return need(REAL / job) / "profiler-reports"


def _run(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reportgen", *map(str, argv)], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


# ------------------------------------------------------------------------------------------ cost


def test_case_study_cost_and_saving_from_its_figures():
    """Run 1: 503 s on 3 × ml.p3.8xlarge at $14.688/h; run 2: 502 s on 2 × ml.p3.2xlarge at $3.825/h."""
    prices = load_prices()
    assert prices.price("ml.p3.8xlarge", "us-east-1") == 14.688
    assert prices.price("ml.p3.2xlarge", "us-east-1") == 3.825
    a = make_run_cost(503, "ml.p3.8xlarge", 3, "us-east-1", prices)
    b = make_run_cost(502, "ml.p3.2xlarge", 2, "us-east-1", prices)
    assert a.cost == pytest.approx(503 * 3 * 14.688 / 3600) and a.cost_rounded == 6.16
    assert b.cost == pytest.approx(502 * 2 * 3.825 / 3600) and b.cost_rounded == 1.07
    saving = compare_costs(a, b)
    # The case study prints 82.6 %: (6.16 - 1.07) / 6.16. Unrounded costs give 82.7 %.
    assert round(saving["saving_pct_from_rounded"], 1) == 82.6
    assert round(saving["saving_pct"], 1) == 82.7
    assert saving["saving_rounded"] == 5.09


def test_run_cost_formula_and_rounding():
    assert run_cost(3600, 2, 1.5) == 3.0
    assert money(0.125) == 0.13 and money(1.06675) == 1.07 and money(6.15672) == 6.16  # half up
    assert make_run_cost(100, "ml.unknown", 1, "us-east-1", load_prices()).missing().startswith("no price")
    assert make_run_cost(100, None, None, None, load_prices()).missing() == "the instance type is unknown"


def test_shipped_price_table_is_dated_sourced_and_complete():
    prices = load_prices()
    assert prices.taken and "pricing" in prices.source and prices.approximate
    for instance in ("ml.p3.2xlarge", "ml.p3.8xlarge", "ml.p3.16xlarge", "ml.g4dn.xlarge", "ml.g4dn.2xlarge",
                     "ml.g4dn.12xlarge", "ml.g5.xlarge", "ml.g5.2xlarge", "ml.g5.12xlarge", "ml.m5.xlarge",
                     "ml.m5.2xlarge", "ml.m5.4xlarge", "ml.c5.xlarge", "ml.c5.2xlarge", "ml.p4d.24xlarge"):
        assert prices.price(instance, "us-east-1") > 0, instance


def test_user_prices_override_per_instance_and_region(tmp_path):
    user = tmp_path / "prices.toml"
    user.write_text('[meta]\ntaken = "2030-01"\nsource = "our contract"\napproximate = false\n'
                    '[regions.us-east-1]\n"ml.p3.2xlarge" = 2.0\n[regions.eu-west-1]\n"ml.p3.2xlarge" = 4.5\n')
    prices = load_prices(user)
    assert prices.price("ml.p3.2xlarge", "us-east-1") == 2.0
    assert prices.price("ml.p3.8xlarge", "us-east-1") == 14.688  # untouched entries stay
    assert prices.price("ml.p3.2xlarge", "eu-west-1") == 4.5
    assert prices.price("ml.p3.8xlarge", "eu-west-1") is None
    assert prices.taken == "2030-01" and not prices.approximate


def test_bad_prices_file_is_a_one_line_input_error(tmp_path, capsys):
    bad = tmp_path / "p.toml"
    bad.write_text('[regions.us-east-1]\n"ml.p3.2xlarge" = "cheap"\n')
    out = tmp_path / "c.html"
    code = main(["compare", "x", "y", "-o", str(out), "--prices", str(bad), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "price must be a number" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_count_below_one_is_refused(tmp_path, capsys):
    assert main(["compare", "x", "y", "-o", str(tmp_path / "c.html"), "--count-a", "0", "-q"]) == 2
    assert "--count-a must be at least 1" in capsys.readouterr().err


def test_rule_status():
    assert rule_status(3, 0) == "fixed" and rule_status(0, 2) == "new" and rule_status(1, 1) == "still firing"
    assert rule_status(0, 0) == "not firing" and rule_status(None, 1) == "new" and rule_status(2, None) == "fixed"
    # a side that could not judge the rule (too little data, no GPU) fixes nothing and adds nothing
    assert rule_status(3, 0, b_evaluated=False) == "not evaluated in B"
    assert rule_status(0, 2, a_evaluated=False) == "not evaluated in A"
    assert rule_status(3, 0, a_evaluated=True, b_evaluated=True) == "fixed"


# ------------------------------------------------------------------------------------------ real jobs


@pytest.fixture(scope="module")
def real_pair(tmp_path_factory):
    """Each side's own generate report.json (made in this process: the command under test is compare), and
    the comparison (HTML + compare.json) of the two, made by ``reportgen compare`` as a user runs it."""
    from reportgen.pipeline import generate
    from tests.support.shared_runs import page_in_this_process

    out = tmp_path_factory.mktemp("compare")
    with page_in_this_process():
        for job in (A_JOB, B_JOB):
            generate(str(need(REAL / job)), out / f"{job}.html")
    run = _run("compare", REAL / A_JOB, REAL / B_JOB, "-o", out / "compare.html", "-q",
               "--instance-a", "ml.p3.8xlarge", "--count-a", "3", "--instance-b", "ml.p3.2xlarge", "--count-b", "2")
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    load = lambda name: json.loads((out / name).read_text(encoding="utf-8"))  # noqa: E731
    return out, load(f"{A_JOB}.json")["sections"], load(f"{B_JOB}.json")["sections"], load("compare.json")


@pytest.mark.fixtures
def test_compare_numbers_equal_each_sides_own_report(real_pair):
    _out, ra, rb, cmp = real_pair
    sec = cmp["sections"]
    assert cmp["a"]["name"] == A_JOB and cmp["b"]["name"] == B_JOB
    # duration and phases
    assert sec["duration-phases"]["a"] == ra["training-job-summary"]
    assert sec["duration-phases"]["b"] == rb["training-job-summary"]
    rows = {r["phase"]: r for r in sec["duration-phases"]["rows"]}
    assert rows["job_duration_s"]["a_s"] == ra["training-job-summary"]["job_duration_s"] == 625
    assert rows["job_duration_s"]["b_s"] == rb["training-job-summary"]["job_duration_s"] == 715
    assert rows["job_duration_s"]["delta_s"] == 90
    # per-node utilization: every stat of every row of each side's system usage table
    nodes = {(r["metric"], r["node"]): r for r in sec["utilization"]["nodes"]}
    for own, side in ((ra, "a"), (rb, "b")):
        for row in own["system-usage-statistics"]["rows"]:
            entry = nodes[(row["metric"], row["node"])]
            for stat in ("max", "p99", "p95", "p90", "p50", "min"):
                if stat in row:
                    assert entry[side][stat] == row[stat], (row, stat)
    gpu = next(r for r in sec["utilization"]["overall"] if r["metric"] == "GPU")
    assert gpu["a"]["p95"] == 22.0 and gpu["b"]["p95"] == 12.0 and gpu["delta"]["p95"] == -10.0
    # step durations, operators, rules
    assert sec["step-durations"]["a"]["nodes"] == ra["step-duration-analysis"]["nodes"]
    assert sec["step-durations"]["b"]["nodes"] == rb["step-duration-analysis"]["nodes"]
    for kind in ("cpu", "gpu"):
        assert sec["operators"][kind]["a"] == ra[f"{kind}-operators-overview"]["rows"][:10]
        assert sec["operators"][kind]["b"] == rb[f"{kind}-operators-overview"]["rows"][:10]
    triggered_a = {r["rule"]: r["times_triggered"] for r in ra["rules-summary-section"]["rows"]}
    triggered_b = {r["rule"]: r["times_triggered"] for r in rb["rules-summary-section"]["rows"]}
    for row in sec["rules"]["rows"]:
        assert row["a_times_triggered"] == triggered_a[row["rule"]]
        assert row["b_times_triggered"] == triggered_b[row["rule"]]
    assert sorted(sec["rules"]["still_firing"]) == sorted(r for r in triggered_a if triggered_a[r] and triggered_b[r])
    # cost: each side's duration from its own report
    cost = sec["cost"]
    assert cost["a"]["duration_s"] == 625 and cost["a"]["instance_count"] == 3
    assert cost["a"]["cost"] == pytest.approx(625 * 3 * 14.688 / 3600)
    assert cost["b"]["cost"] == pytest.approx(715 * 2 * 3.825 / 3600)
    assert cost["saving_pct"] == pytest.approx((cost["a"]["cost"] - cost["b"]["cost"]) / cost["a"]["cost"] * 100)
    assert cost["prices"]["taken"] and cost["prices"]["approximate"] is True
    assert sec["verdict"]["speed"] == "slower" and sec["verdict"]["speed_from"] == "per step"
    # different work (compare.work): each side's steps as its own report's StepOutlier counted them
    work = sec["verdict"]["work"]
    for side, own in (("a", ra), ("b", rb)):
        (node,) = own["step-duration-analysis"]["nodes"].values()
        assert work[side]["steps"] == sum(node["histogram"]["counts"]) + node["number_of_outliers"]
    assert (work["a"]["steps"], work["b"]["steps"]) == (1203, 505) and not work["a"]["estimated"]
    assert sec["verdict"]["duration_a_s"] == 625 and sec["verdict"]["duration_b_s"] == 715  # kept, raw


@pytest.mark.fixtures
@pytest.mark.browser
def test_compare_html_opens_offline_without_console_errors(real_pair):
    from tests.support.browser import visit

    out, *_ = real_pair
    html = (out / "compare.html").read_text(encoding="utf-8")
    assert "<title>Comparison – " in html and 'id="sec-verdict"' in html and 'id="utilization-nodes"' in html
    page = visit(out / "compare.html", probe="() => ({charts: document.querySelectorAll('.chart-canvas').length,"
                                             " fallbacks: document.querySelectorAll('.chart-fallback').length})")
    assert page.console_errors == []
    assert [url for url in page.requests if not url.startswith("file://")] == []
    assert page.dom["charts"] == 3 and page.dom["fallbacks"] == 0


@pytest.mark.fixtures
def test_case_study_in_the_comparison_model():
    """The case study's durations laid onto two real jobs: the page and its data print the case study's figures."""
    a = load_side("A", _rules_dir(A_JOB), name="run-1", instance_type="ml.p3.8xlarge", instance_count=3)
    b = load_side("B", _rules_dir(B_JOB), name="run-2", instance_type="ml.p3.2xlarge", instance_count=2)
    a.report.section("training-job-summary").data["job_duration_s"] = 503
    b.report.section("training-job-summary").data["job_duration_s"] = 502
    report = build_comparison(a, b)
    cost = report.section("cost").data
    assert (cost["a"]["cost_rounded"], cost["b"]["cost_rounded"]) == (6.16, 1.07)
    assert round(cost["saving_pct_from_rounded"], 1) == 82.6 and round(cost["saving_pct"], 1) == 82.7
    verdict = report.section("verdict").data["text"]
    # the two real jobs under the case study's durations ran 1203 and 505 steps (StepOutlier): different work,
    # judged per step first (compare.work); the durations stay as the secondary fact
    assert ("B ran 2.4x fewer steps than A: 505 against 1203 (both StepOutlier's steps), so their durations are "
            "different work. Per step B ran slower than A: 994.1 ms against 418.1 ms of job time per step") in verdict
    assert "Its whole run took less time because it ran fewer steps: 502 s against 503 s (\u22120.2 %)." in verdict
    assert "A run of B costs $1.07 instead of $6.16: 82.6 % less ($5.09 saved per run)." in verdict
    md = to_markdown(report, a.meta(), b.meta(), "2026-01-01 00:00 UTC")
    assert "| A | ml.p3.8xlarge | 3 | us-east-1 | $14.688 | 503 | $6.16 |  |" in md
    assert "| B | ml.p3.2xlarge | 2 | us-east-1 | $3.825 | 502 | $1.07 |  |" in md
    assert "a saving of $5.09 per run, 82.6 % (from the rounded costs; 82.7 % from the unrounded ones)." in md


# ------------------------------------------------------------------------------------------ missing data


@pytest.mark.fixtures
def test_b_without_gpu_data_renders_and_says_so(tmp_path):
    need(REAL / A_JOB), need(REAL / CPU_ONLY_JOB)
    out = tmp_path / "cpu.html"
    run = _run("compare", REAL / A_JOB, REAL / CPU_ONLY_JOB, "-o", out, "-q")
    assert run.returncode == 0, run.stderr
    html = out.read_text(encoding="utf-8")
    assert "B has no GPU data (a CPU-only instance, or GPU metrics were not recorded)" in html
    assert "B has no GPU operator data" in html
    assert "GPU utilization cannot be compared: B has no GPU data." in html
    assert "No cost for A: the instance type is unknown" in html
    data = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    gpu = next(r for r in data["sections"]["utilization"]["overall"] if r["metric"] == "GPU")
    assert gpu["a"]["p95"] == 22.0 and gpu["b"]["p95"] is None and gpu["delta"]["p95"] is None
    assert data["sections"]["cost"]["saving"] is None
    assert 'class="text tone-missing"' in html and "cell-error" not in html


@pytest.mark.fixtures
def test_b_without_framework_data_renders_and_says_so(tmp_path):
    need(REAL / A_JOB), need(REAL / NO_FRAMEWORK_JOB)
    out = tmp_path / "nofw.md"
    run = _run("compare", REAL / A_JOB, REAL / NO_FRAMEWORK_JOB, "-o", out, "--format", "md", "-q")
    assert run.returncode == 0, run.stderr
    md = out.read_text(encoding="utf-8")
    assert "_B has no framework data (framework profiling was off or produced no metrics)" in md
    assert "_B has no CPU operator data" in md and "_B has no GPU operator data" in md
    data = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert data["sections"]["framework"]["a_available"] is True
    assert data["sections"]["framework"]["b_available"] is False


# ------------------------------------------------------------------------------------------ markdown


@pytest.mark.fixtures
def test_markdown_output_shape(tmp_path):
    need(REAL / A_JOB), need(REAL / B_JOB)
    out = tmp_path / "pr.md"
    run = _run("compare", REAL / A_JOB, REAL / B_JOB, "-o", out, "--format", "md", "-q",
               "--instance-a", "ml.p3.8xlarge", "--count-a", "3", "--instance-b", "ml.p3.2xlarge", "--count-b", "2")
    assert run.returncode == 0, run.stderr
    md = out.read_text(encoding="utf-8")
    lines = md.splitlines()
    assert lines[0] == f"## Comparison: {A_JOB} (A) vs {B_JOB} (B)"
    headings = [line for line in lines if line.startswith("### ")]
    assert headings == ["### Verdict", "### Cost per run", "### Duration and phases",
                        "### Utilization: overall and per node", "### Step durations", "### Framework phases",
                        "### Top operators", "### Rules fired in A and B", "### Data quality"]
    assert "| Job duration | 625 | — | 715 | — | +90 | +14.4 |" in md
    assert "| A | ml.p3.8xlarge | 3 | us-east-1 | $14.688 | 625 | $7.65 | command line |" in md
    assert "| GPU | algo-1 | percentage | 0.00 | 0.00 | 0.00 | 22.00 | 12.00 | −10.00 | 37.00 | 13.00 | −24.00 |" in md
    assert "| StepOutlier | 4 | 1 | still firing |" in md
    assert "<script" not in md and "chart-spec" not in md
    # every table row has as many cells as its header
    for i, line in enumerate(lines):
        if line.startswith("| ---") or line.startswith("| :"):
            width = lines[i - 1].count(" | ")
            j = i + 1
            while j < len(lines) and lines[j].startswith("|"):
                assert lines[j].replace("\\|", "").count(" | ") == width, lines[j]
                j += 1


@pytest.mark.fixtures
def test_markdown_escapes_data_strings():
    a = load_side("A", _rules_dir(A_JOB), name="job|<img src=x onerror=alert(1)>*bold*")
    b = load_side("B", _rules_dir(B_JOB), name="# [link](http://evil)")
    report = build_comparison(a, b)
    md = to_markdown(report, a.meta(), b.meta(), "now")
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)&gt;" in md
    assert "job\\|" in md and "\\*bold\\*" in md and "\\[link\\](http&#58;//evil)" in md
    assert md_escape("a\nb|c") == "a b\\|c"


# ------------------------------------------------------------------------------------------ sources


@pytest.mark.fixtures
def test_instance_from_the_job_description_of_an_arn_source(monkeypatch, tmp_path):
    """ARN sources carry instance type, count and region; the command line overrides them."""
    from types import SimpleNamespace

    from reportgen.compare import run as compare_run
    from reportgen.pipeline import Prepared

    rules = _rules_dir(A_JOB)

    def fake_prepare(source, work_dir, *_):
        resolved = SimpleNamespace(instance_type="ml.p3.8xlarge", instance_count=3, region="us-east-1",
                                   job_name="run-1", description="training job run-1", notes=(), incomplete=False,
                                   hyperparameters=())
        return Prepared(resolved, rules, "rule outputs")

    monkeypatch.setattr(compare_run, "prepare_rule_outputs", fake_prepare)
    spec = compare_run._side_spec("A", "arn:aws:sagemaker:us-east-1:123456789012:training-job/run-1", tmp_path,
                                  CostOptions(), lambda m: None)
    assert (spec["instance_type"], spec["instance_count"], spec["region"], spec["instance_from"]) == \
        ("ml.p3.8xlarge", 3, "us-east-1", "job description")
    spec = compare_run._side_spec("B", "arn:…", tmp_path, CostOptions("ml.g5.xlarge", 2, "eu-west-1"), lambda m: None)
    assert (spec["instance_type"], spec["instance_count"], spec["region"], spec["instance_from"]) == \
        ("ml.g5.xlarge", 2, "eu-west-1", "command line")


@pytest.mark.fixtures
def test_generate_report_json_gains_cost_only_when_instance_known(tmp_path, real_pair):
    folder = need(REAL / B_JOB)
    run = _run("generate", folder, "-o", tmp_path / "r.html", "-q", "--instance", "ml.p3.2xlarge", "--count", "2")
    assert run.returncode == 0, run.stderr
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    cost = data["sections"]["cost"]
    assert cost["duration_s"] == data["sections"]["training-job-summary"]["job_duration_s"] == 715
    assert cost["cost"] == pytest.approx(715 * 2 * 3.825 / 3600) and cost["cost_rounded"] == 1.52
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'id="sec-cost"' in html and "This run on 2 × ml.p3.2xlarge (us-east-1) for 715 s cost about $1.52." in html
    _out, _ra, plain, _cmp = real_pair  # the same job's report.json, generated without an instance
    assert "cost" not in plain and "training-job-summary" in plain
    assert math.isfinite(cost["price_per_hour"])
