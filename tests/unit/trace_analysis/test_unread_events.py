"""Events of categories no analysis reads are said in Data quality, never dropped silently: HTA's MTIA trace keeps
the accelerator's work in ``mtia_ccp_events`` and ``mtia_runtime``, which were left out of every figure with no
note. Built here in that shape with our own numbers."""

from __future__ import annotations

import json

from reportgen.trace_analysis.job import analyze_traces


def _x(name, ts, dur, cat):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}


def test_events_of_unknown_categories_are_noted_with_their_names(tmp_path):
    events = [_x("PyTorch Profiler (0)", 0, 5000, "Trace"), _x("ProfilerStep#1", 10, 4000, "user_annotation"),
              _x("aten::mm", 20, 1000, "cpu_op")]
    events += [_x("dma_request", 100 + 10 * i, 5, "mtia_ccp_events") for i in range(4)]
    events += [_x("fused_mul_const", 200 + 10 * i, 30, "mtia_ccp_events") for i in range(2)]
    events += [_x("runFunction - job_prep_and_submit", 300, 8, "mtia_runtime")]
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    doc, problems = analyze_traces([path])
    note = ("7 events of categories reportgen does not analyse (an accelerator or runtime other than CUDA / ROCm?), "
            "e.g. dma_request x4, fused_mul_const x2, runFunction - job_prep_and_submit x1: left out of every "
            "figure, their device time too")
    assert doc["ranks"]["0"]["data_notes"] == [note]
    assert [p.reason for p in problems.items] == [f"rank 0: {note}"]


def test_known_categories_and_the_profilers_span_make_no_note(tmp_path):
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": [_x("PyTorch Profiler (0)", 0, 5000, "Trace"),
                                                _x("ProfilerStep#1", 10, 4000, "user_annotation"),
                                                _x("aten::mm", 20, 1000, "cpu_op")]}))
    doc, problems = analyze_traces([path])
    assert "data_notes" not in doc["ranks"]["0"] and problems.items == []
