"""Frequent CUDA kernel sequences per top-level operator (``reportgen.trace_analysis.kernel_patterns``) on a hand-made trace
(µs; kernels A 10, B 20, C 30 long, a memset 5).

Thread 1: aten::linear #1 [0, 100) > aten::addmm [10, 90) launching A, B, C (stream 7, in that order);
#2 [200, 300) launching A, B on stream 7 and C on stream 8, C starting between A and B: the sequence A, C, B;
#3 [400, 500) like #1; #4 [600, 650) only A, B (shorter than 3: left out); aten::zero_ [700, 750) a memset, A, A.
Thread 2: aten::mul [200, 260) launching A, A, A on stream 9 (during linear #2: another thread, its own root).
Expected, by count then GPU time: (linear: A B C) x2, 120 µs GPU, 200 µs CPU; (linear: A C B) 60 / 100;
(mul: A A A) 30 / 60; (zero_: memset A A) 25 / 50. aten::addmm is nested in linear: never a root.
"""

from __future__ import annotations

import json

import pytest

from reportgen.trace_analysis.job import analyze_traces
from reportgen.report.model import Table
from reportgen.report.sections.gpu_kernels_operators import gpu_analysis_blocks
from reportgen.trace_ranks import TraceRank

DUR = {"A": 10, "B": 20, "C": 30, "Memset (Device)": 5}


def _op(name, ts, dur, tid=1):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": {}}


def _launch(ts, corr, tid=1, name="cudaLaunchKernel"):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": 2,
            "args": {"correlation": corr}}


def _gpu(name, ts, corr, stream=7):
    cat = "gpu_memset" if name.startswith("Memset") else "kernel"
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": DUR[name],
            "args": {"device": 0, "stream": stream, "correlation": corr}}


EVENTS = [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
    _op("aten::linear", 0, 100), _op("aten::addmm", 10, 80),
    _launch(20, 1), _launch(30, 2), _launch(40, 3), _gpu("A", 100, 1), _gpu("B", 110, 2), _gpu("C", 130, 3),
    _op("aten::linear", 200, 100),
    _launch(210, 4), _launch(220, 5), _launch(230, 6), _gpu("A", 300, 4), _gpu("B", 310, 5), _gpu("C", 305, 6, 8),
    _op("aten::linear", 400, 100),
    _launch(410, 7), _launch(420, 8), _launch(430, 9), _gpu("A", 500, 7), _gpu("B", 510, 8), _gpu("C", 530, 9),
    _op("aten::linear", 600, 50), _launch(610, 10), _launch(620, 11), _gpu("A", 650, 10), _gpu("B", 660, 11),
    _op("aten::zero_", 700, 50), _launch(705, 12, name="cudaMemsetAsync"), _launch(710, 13), _launch(720, 14),
    _gpu("Memset (Device)", 750, 12), _gpu("A", 755, 13), _gpu("A", 765, 14),
    _op("aten::mul", 200, 60, tid=2), _launch(205, 15, tid=2), _launch(215, 16, tid=2), _launch(225, 17, tid=2),
    _gpu("A", 400, 15, 9), _gpu("A", 410, 16, 9), _gpu("A", 420, 17, 9),
]


@pytest.fixture(scope="module")
def rank(tmp_path_factory):
    path = tmp_path_factory.mktemp("patterns") / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": EVENTS}))
    doc, _ = analyze_traces([path])
    return doc["ranks"]["0"]


def test_kernel_patterns_by_hand(rank):
    got = [(p["operator"], p["kernels"], p["length"], p["count"], p["gpu_ms"], p["cpu_ms"])
           for p in rank["gpu_analysis"]["kernel_patterns"]]
    assert got == [("aten::linear", ["A", "B", "C"], 3, 2, pytest.approx(0.120), pytest.approx(0.200)),
                   ("aten::linear", ["A", "C", "B"], 3, 1, pytest.approx(0.060), pytest.approx(0.100)),
                   ("aten::mul", ["A", "A", "A"], 3, 1, pytest.approx(0.030), pytest.approx(0.060)),
                   ("aten::zero_", ["Memset (Device)", "A", "A"], 3, 1, pytest.approx(0.025), pytest.approx(0.050))]


def test_report_table(rank):
    table = {b.id: b for b in gpu_analysis_blocks("0", TraceRank.of("0", rank)) if isinstance(b, Table)}["kineto-kernel-patterns-0"]
    assert [row[0] for row in table.rows] == ["aten::linear", "aten::linear", "aten::mul", "aten::zero_"]
    assert table.rows[0][1:] == ["A → B → C", 2, pytest.approx(0.12), pytest.approx(0.2)]


def test_long_sequences_are_cut_in_the_output(tmp_path):
    """An operator launching 40 kernels: 12 names kept, its length says 40."""
    events = [_op("Optimizer.step#SGD.step", 0, 1000)]
    for i in range(40):
        events += [_launch(10 + i * 20, 100 + i), _gpu("A", 2000 + i * 20, 100 + i)]
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    doc, _ = analyze_traces([path])
    (pattern,) = doc["ranks"]["0"]["gpu_analysis"]["kernel_patterns"]
    assert (pattern["length"], len(pattern["kernels"]), pattern["count"]) == (40, 12, 1)
    assert pattern["gpu_ms"] == pytest.approx(0.4)
