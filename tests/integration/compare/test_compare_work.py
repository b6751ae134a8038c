"""compare judges the same work (issue 46): tf-hostwork ran 320 steps in 17 s, tf-clean the same step without the
planted host work 800 steps in 31 s. The verdict leads per step, the durations come second, and the fixed cause's
measured change is a saving; a pair of the same work, and one whose work is unknown on a side, read as before."""

from __future__ import annotations

import json

import pytest

from reportgen.compare.build import build_comparison
from reportgen.compare.regression import judge
from reportgen.compare.run import CompareOptions, compare
from reportgen.compare.side import load_side
from reportgen.compare.work import work_of_report
from reportgen.section_ids import SectionId
from tests.support.cli import run_cli
from tests.support.paths import RECORDINGS

PLANTED = RECORDINGS / "planted"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    out = tmp_path_factory.mktemp("work") / "c.md"
    compare(str(PLANTED / "tf-hostwork"), str(PLANTED / "tf-clean"), out, CompareOptions(fmt="md"))
    return out.read_text(encoding="utf-8"), json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))


def test_different_work_leads_per_step_with_the_durations_second(pair):
    text, data = pair
    verdict = data["sections"]["verdict"]
    work = verdict["work"]
    assert (work["a"]["steps"], work["b"]["steps"], work["steps_ratio"]) == (320, 800, 2.5)
    assert work["a"]["from"] == "the recorded command's --steps 320" and not work["b"]["estimated"]
    assert work["a"]["loop_s"] == pytest.approx(12.42, abs=0.01) and work["b"]["mean_step_s"] == pytest.approx(0.0232, abs=1e-4)
    assert (verdict["duration_a_s"], verdict["duration_b_s"]) == (17, 31)  # kept, raw
    assert verdict["speed"] == "faster" and verdict["speed_from"] == "per step"  # was "slower" (+82.4 %)
    per_step_a, per_step_b = 17 / 320, 31 / 800
    assert verdict["text"].startswith(
        "B ran 2.5x the steps of A: 800 against 320 (B: the recorded command's --steps 800; A: the recorded "
        "command's --steps 320), so their durations are different work. Per step B ran faster than A: "
        f"{per_step_b * 1000:.1f} ms against {per_step_a * 1000:.1f} ms of job time per step "
        f"(\u2212{(1 - per_step_b / per_step_a) * 100:.1f} %, start-up included); its median step time 39.6 ms → "
        "21.2 ms (\u221246.3 %")
    assert "Its whole run took longer because it ran more steps: 31 s against 17 s (+82.4 %)." in verdict["text"]
    assert "For the same work" not in verdict["text"] and "−45.2 %" not in text
    rate = verdict["throughput"]
    assert rate["job_same_work_change_pct"] is None
    assert rate["job_steps_per_s_a"] == pytest.approx(320 / 17) and rate["job_steps_per_s_b"] == pytest.approx(800 / 31)
    # the regression check judges a step's time, whatever the work
    assert verdict["regression"]["basis"] == "median step time" and verdict["regression"]["ratio"] < 0.6
    # the step durations section no longer says to judge the runs by their durations
    assert "judge the runs by the duration" not in text and "for the same work (same number of steps" not in text
    assert ("The runs did different work (320 steps in A, 800 in B), so their job durations (+82.4 %) do not "
            "compare: judge them per step.") in text
    assert data["sections"]["step-durations"]["traces"]["throughput"]["job_same_work_change_pct"] is None


def test_the_fixed_cause_measures_a_saving_for_as_steps(pair):
    text, data = pair
    causes = data["sections"]["verdict"]["causes"]
    (cause,) = causes["causes"]
    assert cause["cause"] == "host-overhead" and cause["status"] == "fixed"
    measured = 31 * 320 / 800 - 17  # B's duration scaled to A's steps, less A's: −4.6 s (was +14 s)
    assert causes["measured_delta_seconds"] == cause["measured_delta_seconds"] == pytest.approx(measured)
    assert causes["measured_for_a_steps"] == 320
    (row,) = [line for line in text.splitlines() if line.startswith("| host-overhead |")]
    assert f"| \u2212{abs(measured):.0f} s measured for A's 320 steps (estimate \u2212{abs(cause['delta_seconds']):.0f} s) | fixed |" in row


def test_same_work_and_unknown_work_read_as_before(tmp_path):
    same = load_side("A", _rules(tmp_path, "tf-hostwork")), load_side("B", _rules(tmp_path, "tf-hostwork"))
    verdict = build_comparison(*same).section("verdict").data
    assert "work" not in verdict and "measured_for_a_steps" not in verdict["causes"]
    assert verdict["text"].startswith("B ran about as fast as A: 17 s against 17 s (0.0 %). For the same work, that "
                                      "is 0.0 % throughput")
    # cpu-torch/plain has no traces: its work is unknown, and the verdict judges the durations as before
    plain = RECORDINGS / "cpu-torch" / "plain"
    out = tmp_path / "u.md"
    compare(str(plain), str(RECORDINGS / "cpu-torch" / "short"), out, CompareOptions(fmt="md"))
    verdict = json.loads(out.with_suffix(".json").read_text())["sections"]["verdict"]
    assert "work" not in verdict and verdict["text"].startswith(
        f"B ran {verdict['speed']} than A: {verdict['duration_b_s']} s against {verdict['duration_a_s']} s")


def _rules(tmp_path, name: str):
    """A recording's rule outputs as generate keeps them (``--rule-outputs``)."""
    target = tmp_path / f"{name}-rules"
    if not target.exists():
        result = run_cli("generate", str(PLANTED / name), "-o", str(tmp_path / f"{name}.html"), "--rule-outputs",
                         str(target), "-q")
        assert result.returncode == 0, result.stderr
    return target


def test_the_gate_never_judges_durations_of_different_work(tmp_path):
    """check --base without step durations (removed from both report.json files) used to fall back to the job
    durations, 31 s against 17 s: a regression of +82 %. The runs did 2.5x different work (estimated from report.json
    alone: 312 and 930 steps, 3.0x), so it cannot judge, and the gate fails closed."""
    reports = {}
    for name in ("tf-hostwork", "tf-clean"):
        result = run_cli("generate", str(PLANTED / name), "-o", str(tmp_path / f"{name}.html"), "-q")
        assert result.returncode == 0, result.stderr
        reports[name] = json.loads((tmp_path / f"{name}.json").read_text())
    wa, wb = (work_of_report(reports[n]) for n in ("tf-hostwork", "tf-clean"))
    assert wa is not None and wb is not None and wa.estimated and round(wa.steps) == 312 and round(wb.steps) == 930
    verdict = judge(reports["tf-hostwork"]["sections"], reports["tf-clean"]["sections"], 0.05)
    assert verdict.basis == "median step time"  # with steps it judges them, same or different work
    for name, data in reports.items():
        for node in data["sections"][SectionId.STEP_DURATION_ANALYSIS]["nodes"].values():
            node.pop("histogram")
        (tmp_path / f"{name}-nosteps.json").write_text(json.dumps(data))
    result = run_cli("check", str(tmp_path / "tf-clean-nosteps.json"), "--base", str(tmp_path / "tf-hostwork-nosteps.json"),
                     "--fail-on-regression", "5%", "--no-step-summary", "-q")
    assert result.returncode == 1
    assert "--fail-on-regression cannot judge: no step durations in BASE and NEW" in result.stderr
    assert "the runs did different work (BASE 312 steps (estimated: " in result.stderr
    # not told the work differs (as for a side whose work is unknown) it falls back to the durations, as before
    fallback = judge(json.loads((tmp_path / "tf-hostwork-nosteps.json").read_text())["sections"],
                     json.loads((tmp_path / "tf-clean-nosteps.json").read_text())["sections"], 0.05)
    assert fallback.basis == "job duration" and fallback.tripped and fallback.ratio == pytest.approx(31 / 17)


def test_fewer_steps_each_slower_in_the_profiled_steps(tmp_path):
    """tf-clean (800 steps, 31 s) against tf-eager (480 steps, 17 s): B's job time per step is lower (its start-up
    was shorter), its profiled median step higher; both are said, and neither fewer steps nor speed alone explains
    the shorter run."""
    out = tmp_path / "e.md"
    compare(str(PLANTED / "tf-clean"), str(PLANTED / "tf-eager"), out, CompareOptions(fmt="md"))
    verdict = json.loads(out.with_suffix(".json").read_text())["sections"]["verdict"]
    assert (verdict["work"]["a"]["steps"], verdict["work"]["b"]["steps"]) == (800, 480)
    assert verdict["text"].startswith("B ran 1.7x fewer steps than A: 480 against 800 (B: the recorded command's "
                                      "--steps 480; A: the recorded command's --steps 800)")
    assert (f"Per step B ran faster than A: {17 / 480 * 1000:.1f} ms against {31 / 800 * 1000:.1f} ms of job time "
            "per step (\u22128.6 %, start-up included); its median step time 21.2 ms → 26.4 ms (+24.2 %") in verdict["text"]
    assert "Its whole run, of fewer steps, took less time: 17 s against 31 s (\u221245.2 %)." in verdict["text"]
    (cause,) = verdict["causes"]["causes"]
    assert cause["status"] == "new" and cause["measured_delta_seconds"] == pytest.approx(17 * 800 / 480 - 31)


def test_with_both_batch_sizes_the_work_is_in_samples(tmp_path):
    """The same pair given batch sizes: 32 each, B ran 2.5x the samples; 80 against 32 (with --force: another
    batch size), 320 x 80 = 800 x 32 samples, the same work, so the durations compare again, beside the time
    per sample."""
    out = tmp_path / "s.md"
    compare(str(PLANTED / "tf-hostwork"), str(PLANTED / "tf-clean"), out,
            CompareOptions(fmt="md", batch_a=32, batch_b=32))
    verdict = json.loads(out.with_suffix(".json").read_text())["sections"]["verdict"]
    assert verdict["work"]["unit"] == "samples" and verdict["work"]["ratio"] == 2.5
    assert (verdict["work"]["a"]["samples"], verdict["work"]["b"]["samples"]) == (10240, 25600)
    assert verdict["text"].startswith("B ran 2.5x the samples of A: 25600 against 10240 (800 steps of 32 against "
                                      "320 of 32; B: the recorded command's --steps 800; A: the recorded command's "
                                      "--steps 320), so their durations are different work. Per sample B ran faster "
                                      f"than A: {31 / 25600 * 1000:.1f} ms against {17 / 10240 * 1000:.1f} ms of job "
                                      "time per sample")
    assert verdict["causes"]["measured_for_a_samples"] == 10240
    assert verdict["causes"]["measured_delta_seconds"] == pytest.approx(31 * 10240 / 25600 - 17)
    compare(str(PLANTED / "tf-hostwork"), str(PLANTED / "tf-clean"), out,
            CompareOptions(fmt="md", batch_a=80, batch_b=32, force=True))
    verdict = json.loads(out.with_suffix(".json").read_text())["sections"]["verdict"]
    assert "work" not in verdict and verdict["speed"] == "slower" and "per_sample" in verdict
    assert "B ran slower than A: 31 s against 17 s (+82.4 %)." in verdict["text"]


def test_compare_without_step_times_of_different_work_cannot_judge(tmp_path):
    """compare's own gate: the pair's step histograms removed, the durations (17 s, 31 s) are all it could judge,
    and they are different work: cannot judge (a gate given a threshold fails), while the verdict still leads with
    the job time per step."""
    a, b = load_side("A", _rules(tmp_path, "tf-hostwork")), load_side("B", _rules(tmp_path, "tf-clean"))
    for side in (a, b):
        for node in side.report.section(SectionId.STEP_DURATION_ANALYSIS).data["nodes"].values():
            node.pop("histogram")
    verdict = build_comparison(a, b).section("verdict").data
    regression = verdict["regression"]
    assert regression["verdict"] == "cannot judge" and regression["basis"] == "nothing"
    assert regression["unjudged"] == (
        "no step durations in A and B (no StepOutlier histogram in its report.json), and the runs did different "
        "work (A 320 steps (the recorded command's --steps 320); B 800 steps (the recorded command's --steps 800)), "
        "so their job durations do not compare")
    assert verdict["work"]["ratio"] == 2.5 and verdict["speed"] == "faster"
    assert "of job time per step (\u221227.1 %, start-up included)." in verdict["text"]  # no step times to add
