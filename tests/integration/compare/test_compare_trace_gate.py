"""The regression gate on two real trace-only runs (the shared kineto-resnet50 folders: one rank, 12 profiled
steps each, no job duration): judged on the profiled steps' mean with a small-sample interval, not skipped
(issue #49: it passed B's 16 % slower steps), and the gate's verdict agrees with the runs' own step table."""

from __future__ import annotations

import json

import pytest

from reportgen.compare.run import CompareOptions, compare
from tests.support.paths import RAW, need

pytestmark = pytest.mark.fixtures


@pytest.mark.parametrize("a, b, slower", [("4", "0", True), ("0", "4", False)])
def test_trace_only_pair_is_judged_on_its_steps(tmp_path, a, b, slower):
    out = tmp_path / "c.md"
    result = compare(str(need(RAW / f"kineto-resnet50-num-workers-{a}")),
                     str(need(RAW / f"kineto-resnet50-num-workers-{b}")), out,
                     CompareOptions(fmt="md", fail_on_regression=0.05))
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
