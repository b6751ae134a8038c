"""Where a rank's steps lie when the step marks alone would mislead (step_marks.py): a step annotation that
outlasts the profiler's own span, and a trace with no ProfilerStep#N at all. The traces are built here in the
shapes real ones have (HTA's triton_example and with_gpu_user_annotation test traces: Kineto's ``Trace`` event
``PyTorch Profiler (0)``, µs with a fractional part after ``baseTimeNanoseconds``, ``Optimizer.step#SGD.step`` on
the CPU and again as a ``gpu_user_annotation``), with our own numbers."""

from __future__ import annotations

import json

import pytest

from reportgen.trace_analysis.job import analyze_traces


def _x(name, ts, dur, cat="cpu_op", tid=1, pid=100):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": {}}


def _kernel(name, ts, dur, correlation):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": 7, "correlation": correlation}}


def _launch(ts, dur, correlation):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 1, "ts": ts,
            "dur": dur, "args": {"correlation": correlation}}


def _analyze(tmp_path, events, **top):
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, **top, "traceEvents": events}))
    doc, problems = analyze_traces([path])
    return doc["ranks"]["0"], [p.reason for p in problems.items]


def test_a_step_that_outlasts_the_profilers_span_is_cut_at_its_end(tmp_path):
    """The profiler's span ends 2,000.5 µs in; the step annotation says it ran 9 s: 1,500.25 µs of it were recorded,
    and only those count (span, step, account), with a note saying what was cut."""
    rank, notes = _analyze(tmp_path, [
        _x("PyTorch Profiler (0)", 1000.25, 2000.5, cat="Trace", tid="PyTorch Profiler"),
        _x("ProfilerStep#1", 1500.5, 9_000_000.0, cat="user_annotation"),
        _x("aten::add", 1600.5, 1000.0),
        _launch(1700.5, 20.0, 1),
        _kernel("triton_poi_fused_add_0", 1730.5, 200.0, 1),
    ], baseTimeNanoseconds=1727743122000000000)
    assert [s["dur_ms"] for s in rank["steps"]] == [pytest.approx(1.50025)]
    assert rank["span_ms"] == pytest.approx(2.0005)
    assert rank["account"]["step_ms"] == pytest.approx(1.50025)
    assert sum(rank["account"]["slices_ms"].values()) == pytest.approx(1.50025)
    assert rank["account"]["slices_ms"]["compute"] == pytest.approx(0.2)
    assert rank["data_notes"] == ["ProfilerStep#1 ends 9 s after the profiler's own span (1.5 ms of it recorded): "
                                  "cut at the span's end, the time after it was not profiled"]
    assert notes == [f"rank 0: {rank['data_notes'][0]}"]


def test_a_step_that_ends_with_the_span_is_left_as_it_is(tmp_path):
    """Kineto ends the span at the last step's end: nothing is cut, no note, no key added."""
    rank, notes = _analyze(tmp_path, [
        _x("PyTorch Profiler (0)", 0, 3154, cat="Trace", tid="PyTorch Profiler"),
        _x("ProfilerStep#100", 0, 3154, cat="user_annotation"),
        _x("aten::ones", 570, 2245),
    ])
    assert [s["dur_ms"] for s in rank["steps"]] == [pytest.approx(3.154)]
    assert "data_notes" not in rank and notes == []


def _optimizer_loop(steps, period=1500.0):
    """``steps`` iterations of zero_grad, a forward kernel and Optimizer.step#SGD.step (annotated on the CPU and,
    as torch does, on the GPU), each ``period`` µs long; the kernel runs 300 µs of each iteration."""
    events = [_x("PyTorch Profiler (0)", 0, steps * period + 100, cat="Trace", tid="PyTorch Profiler")]
    for i in range(steps):
        t = 10.0 + i * period
        events += [
            _x("Optimizer.zero_grad#SGD.zero_grad", t, 100, cat="user_annotation"),
            _x("aten::linear", t + 200, 400),
            _launch(t + 250, 10, i + 1),
            _kernel("volta_sgemm_128x64_nn", t + 270, 300, i + 1),
            _x("Optimizer.step#SGD.step", t + 1000, 200, cat="user_annotation"),
            _x("Optimizer.step#SGD.step", t + 1050, 60, cat="gpu_user_annotation", tid=7, pid=0),
        ]
    return events


def test_without_profiler_steps_the_steps_lie_between_optimizer_steps(tmp_path):
    """5 optimizer steps, no ProfilerStep#N: 4 steps from one optimizer step's end to the next's, each 1.5 ms with
    300 µs of kernel; the GPU-side copies of the annotation are not steps."""
    rank, notes = _analyze(tmp_path, _optimizer_loop(5))
    assert [s["step"] for s in rank["steps"]] == [1, 2, 3, 4]
    assert [s["dur_ms"] for s in rank["steps"]] == [pytest.approx(1.5)] * 4
    assert rank["account"]["steps"] == 4 and rank["account"]["perspective"] == "device"
    assert rank["account"]["step_ms"] == pytest.approx(6.0)
    assert rank["account"]["slices_ms"]["compute"] == pytest.approx(1.2)  # 4 x 300 µs of kernel
    assert sum(rank["account"]["slices_ms"].values()) == pytest.approx(6.0)
    assert notes == ["rank 0: no ProfilerStep#N annotations (a profiler without schedule and prof.step()): 4 steps "
                     "taken between the ends of 5 consecutive Optimizer.step#SGD.step annotations (call prof.step() "
                     "after each step for exact ones)"]


def test_profiler_steps_win_over_optimizer_steps(tmp_path):
    """With ProfilerStep#N in the trace, the optimizer's annotations do not make steps and nothing is noted."""
    events = _optimizer_loop(3) + [_x(f"ProfilerStep#{i}", 5.0 + i * 1500, 1500, cat="user_annotation")
                                   for i in range(3)]
    rank, notes = _analyze(tmp_path, events)
    assert [s["step"] for s in rank["steps"]] == [0, 1, 2]
    assert "data_notes" not in rank and notes == []


def test_one_optimizer_step_makes_no_step(tmp_path):
    rank, notes = _analyze(tmp_path, _optimizer_loop(1))
    assert rank["steps"] == [] and rank["account"] is None
    assert "data_notes" not in rank and notes == []
