"""Idle time per CUDA stream (HTA's idle time breakdown, ``reportgen.trace_analysis.gpu_idle.idle_per_stream``) on a
hand-made trace whose numbers are worked out below (µs; launch calls on thread 1, matched by correlation id).

Stream 7:  A [100, 200) launched at 90; B [210, 250) launched at 150 (before A ended): gap 10 < 30, kernel wait;
           C [300, 320) launched at 260 (after B ended at 250): host wait 50; D [400, 410) launched at 280 (before C
           ended), gap 80 >= 30: other; E [415, 430) launched at 285: kernel wait 5; F [500, 510) whose launch is not
           in the trace: other 70; G [505, 508) inside F (an overlap on the stream: no negative idle): kernel wait 0;
           H [520, 530) launched at 287: 10 after F's end (the latest end so far), kernel wait 10.
           host 50, kernel 10 + 5 + 0 + 10 = 25, other 80 + 70 = 150; busy 100+40+20+10+15+10+3+10 = 208; 8 operations.
Stream 20: M1 memcpy [150, 180) launched at 140; M2 [350, 360) launched at 340 (after M1 ended): host wait 170;
           busy 40, 2 operations. (The union of streams sees no idle in [180, 300): stream 7 works then.)
"""

from __future__ import annotations

import json

import pytest

from reportgen.trace_analysis.job import analyze_traces
from reportgen.report.model import Table
from reportgen.report.sections.gpu_kernels_operators import gpu_analysis_blocks
from reportgen.trace_ranks import TraceRank


def _launch(ts, corr, name="cudaLaunchKernel"):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 100, "tid": 1, "ts": ts, "dur": 4,
            "args": {"correlation": corr}}


def _op(name, ts, dur, corr, stream=7, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": stream, "correlation": corr}}


EVENTS = [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 1, "ts": 0, "dur": 600},
    _launch(90, 1), _op("A", 100, 100, 1),
    _launch(150, 2), _op("B", 210, 40, 2),
    _launch(260, 3), _op("C", 300, 20, 3),
    _launch(280, 4), _op("D", 400, 10, 4),
    _launch(285, 5), _op("E", 415, 15, 5),
    _op("F", 500, 10, 99),
    _launch(286, 8), _op("G", 505, 3, 8),
    _launch(287, 9), _op("H", 520, 10, 9),
    _launch(140, 6, "cudaMemcpyAsync"), _op("Memcpy HtoD (Pinned -> Device)", 150, 30, 6, stream=20, cat="gpu_memcpy"),
    _launch(340, 7, "cudaMemcpyAsync"), _op("Memcpy HtoD (Pinned -> Device)", 350, 10, 7, stream=20, cat="gpu_memcpy"),
]


@pytest.fixture(scope="module")
def rank(tmp_path_factory):
    path = tmp_path_factory.mktemp("streams") / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": EVENTS}))
    doc, _ = analyze_traces([path])
    return doc["ranks"]["0"]


def test_idle_per_stream_by_hand(rank):
    streams = rank["gpu_analysis"]["idle_per_stream"]
    assert list(streams) == ["7", "20"]  # in first-activity order
    assert streams["7"] == pytest.approx({"host_wait_ms": 0.050, "kernel_wait_ms": 0.025, "other_ms": 0.150,
                                          "idle_ms": 0.225, "busy_ms": 0.208, "operations": 8})
    assert streams["20"] == pytest.approx({"host_wait_ms": 0.170, "kernel_wait_ms": 0.0, "other_ms": 0.0,
                                           "idle_ms": 0.170, "busy_ms": 0.040, "operations": 2})


def test_union_of_streams_differs(rank):
    """The union's split (unchanged) sees stream 20's wait [180, 350) covered by stream 7's work."""
    union = rank["gpu"]["window_idle_split_ms"]
    assert sum(union.values()) == pytest.approx(rank["gpu"]["window_idle_ms"])
    assert sum(union.values()) < sum(s["idle_ms"] for s in rank["gpu_analysis"]["idle_per_stream"].values())


def test_report_table_per_stream(rank):
    tables = {b.id: b for b in gpu_analysis_blocks("0", TraceRank.of("0", rank)) if isinstance(b, Table)}
    table = tables["kineto-idle-streams-0"]
    assert table.rows[0] == ["stream 7", 8, pytest.approx(0.208), pytest.approx(0.225), pytest.approx(0.05),
                             pytest.approx(0.025), pytest.approx(0.15)]
    assert table.rows[1][0] == "stream 20" and table.rows[1][4] == pytest.approx(0.17)


def test_two_profiling_cycles_leave_the_time_between_them_out(tmp_path):
    """Two files of one rank (two cycles): the gap between the cycles is no idle time of the stream."""
    one = [_launch(90, 1), _op("A", 100, 100, 1), _launch(150, 2), _op("B", 260, 40, 2)]  # host wait: none (150 <
    # 200), gap 60 >= 30: other 60
    two = [_launch(10_090, 3), _op("C", 10_100, 10, 3), _launch(10_115, 4), _op("D", 10_130, 10, 4)]  # host 20
    for i, events in enumerate((one, two)):
        (tmp_path / f"rank-0.{i}.pt.trace.json").write_text(json.dumps(
            {"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i + 1}", "pid": 100,
                              "tid": 1, "ts": events[0]["ts"], "dur": 300}, *events]}))
    doc, _ = analyze_traces(sorted(tmp_path.glob("*.json")))
    ranks = doc["ranks"]
    assert len(ranks) == 1
    streams = next(iter(ranks.values()))["gpu_analysis"]["idle_per_stream"]
    assert streams["7"] == pytest.approx({"host_wait_ms": 0.020, "kernel_wait_ms": 0.0, "other_ms": 0.060,
                                          "idle_ms": 0.080, "busy_ms": 0.160, "operations": 4})
