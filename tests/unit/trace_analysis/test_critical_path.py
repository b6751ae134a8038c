"""The critical path summary (``reportgen.trace_analysis.critical_path``) on hand-made traces whose path is worked out
below (µs, one CPU thread, one stream).

Step [0, 1000): aten::mm [0, 100) > cudaLaunchKernel [50, 60) -> sgemm [70, 570); aten::item [100, 700) >
cudaStreamSynchronize [110, 690) (blocking: it weighs nothing, its end follows the sgemm's end); aten::add [700, 750)
> cudaLaunchKernel [710, 720) -> add [730, 760).
The heaviest path: mm's start -> the launch's start (50 CPU) -> sgemm's start (20 launch: the stream was empty) ->
its end (500 compute) -> the sync's end (0) -> item's end (10 CPU) -> add's start (0) -> the second launch (10 CPU)
-> the add kernel's start (20 launch) -> its end (30 compute): 640 = CPU 70, launch 40, compute 530. Staying on
the CPU instead (mm 100 + item 20 + add 50) weighs 170.
"""

from __future__ import annotations

import json

import pytest

from reportgen.trace_analysis.critical_path import pick_step
from reportgen.trace_analysis.job import analyze_traces
from reportgen.report.model import Table
from reportgen.report.sections.gpu_kernels_operators import gpu_analysis_blocks
from reportgen.trace_ranks import TraceRank


def _cpu(name, ts, dur, cat="cpu_op", **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def _kernel(name, ts, dur, corr, stream=7):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": stream, "correlation": corr}}


def _step(offset, number):
    return [_cpu(f"ProfilerStep#{number}", offset, 1000, cat="user_annotation"),
            _cpu("aten::mm", offset, 100), _cpu("cudaLaunchKernel", offset + 50, 10, cat="cuda_runtime",
                                                correlation=number * 10 + 1),
            _kernel("volta_sgemm_128x64_nn", offset + 70, 500, number * 10 + 1),
            _cpu("aten::item", offset + 100, 600),
            _cpu("cudaStreamSynchronize", offset + 110, 580, cat="cuda_runtime", correlation=number * 10 + 5),
            _cpu("aten::add", offset + 700, 50), _cpu("cudaLaunchKernel", offset + 710, 10, cat="cuda_runtime",
                                                      correlation=number * 10 + 2),
            _kernel("add_kernel", offset + 730, 30, number * 10 + 2)]


def _analyse(tmp_path, events):
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    doc, _ = analyze_traces([path])
    return doc["ranks"]["0"]


def test_critical_path_by_hand(tmp_path):
    rank = _analyse(tmp_path, _step(0, 1))
    path = rank["gpu_analysis"]["critical_path"]
    assert (path["step"], path["step_ms"]) == (1, 1.0)
    assert path["path_ms"] == pytest.approx(0.640)
    assert path["by_ms"] == pytest.approx({"cpu_bound": 0.070, "gpu_compute_bound": 0.530,
                                           "gpu_communication_bound": 0.0, "gpu_kernel_kernel_overhead": 0.0,
                                           "gpu_kernel_launch_overhead": 0.040})
    assert path["shares"]["gpu_compute_bound"] == pytest.approx(530 / 640)
    table = {b.id: b for b in gpu_analysis_blocks("0", TraceRank.of("0", rank)) if isinstance(b, Table)}["kineto-critical-path-0"]
    assert table.rows[0] == ["CPU", pytest.approx(0.07), pytest.approx(100 * 70 / 640)]


def test_a_queued_kernel_follows_the_previous_one(tmp_path):
    """A second kernel launched while the first runs waits for it: a kernel-kernel edge of the gap (5 µs), not a
    launch edge; the path: 50 CPU + 20 launch + 500 + 5 gap + 100 = 675."""
    events = [_cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"),
              _cpu("aten::mm", 0, 100), _cpu("cudaLaunchKernel", 50, 10, cat="cuda_runtime", correlation=1),
              _kernel("sgemm", 70, 500, 1), _cpu("cudaLaunchKernel", 80, 10, cat="cuda_runtime", correlation=2),
              _kernel("relu", 575, 100, 2)]
    path = _analyse(tmp_path, events)["gpu_analysis"]["critical_path"]
    assert path["path_ms"] == pytest.approx(0.675)
    assert path["by_ms"]["gpu_kernel_kernel_overhead"] == pytest.approx(0.005)
    assert path["by_ms"]["gpu_kernel_launch_overhead"] == pytest.approx(0.020)
    assert path["by_ms"]["gpu_compute_bound"] == pytest.approx(0.600)


def test_the_median_step_without_the_first(tmp_path):
    steps = [{"step": n, "start_us": n * 10.0, "dur_us": d} for n, d in ((1, 50.0), (2, 9.0), (3, 7.0), (4, 8.0))]
    assert pick_step(steps)["step"] == 4  # 2, 3, 4 kept (9, 7, 8): the median is 8
    assert pick_step(steps[:2])["step"] == 2  # two steps, both kept (50, 9): the lower median
    assert pick_step([]) is None
    rank = _analyse(tmp_path, _step(0, 1) + _step(2000, 2) + _step(4000, 3))
    assert rank["gpu_analysis"]["critical_path"]["step"] == 2


def test_odd_input_never_raises(tmp_path):
    """A child that outlives its parent, a kernel before its launch, zero-length events: a path, no exception."""
    events = [_cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"), _cpu("aten::mm", 0, 100),
              _cpu("cudaLaunchKernel", 50, 200, cat="cuda_runtime", correlation=1), _kernel("k", 40, 0, 1),
              _cpu("aten::x", 300, 0), _cpu("cudaDeviceSynchronize", 300, 0, cat="cuda_runtime", correlation=3)]
    path = _analyse(tmp_path, events)["gpu_analysis"]["critical_path"]
    assert path["path_ms"] >= 0 and set(path["by_ms"]) == {"cpu_bound", "gpu_compute_bound", "gpu_communication_bound",
                                                          "gpu_kernel_kernel_overhead", "gpu_kernel_launch_overhead"}
