"""The queue length over one step (``gpu_analysis.queue_over_step``: its numbers and the chart's) on a hand-made
trace (µs). One step [0, 100).

Stream 7: launch calls at 10, 20, 30, their kernels start at 40, 60, 80: the queue is 0 on [0, 10), 1 on [10, 20),
2 on [20, 30), 3 on [30, 40), 2 on [40, 60), 1 on [60, 80), 0 on [80, 100): mean (10 + 20 + 30 + 40 + 20) / 100
= 1.2, max 3, nothing queued 30 % of the step, 6 changes; per 2 µs slice the maximum: 0 x5, 1 x5, 2 x5, 3 x5,
2 x10, 1 x10, 0 x10.
Stream 20: one copy launched at 50 (cudaMemcpyAsync), started at 70: 1 on [50, 70): mean 0.2, 2 changes.
"""

from __future__ import annotations

import json

import pytest

from reportgen.trace_analysis.job import analyze_traces
from reportgen.report.model import Chart, Table
from reportgen.report.sections.gpu_kernels_operators import gpu_analysis_blocks
from reportgen.trace_ranks import TraceRank


def _launch(ts, corr, name="cudaLaunchKernel"):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 1,
            "args": {"correlation": corr}}


def _gpu(ts, corr, stream=7, cat="kernel", name="k"):
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": 20,
            "args": {"device": 0, "stream": stream, "correlation": corr}}


EVENTS = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
          _launch(10, 1), _launch(20, 2), _launch(30, 3), _gpu(40, 1), _gpu(60, 2), _gpu(80, 3),
          _launch(50, 4, "cudaMemcpyAsync"), _gpu(70, 4, 20, "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)")]


@pytest.fixture(scope="module")
def rank(tmp_path_factory):
    path = tmp_path_factory.mktemp("queue") / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": EVENTS}))
    doc, _ = analyze_traces([path])
    return doc["ranks"]["0"]


def test_queue_over_the_step_by_hand(rank):
    over = rank["gpu_analysis"]["queue_over_step"]
    assert (over["step"], over["step_ms"], over["bin_ms"]) == (3, pytest.approx(0.1), pytest.approx(0.002))
    assert list(over["streams"]) == ["7", "20"]  # most changes first
    s7 = over["streams"]["7"]
    assert (s7["changes"], s7["max"]) == (6, 3)
    assert s7["mean"] == pytest.approx(1.2) and s7["empty_share"] == pytest.approx(0.3)
    assert s7["bin_max"] == [0] * 5 + [1] * 5 + [2] * 5 + [3] * 5 + [2] * 10 + [1] * 10 + [0] * 10
    s20 = over["streams"]["20"]
    assert (s20["changes"], s20["max"], s20["mean"], s20["empty_share"]) == (2, 1, pytest.approx(0.2),
                                                                            pytest.approx(0.8))


def test_the_summary_over_the_trace_is_unchanged(rank):
    """HTA's summary over each change (``queue_length``): stream 7's values 1, 2, 3, 2, 1, 0."""
    assert rank["gpu_analysis"]["queue_length"]["7"] == {"count": 6, "mean": 1.5, "p50": 1.5, "max": 3}


def test_report_table_and_chart(rank):
    blocks = {b.id: b for b in gpu_analysis_blocks("0", TraceRank.of("0", rank)) if isinstance(b, (Table, Chart))}
    table = blocks["kineto-queue-step-0"]
    assert table.rows[0] == ["stream 7", 6, pytest.approx(1.2), 3, pytest.approx(30.0)]
    figure = blocks["kineto-queue-step-chart-0"].figure
    line = figure["data"][0]
    assert line["name"] == "stream 7" and line["y"][15:20] == [3] * 5
    assert line["x"][:3] == pytest.approx([0.0, 0.002, 0.004])
