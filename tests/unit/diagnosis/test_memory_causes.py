"""The memory causes (reportgen.diagnosis.memory_causes) on real CPU recordings with profile_memory=True
(tests/recordings/cpu-memory: a planted leak of 4 MiB a step and a plateau) and on small GPU traces for the
out-of-memory risk against deviceProperties' totalGlobalMem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen.diagnosis import diagnose
from reportgen.rule_outputs import RuleOutputs
from reportgen.trace_analysis import analyze_job, find_traces
from tests.support.paths import RECORDINGS
from tests.unit.trace_analysis.test_memory import MIB, _steps_with

RUNS = RECORDINGS / "cpu-memory"
GPU_BYTES = 40 * 1024 * MIB  # a 40 GiB GPU


def _diagnosis(folder: Path):
    doc, _ = analyze_job(find_traces(folder))
    made = RuleOutputs(folder=Path("."))
    made.rules, made.timeline, made.traces = {}, None, doc
    return diagnose(made)


def test_a_planted_leak_is_a_memory_leak_with_its_bytes_and_its_operator():
    truth = json.loads((RUNS / "leak" / "truth.json").read_text())
    diagnosis = _diagnosis(RUNS / "leak")
    (leak,) = [f for f in diagnosis.findings if f.cause == "memory-leak"]
    assert leak.risk["per_step_bytes"] == pytest.approx(truth["leak_bytes_per_step"], rel=0.02)
    assert leak.risk["operator"] == "aten::full" and leak.counts
    assert "grows 4.0 MiB per step" in leak.evidence[0] and "higher at 7 of 7 step ends" in leak.evidence[0]
    assert "aten::full 28.0 MiB (7 blocks)" in leak.evidence[1]
    assert "aten::full" in leak.fix
    assert "out-of-memory-risk" not in [f.cause for f in diagnosis.findings]  # a CPU: no capacity known
    # the 4 MiB aten::full made every step is the steps' memory_management (6 % of them), but it is kept: the leak's
    # finding judges it (keep less), not allocator-churn's (allocate once), nor step-waste's
    (account,) = [r.account for r in diagnosis.evidence.trace_ranks.values()]
    assert set(account.allocations_named) >= {"aten::full"} and account.share("memory_management") > 0.05
    assert not {"allocator-churn", "step-waste"} & {f.cause for f in diagnosis.findings}
    memory = [a for a in diagnosis.answers if a.question == "memory"][0]
    assert memory.judged and "allocator's events" in memory.how and "cpu" in memory.how


def test_a_plateau_is_no_leak_and_the_memory_question_is_judged():
    diagnosis = _diagnosis(RUNS / "plateau")
    assert not [f for f in diagnosis.findings if f.cause in ("memory-leak", "out-of-memory-risk")]
    assert "memory" in diagnosis.questions_judged


def _gpu_trace(folder: Path, kept: list[int], capacity: float) -> Path:
    props = [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": capacity}]
    (folder / "rank-0.pt.trace.json").write_text(json.dumps({"traceEvents": _steps_with(kept),
                                                             "deviceProperties": props}))
    return folder


def test_a_gpu_leak_says_when_the_gpu_is_full(tmp_path):
    diagnosis = _diagnosis(_gpu_trace(tmp_path, [2 * MIB] * 6, GPU_BYTES))
    (leak,) = [f for f in diagnosis.findings if f.cause == "memory-leak"]
    # reserved peaks at 26 MiB (twice allocated in _steps_with): (40 GiB - 26 MiB) / 2 MiB a step
    assert leak.risk["steps_to_full"] == pytest.approx((GPU_BYTES - 26 * MIB) / (2 * MIB))
    assert leak.risk["time_to_full_s"] == pytest.approx(leak.risk["steps_to_full"] * 1.0 / 1000)  # 1 ms steps
    assert any("full in about 20,467 more steps" in e for e in leak.evidence)


def test_a_peak_near_the_gpus_capacity_is_an_out_of_memory_risk(tmp_path):
    # reserved peaks at 2 x 13 MiB = 26 MiB: a "GPU" of 28 MiB is 93 % full at the peak, one of 40 MiB is not
    diagnosis = _diagnosis(_gpu_trace(tmp_path, [2 * MIB] * 6, 28 * MIB))
    (risk,) = [f for f in diagnosis.findings if f.cause == "out-of-memory-risk"]
    assert risk.risk["peak_pct"] == pytest.approx(100 * 26 / 28)
    assert risk.evidence[0].startswith("rank 0, cuda:0: peak reserved 26.0 MiB of the GPU's 28.0 MiB (93 %)")
    assert "13.0 MiB reserved by the caching allocator beyond" in risk.evidence[1]
    assert "aten::cat 12.0 MiB (6 blocks)" in risk.evidence[2]
    assert "expandable_segments" in risk.fix and risk.counts
    (tmp_path / "big").mkdir()
    roomy = _diagnosis(_gpu_trace(tmp_path / "big", [0] * 6, 40 * MIB))
    assert not [f for f in roomy.findings if f.cause in ("memory-leak", "out-of-memory-risk")]


def _timeline(series: dict) -> dict:
    """One node's timeline.json over 20 minutes (one bucket a minute) holding ``series`` (key -> means)."""
    t = [60.0 * i for i in range(20)]
    return {"nodes": {"algo-1": {"t": t, "bucket_s": 60, "series": {
        "gpu0/GPUUtilization": {"mean": [90.0] * 20}, **{k: {"mean": v} for k, v in series.items()}}}}}


RISING = [20.0 + 3 * i for i in range(20)]  # 20 % -> 77 %, steadily
BUSY = [30.0 + (i % 2) * 64 for i in range(20)]  # memory-controller activity in bursts, up to 94 %


def _gpu_memory_finding(series: dict):
    made = RuleOutputs(folder=Path("."))
    made.rules, made.timeline, made.traces = {}, _timeline(series), None
    return [f for f in diagnose(made).findings if f.cause == "gpu-memory-growth"]


def test_controller_activity_is_never_read_as_how_full_the_gpu_is():
    """SageMaker's GPUMemoryUtilization (NVML's utilization.memory): how busy the memory is. A rise of it is
    worded as such, with no "full" time and no peak of GPU memory (occupancy)."""
    (finding,) = _gpu_memory_finding({"gpu0/GPUMemoryUtilization": RISING})
    assert finding.title == "GPU memory-controller activity keeps rising"
    assert finding.evidence[0].startswith("GPU memory-controller activity (GPUMemoryUtilization: how busy, not how "
                                          "full) on algo-1/gpu0 rose steadily by 57 points")
    assert "reaches 100 %" in finding.evidence[1] and "full" not in finding.evidence[1]
    assert "peak_pct" not in finding.risk and "time_to_full_s" not in finding.risk
    assert finding.risk["rise_points"] == pytest.approx(57) and finding.risk["time_to_100_pct_s"] > 0
    assert "controller activity, not bytes" in finding.fix
    # bursts of activity up to 94 % are no memory at risk
    assert _gpu_memory_finding({"gpu0/GPUMemoryUtilization": BUSY}) == []


def test_memory_in_use_from_record_is_what_the_finding_reads_when_present():
    """`reportgen record` samples NVML's memory info as GPUMemoryUsedPercent: the finding reads it, not the
    controller's activity beside it."""
    (finding,) = _gpu_memory_finding({"gpu0/GPUMemoryUtilization": BUSY, "gpu0/GPUMemoryUsedPercent": RISING})
    assert finding.title == "GPU memory is at risk"
    assert finding.evidence[0].startswith("GPU memory in use on algo-1/gpu0 rose steadily by 57 points")
    assert finding.evidence[1].startswith("at this rate it is full in")
    assert finding.risk["peak_pct"] == 77.0 and "peak_activity_pct" not in finding.risk
    assert finding.risk["time_to_full_s"] > 0
