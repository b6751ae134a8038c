"""The regression gate on two real trace-only runs (the shared kineto-resnet50 folders: one rank, 12 profiled
steps each, no job duration): judged on the profiled steps' mean with a small-sample interval, not skipped
(issue #49: it passed B's 16 % slower steps), and the gate's verdict agrees with the runs' own step table."""

from __future__ import annotations

import json

import pytest

from reportgen.compare.run import CompareOptions, compare
from reportgen.trace_analysis import analyze_job, find_traces
from tests.support.paths import RAW, need

pytestmark = pytest.mark.fixtures


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """``compare --format md --fail-on-regression 0.05`` of two of the runs, once per pair: (its result, the
    Markdown's path, compare.json beside it). Read only."""
    made = {}

    def pair(a: str, b: str):
        if (a, b) not in made:
            out = tmp_path_factory.mktemp(f"compare-{a}-{b}") / "c.md"
            result = compare(str(need(RAW / f"kineto-resnet50-num-workers-{a}")),
                             str(need(RAW / f"kineto-resnet50-num-workers-{b}")), out,
                             CompareOptions(fmt="md", fail_on_regression=0.05))
            made[a, b] = result, out
        return made[a, b]
    return pair


@pytest.mark.parametrize("a, b, slower", [("4", "0", True), ("0", "4", False)])
def test_trace_only_pair_is_judged_on_its_steps(compared, a, b, slower):
    result, out = compared(a, b)
    reg = result.regression
    sections = json.loads(out.with_suffix(".json").read_text())["sections"]
    traces = sections["step-durations"]["traces"]
    ta, tb = traces["a"]["mean_step_ms"], traces["b"]["mean_step_ms"]
    assert reg.basis == "mean step time" and reg.base_steps == reg.new_steps == 12 and not reg.unjudged
    # the gate's means are the step table's (from StepOutlier's histogram: within half a bin)
    assert reg.base_value_s * 1000 == pytest.approx(ta, rel=0.01) and reg.new_value_s * 1000 == pytest.approx(tb, rel=0.01)
    assert (reg.gate() == "failed") is slower and reg.tripped is slower
    assert (reg.low > 1) is slower and (reg.high < 1) is not slower  # beyond noise both ways
    text = out.read_text()
    assert ("**Regression gate: failed**" if slower else "**Regression gate: passed**") in text
    assert "A small sample (steps: A 12, B 12" in text
    # the same model with its DataLoader workers changed: comparable (the loader's operator is the same one
    # without its "#_MultiProcessingDataLoaderIter" / "#_SingleProcessDataLoaderIter" suffix)
    fit = sections["verdict"]["comparability"]
    assert fit["comparable"] is True and fit["shared_operator_time"] > 0.7 and fit["changes"] == []
    # the GPU's use (issue 48): each side's figures are its own traces' (shapes of the matrix multiplications and
    # the allocator's events: a V100, MFU against its fp32 peak of 15.7 TFLOP/s)
    use = sections["step-durations"]["efficiency"]
    for side, name in (("a", a), ("b", b)):
        doc, _ = analyze_job(find_traces(need(RAW / f"kineto-resnet50-num-workers-{name}")))
        (rank,) = doc["ranks"].values()
        gpu = [d for d in rank["memory"]["devices"] if d["device"].startswith("cuda")]
        assert use[side]["memory_device"] == "GPU" and use[side]["capacity_bytes"] == gpu[0]["capacity_bytes"]
        assert use[side]["peak_allocated_bytes"] == max(d["allocated"]["peak_bytes"] for d in gpu)
        assert use[side]["achieved_tflops"] == rank["flops"]["achieved_tflops"] > 0
        assert use[side]["mfu"] == pytest.approx(rank["flops"]["achieved_tflops"] / 15.7)
        assert use[side]["dtype"] == "fp32" and use[side]["gpu"] == "Tesla V100-DGXS-32GB"
    assert "| Achieved GFLOP/s per rank | " in text and "| GPU peak allocated (MiB) | " in text


def test_trace_only_verdict_comes_from_the_profiled_steps_with_impacts_in_ms(compared):
    """#49: the verdict said "cannot be compared ... nothing to compare" and the causes "0 s (18 %)". (The
    comparison the gate test made: the gate adds its own lines, the verdict and the causes are the same.)"""
    _, out = compared("4", "0")
    verdict = json.loads(out.with_suffix(".json").read_text())["sections"]["verdict"]
    assert verdict["speed"] == "slower" and verdict["speed_from"] == "profiled steps"
    assert ("In the profiled steps B ran slower than A: mean step time 141.2 ms → 163.9 ms (+16.0 %, 95 % interval "
            "+1.8 to +30.7 %). A small sample") in verdict["text"]
    rows = {c["cause"]: c for c in verdict["causes"]["causes"]}
    text = out.read_text()
    for cause, entry in rows.items():
        if entry["a_seconds"] is not None and 0 < entry["a_seconds"] < 1:
            assert f"| {cause} | {entry['a_seconds'] * 1000:.3g} ms ({entry['a_share'] * 100:.0f} %) |" in text
    assert " 0 s (" not in text


def test_unrelated_runs_are_not_comparable_unless_forced(tmp_path):
    """A ResNet-50 on a GPU against a small CPU model: another operator mix, so no verdict and a gate that fails
    closed; --force compares anyway and says so."""
    a, b = need(RAW / "kineto-resnet50-num-workers-4"), need(RAW / "torch-cpu-record-inputbound")
    out = tmp_path / "c.md"
    result = compare(str(a), str(b), out, CompareOptions(fmt="md", fail_on_regression=0.05))
    verdict = json.loads(out.with_suffix(".json").read_text())["sections"]["verdict"]
    fit = verdict["comparability"]
    assert fit["comparable"] is False and fit["operators_from"] == "profiler traces"
    assert fit["shared_operator_time"] < 0.25 and "operator mix differs" in fit["reasons"][0]
    assert verdict["text"].startswith("Not comparable because their operator mix differs: the operators both ran "
                                      f"take {fit['shared_operator_time'] * 100:.0f} %")
    assert verdict["speed"] is None and "causes" not in verdict
    assert result.regression.unjudged.startswith("not comparable because") and result.regression.gate() == "failed"
    assert "**Regression gate: cannot judge (failed)**" in out.read_text()
    forced = compare(str(a), str(b), tmp_path / "f.md", CompareOptions(fmt="md", fail_on_regression=0.05, force=True))
    verdict = json.loads((tmp_path / "f.json").read_text())["sections"]["verdict"]
    assert verdict["comparability"]["forced"] is True and verdict["speed"] in ("faster", "slower", "about as fast")
    assert verdict["text"].startswith("Compared with --force although their operator mix differs")
    assert not forced.regression.unjudged

