"""The step-time account on every real SageMaker profile with framework events (../shared/fixtures/raw/smdebug-*):
each training process's steps as smdebug wrote them, each step's slices adding up to it."""

from __future__ import annotations

import glob
import json

import pytest

from reportgen.engine import load_data
from reportgen.engine.framework_trace import node_traces
from reportgen.trace_analysis.account import SLICES, step_account
from reportgen.trace_analysis.framework_account import NO_OPERATORS, framework_account_doc
from tests.support.paths import RAW, need

FRAMEWORK = ("smdebug-horovod-timeline", "smdebug-tf-model-timeline-2", "smdebug-tf-profiler-trace",
             "smdebug-tf-timeline")


@pytest.mark.fixtures
@pytest.mark.parametrize("name", FRAMEWORK)
def test_every_step_adds_up(name):
    root = need(RAW / name)
    data, _ = load_data(root)
    try:
        traces = node_traces(data.framework.node_events(), data.framework.rows)
    finally:
        data.framework.close()
    train = 0  # TRAIN steps in the files, read without reportgen
    for path in glob.glob(str(root / "framework/**/*.json"), recursive=True):
        events = json.load(open(path))
        events = events if isinstance(events, list) else events.get("traceEvents", [])
        train += sum(1 for e in events if e.get("ph") == "X" and e.get("name") == "Step:ModeKeys.TRAIN")
    assert sum(len(t.steps) for t in traces) == train
    for trace in traces:
        account = step_account(trace.columns, trace.steps)
        for i, step in enumerate(trace.steps):
            assert sum(account["per_step_ms"][s][i] for s in SLICES) == pytest.approx(step["dur_us"] / 1000.0, abs=1e-6)


@pytest.mark.fixtures
def test_tf_timeline_without_operators_is_not_accounted():
    """smdebug-tf-timeline: 30 TRAIN steps, but its model timeline holds only the input pipeline's events (no forward,
    backward or operator): the account would be 'under no operator' for want of a recording, so it is not made."""
    data, _ = load_data(need(RAW / "smdebug-tf-timeline"))
    try:
        traces = node_traces(data.framework.node_events(), data.framework.rows)
    finally:
        data.framework.close()
    assert [(t.node, len(t.steps)) for t in traces] == [("905-b88ab1bb8259", 30)]
    doc = framework_account_doc(traces)
    assert doc["nodes"] == {} and doc["not_accounted"] == {"905-b88ab1bb8259": NO_OPERATORS}
