"""The regression gate: ``compare BASE NEW --fail-on-regression 5%`` and ``check NEW.json --base BASE.json``.

Pairs of synthetic jobs (same scenario, another seed: noise only; TRAIN steps 8 % longer: a real slowdown)
go through the CLI as a user runs it. Noise-only pairs must pass, the slowdown must trip.
"""

from __future__ import annotations

import json
import os

import pytest

from reportgen.compare.regression import judge, parse_threshold
from reportgen.errors import InputError
from tests.support.cli import run_cli
from testdata.synthetic import Scenario, generate

BASE = dict(nodes=1, cores=4, gpus=1, duration_s=300, interval_ms=500)
RUNS = {  # name: (seed, step ms, step jitter, duration s, framework traces)
    "base": (1, 300, 0.04, 300, True),
    "noise-a": (2, 300, 0.04, 300, True),
    "noise-b": (3, 300, 0.04, 300, True),
    "noisy-base": (6, 300, 0.30, 300, True),  # very noisy steps: ±4 % on the median ratio
    "noisy": (7, 300, 0.30, 300, True),
    "slow": (4, 324, 0.04, 300, True),  # 8 % slower steps
    "slow-3": (5, 309, 0.04, 300, True),  # 3 % slower: beyond noise, below a 5 % threshold
    "nosteps-base": (1, 300, 0.04, 300, False),
    "nosteps-slow": (1, 300, 0.04, 330, False),  # 10 % longer job, no step durations
}


run = run_cli


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Each run's raw data and its report.json (made by ``reportgen generate``), generated once."""
    out = tmp_path_factory.mktemp("regression")
    made = {}

    def get(name):
        if name not in made:
            seed, step_ms, jitter, duration, framework = RUNS[name]
            generate(out / name, **{**BASE, "duration_s": duration}, seed=seed, framework=framework,
                     scenario=Scenario(step_ms=step_ms, step_jitter=jitter))
            result = run("generate", str(out / name), "-o", str(out / f"{name}.html"), "-q")
            assert result.returncode == 0, result.stderr
            made[name] = out / f"{name}.json"
        return made[name]
    return get


def sections(path):
    return json.loads(path.read_text(encoding="utf-8"))["sections"]


def test_parse_threshold():
    assert parse_threshold("5%") == 0.05 and parse_threshold("5") == 0.05 and parse_threshold(" 2.5 % ") == 0.025
    for bad in ("-5%", "five", "", "5%%", "2000%"):
        with pytest.raises(InputError):
            parse_threshold(bad)


def test_report_json_keeps_the_step_histogram(reports):
    nodes = sections(reports("base"))["step-duration-analysis"]["nodes"]
    (hist,) = [n["histogram"] for n in nodes.values()]
    assert len(hist["counts"]) == 100 and len(hist["edges"]) == 101
    assert all(isinstance(c, int) for c in hist["counts"]) and sum(hist["counts"]) > 700  # 5 min of 0.3 s steps
    assert hist["edges"] == sorted(hist["edges"])


@pytest.mark.parametrize("base, new", [("base", "noise-a"), ("base", "noise-b"), ("noise-a", "noise-b"),
                                       ("noisy-base", "noisy"), ("noisy", "noisy-base")])
def test_noise_only_pairs_pass(reports, base, new, tmp_path):
    result = run("check", str(reports(new)), "--base", str(reports(base)), "--fail-on-regression", "5%",
                 "--markdown", str(tmp_path / "s.md"), "-q")
    assert result.returncode == 0, result.stderr
    verdict = judge(sections(reports(base)), sections(reports(new)), 0.05)
    assert verdict.basis == "median step time" and not verdict.tripped
    assert verdict.low <= 1 + 0.05 and abs(verdict.ratio - 1) < 0.05
    text = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "**Regression gate: passed**" in text and "95 % interval" in text


def test_a_real_slowdown_trips_check(reports, tmp_path):
    result = run("check", str(reports("slow")), "--base", str(reports("base")), "--fail-on-regression", "5%",
                 "--markdown", str(tmp_path / "s.md"), "-q")
    assert result.returncode == 1
    verdict = judge(sections(reports("base")), sections(reports("slow")), 0.05)
    assert verdict.tripped and verdict.verdict == "regression"
    assert 1.06 < verdict.ratio < 1.10 and 1.05 < verdict.low < verdict.ratio < verdict.high  # steps 8 % longer
    assert result.stderr.startswith("reportgen: --fail-on-regression tripped: Regression check on the median step "
                                    "time: median step time ")
    text = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "**Regression gate: failed**" in text
    assert f"NEW/BASE = {verdict.ratio:.3f} (+{(verdict.ratio - 1) * 100:.1f} %, 95 % interval" in text
    assert "with 5 % allowed: a regression" in text
    # a looser threshold lets it pass; without a threshold there is no gate, only the comparison
    assert run("check", str(reports("slow")), "--base", str(reports("base")), "--fail-on-regression", "10%",
               "-q").returncode == 0
    plain = run("check", str(reports("slow")), "--base", str(reports("base")))
    assert plain.returncode == 0 and "**Step time against the base**" in plain.stdout
    assert "slower, beyond the runs' noise" in plain.stdout


def test_slower_beyond_noise_but_below_the_threshold_passes(reports):
    verdict = judge(sections(reports("base")), sections(reports("slow-3")), 0.05)
    assert verdict.verdict == "slower below the threshold" and not verdict.tripped and verdict.low > 1
    assert run("check", str(reports("slow-3")), "--base", str(reports("base")), "--fail-on-regression", "5%",
               "-q", "--markdown", os.devnull).returncode == 0


def test_compare_gate_writes_everything_then_exits_1(reports, tmp_path):
    folder = reports("base").parent
    reports("slow")
    result = run("compare", "base", "slow", "-o", str(tmp_path / "c.md"), "--format", "md",
                 "--fail-on-regression", "5%", "-q", cwd=folder)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("reportgen: --fail-on-regression tripped: ") and "B/A = 1.0" in result.stderr
    text = (tmp_path / "c.md").read_text(encoding="utf-8")
    head = text.split("### Verdict")[0]
    assert "**Regression gate: failed**" in head and "(A, " in head and "(B, " in head
    data = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert data["sections"]["verdict"]["regression"]["verdict"] == "slower beyond noise"  # no threshold in the page
    result = run("compare", "base", "noise-a", "-o", str(tmp_path / "n.html"), "--fail-on-regression", "5%", "-q",
                 cwd=folder)
    assert result.returncode == 0, result.stderr
    assert "Regression check on the median step time" in (tmp_path / "n.html").read_text(encoding="utf-8")


def test_without_step_durations_it_falls_back_to_the_job_duration(reports, tmp_path):
    result = run("check", str(reports("nosteps-slow")), "--base", str(reports("nosteps-base")),
                 "--fail-on-regression", "5%", "--markdown", str(tmp_path / "s.md"), "-q")
    assert result.returncode == 1
    verdict = judge(sections(reports("nosteps-base")), sections(reports("nosteps-slow")), 0.05)
    assert verdict.basis == "job duration" and verdict.low is None and verdict.tripped
    assert verdict.ratio == pytest.approx(330 / 300, abs=0.01)
    text = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "Fell back to the job durations: no step durations in BASE and NEW" in text
    assert "carries no noise estimate" in text


def test_usage_errors(reports, tmp_path):
    result = run("check", str(reports("base")), "--fail-on-regression", "5%")
    assert result.returncode == 2 and "--fail-on-regression needs --base" in result.stderr
    result = run("check", str(reports("base")), "--base", str(reports("base")), "--fail-on-regression", "lots")
    assert result.returncode == 2 and "expected a percentage such as 5%" in result.stderr
    result = run("check", str(reports("base")), "--base", str(tmp_path / "missing.json"))
    assert result.returncode == 2 and "no such file" in result.stderr
    result = run("compare", "A", "B", "-o", str(tmp_path / "c.html"), "--fail-on-regression", "five")
    assert result.returncode == 2 and "expected a percentage such as 5%" in result.stderr
    assert "analysing" not in result.stderr and list(tmp_path.iterdir()) == []  # refused before any work
