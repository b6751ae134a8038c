"""The diagnosis against real runs with one planted cause each (tests/recordings/cpu-torch: real PyTorch CPU
training recorded with `reportgen record`), judged by the runs' own timing, not by our generators' shapes."""

from __future__ import annotations

import json

import pytest

from reportgen.diagnosis import diagnose
from reportgen.pipeline import analyze
from reportgen.rule_outputs import load_rule_outputs
from tests.support.paths import ROOT

RUNS = ROOT / "tests" / "recordings" / "cpu-torch"


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory):
    cache = {}

    def run(name):
        if name not in cache:
            out = analyze(str(RUNS / name), tmp_path_factory.mktemp(name) / "ro")
            truth = json.loads((RUNS / name / "truth.json").read_text(encoding="utf-8"))
            cache[name] = (diagnose(load_rule_outputs(out)), truth)
        return cache[name]
    return run


def test_a_host_memory_leak_is_found_with_the_time_to_full(diagnosed):
    diagnosis, truth = diagnosed("leak")
    assert diagnosis.status == "problems"
    top = diagnosis.findings[0]
    assert top.cause == "host-memory-growth" and top.counts and top.seconds == 0
    risk = top.risk
    assert risk["first_pct"] < 12 and risk["last_pct"] > 24 and risk["rise_points"] > 15  # 9 % -> 26 % of the host
    assert risk["time_to_full_s"] == pytest.approx((100 - risk["last_pct"]) * 3600 / risk["points_per_hour"])
    assert risk["time_to_full_s"] < 10 * truth["loop_s"]  # serious: full within ten loops at this rate
    # no profiler: the input pipeline and step times are said not to be judged, memory is
    assert [a.question for a in diagnosis.questions_open] == ["input-pipeline", "step-times"]


def test_periodic_slow_steps_cost_what_the_script_measured(diagnosed):
    diagnosis, truth = diagnosed("periodic")
    top = diagnosis.findings[0]
    assert diagnosis.status == "problems" and top.cause == "step-outliers"
    assert top.metrics["period"] == 20 and "every 20 steps" in top.fix
    assert top.metrics["outlier_steps"] >= truth["slow_steps"]  # the 10 planted ones (and a stray or so)
    assert top.seconds == pytest.approx(truth["slow_steps_lost_s"], rel=0.10)  # 182.7 s lost, by the script


def test_a_cpu_run_without_a_profiler_is_not_called_healthy(diagnosed):
    diagnosis, truth = diagnosed("plain")
    assert truth["loop_s"] > 88 and diagnosis.status == "insufficient-data" and diagnosis.findings == []
    answers = {a.question: a for a in diagnosis.answers}
    assert answers["input-pipeline"].judged is False and "no profiler trace" in answers["input-pipeline"].how
    assert answers["memory"].judged is True


def test_an_eight_step_run_judges_nothing(diagnosed):
    diagnosis, truth = diagnosed("short")
    assert truth["steps"] == 8 and diagnosis.status == "insufficient-data" and diagnosis.findings == []
    assert "shorter than 10 s" in {a.question: a for a in diagnosis.answers}["input-pipeline"].how


GPU = ROOT / "tests" / "recordings" / "gpu-input"


def test_gpu_input_pipeline_impact_matches_what_four_workers_saved(tmp_path):
    """A real H200 run loading its data in the training process, then the same run with 4 workers: the
    impact of the first's input-pipeline finding (a share of its profiled steps) against the share of the
    loop the fix saved by the script's own timing (7.41 s -> 1.66 s: 78 %)."""
    truth = {t["workers"]: t for t in json.loads((GPU / "truth.json").read_text(encoding="utf-8"))}
    saved = 1 - truth[4]["loop_s"] / truth[0]["loop_s"]
    before = diagnose(load_rule_outputs(analyze(str(GPU / "w0"), tmp_path / "w0")))
    top = before.findings[0]
    assert before.status == "problems" and top.cause == "input-pipeline" and top.base == "profiled steps"
    assert abs(top.share - saved) <= 0.35 * saved, (top.share, saved)  # 0.84 against 0.78
    assert "num_workers from 0 to" in top.fix
    after = diagnose(load_rule_outputs(analyze(str(GPU / "w4"), tmp_path / "w4")))
    remaining = next(f for f in after.findings if f.cause == "input-pipeline")
    assert remaining.share < top.share / 2  # 33 % of the step still waits: less, not gone
    assert "already loads in worker processes" in remaining.fix  # it has workers: never "use num_workers=4"
