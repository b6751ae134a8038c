"""compare.work: each run's training steps (counted, given by the recorded command, estimated) and when two
runs did different work."""

from __future__ import annotations

import pytest

from reportgen.compare.work import (COUNTED_TOLERANCE, ESTIMATED_TOLERANCE, Work, amounts, different_work, differs,
                                    steps_of_command, work_of, work_of_report)
from reportgen.report.json_views import TrainingLoop
from reportgen.section_ids import SectionId


def _sections(*nodes: dict) -> dict:
    return {SectionId.STEP_DURATION_ANALYSIS: {"nodes": {f"n{i}": node for i, node in enumerate(nodes)}}}


def _node(phase: str, counts: list, outliers=0, mean=None) -> dict:
    return {"phase": phase, "stats": {"mean": mean}, "number_of_outliers": outliers,
            "histogram": {"counts": counts, "edges": list(range(len(counts) + 1))}}


def test_sagemaker_steps_are_counted_per_node_histogram_plus_outliers_the_most_of_any_node():
    work = work_of(_sections(_node("Step:ModeKeys.TRAIN", [500, 28], 11), _node("Step:ModeKeys.TRAIN", [530], 8)),
                   None)
    assert work is not None and work.steps == 539.0 and not work.estimated  # 500 + 28 + 11 beats 530 + 8
    assert work.source == "StepOutlier's steps, the most of any node"


def test_a_recording_estimates_its_steps_from_its_loop_and_profiled_mean_step():
    sections = _sections(_node("ProfilerStep", [10, 20], mean=0.04), _node("ProfilerStep", [30], mean=0.05))
    work = work_of(sections, TrainingLoop(13.5))
    assert work is not None and work.estimated and work.steps == pytest.approx(13.5 / 0.045)  # 300 steps
    assert work.text() == ("300 steps (estimated: the training loop less the profiler's export, 13.5 s, ÷ the "
                           "profiled steps' mean step, 45.0 ms, over 2 ranks)")
    assert work.to_data() == {"steps": pytest.approx(300.0), "estimated": True, "from": work.source,
                              "loop_s": 13.5, "mean_step_s": pytest.approx(0.045), "batch": None, "samples": None}
    assert work.with_batch(32).to_data()["samples"] == pytest.approx(9600.0)
    # no loop (traces alone) or no profiled mean: unknown
    assert work_of(sections, None) is None
    assert work_of(_sections(_node("ProfilerStep", [3], mean=None)), TrainingLoop(13.5)) is None


def test_the_recorded_commands_steps_are_used_where_the_estimate_agrees_within_3x():
    sections = _sections(_node("ProfilerStep", [30], mean=0.0398))
    loop = TrainingLoop(12.42)  # tf-hostwork's: 312 steps estimated
    given = work_of(sections, loop, ["python", "planted2.py", "tf-hostwork", "--steps", "320", "--wait", "20"])
    assert given is not None and given.steps == 320 and not given.estimated
    assert given.how() == "the recorded command's --steps 320"
    # a flag that counts something else (50 diffusion steps against 312 estimated): the estimate stands
    other = work_of(sections, loop, ["python", "train.py", "--num_steps=50"])
    assert other is not None and other.estimated and other.steps == pytest.approx(312.06, abs=0.01)


def test_steps_of_command():
    assert steps_of_command(["python", "t.py", "--steps", "800"]) == (800, "--steps 800")
    assert steps_of_command(["python", "t.py", "--max_steps=1000"]) == (1000, "--max_steps 1000")
    assert steps_of_command(["t.py", "--train-steps", "5", "--total-steps", "5"]) == (5, "--train-steps 5")
    assert steps_of_command(["t.py", "--steps", "5", "--max-steps", "6"]) is None  # two that differ
    assert steps_of_command(["t.py", "--steps", "500", "--epochs", "3"]) is None  # maybe an epoch's steps
    assert steps_of_command(["t.py", "--steps", "500", "--num_train_epochs=3"]) is None
    assert steps_of_command(["t.py", "--steps", "0"]) is None and steps_of_command(["t.py", "--steps"]) is None
    assert steps_of_command(["t.py", "--steps", "-3"]) is None and steps_of_command("--steps 5") is None
    assert steps_of_command(["t.py", "--stepsize", "5", "--warmup-steps", "5"]) is None


def test_damaged_counts_give_no_work():
    assert work_of(_sections(_node("Step:ModeKeys.TRAIN", [5, float("nan")])), None) is None
    assert work_of(_sections(_node("Step:ModeKeys.TRAIN", [5, -1])), None) is None
    assert work_of(_sections(_node("Step:ModeKeys.TRAIN", [0, 0])), None) is None
    assert work_of(_sections(_node("Step:ModeKeys.TRAIN", [5, True])), None) is None
    assert work_of({}, None) is None and work_of({SectionId.STEP_DURATION_ANALYSIS: "x"}, TrainingLoop(1.0)) is None


def test_different_work_beyond_the_tolerance_of_how_the_steps_were_found():
    counted = lambda n: Work(n, False, "StepOutlier's steps")  # noqa: E731
    estimated = lambda n: Work(n, True, "the loop ÷ the mean step")  # noqa: E731
    assert COUNTED_TOLERANCE == 0.05 and ESTIMATED_TOLERANCE == 1.5
    assert not differs(counted(2676), counted(2600))  # 2.9 %: the same work
    assert differs(counted(2676), counted(2099)) and differs(counted(320), counted(800))
    assert not differs(estimated(312), estimated(700))  # 2.24x: within what the estimate's error makes
    assert differs(estimated(312.1), estimated(929.5))  # tf-hostwork / tf-clean estimated: 2.98x
    assert not differs(None, counted(800)) and not differs(counted(320), None)  # unknown: nothing said
    assert different_work(counted(320), counted(800)) == (
        "the runs did different work (A 320 steps (StepOutlier's steps); B 800 steps (StepOutlier's steps)), so "
        "their job durations do not compare")
    assert different_work(counted(320), counted(330)) == ""
    # with both batch sizes known the work is in samples: 800 steps of 32 and 400 of 64 are the same work
    assert not differs(counted(800).with_batch(32), counted(400).with_batch(64))
    assert differs(counted(800).with_batch(32), counted(800).with_batch(64))
    assert amounts(counted(800).with_batch(32), counted(400)) == (800, 400)  # one batch unknown: steps


def test_work_of_a_report_json_reads_its_diagnosis_loop():
    data = {"sections": _sections(_node("ProfilerStep", [30], mean=0.0232)),
            "diagnosis": {"loop": {"seconds": 21.56}}}
    work = work_of_report(data)
    assert work is not None and work.estimated and work.steps == pytest.approx(929.3, abs=0.1)
    for loop in (None, "x", {"seconds": "12"}, {"seconds": -1}, {"seconds": float("inf")}):
        assert work_of_report({**data, "diagnosis": {"loop": loop}}) is None
    assert work_of_report("not a report") is None
