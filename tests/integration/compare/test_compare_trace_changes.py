"""What changed between two trace-only runs, named beside the verdict: the GPU model the ranks ran on
(deviceProperties) and the world size they state (distributedInfo). HTA's trace_diff pair (an A100 rank 3 of 8
against a V100 rank 1 of 2) was compared as "B slower, +60 %" with nothing named as changed; these traces are
built in that shape with our own numbers."""

from __future__ import annotations

import json

import pytest

from reportgen.compare.run import CompareOptions, compare


def _run(folder, gpu, rank, world, step_us):
    events = []
    for i in range(4):
        t = 1_000_000 + i * (step_us + 100)
        events += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1, "ts": t,
             "dur": step_us},
            {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": t + 10, "dur": 300},
            {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": t + 320, "dur": 100},
            {"ph": "X", "cat": "cpu_op", "name": "aten::sum", "pid": 1, "tid": 1, "ts": t + 430, "dur": 100},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 20,
             "dur": 10, "args": {"correlation": i + 1}},
            {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": t + 40,
             "dur": step_us - 100, "args": {"device": 0, "stream": 7, "correlation": i + 1}},
        ]
    folder.mkdir()
    (folder / f"rank-{rank}.pt.trace.json").write_text(json.dumps({
        "schemaVersion": 1, "deviceProperties": [{"id": 0, "name": gpu, "computeMajor": 8, "computeMinor": 0}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world}, "traceEvents": events}))
    return folder


def _changes(tmp_path, a, b):
    out = tmp_path / "c.md"
    compare(str(_run(tmp_path / "a", *a)), str(_run(tmp_path / "b", *b)), out, CompareOptions(fmt="md"))
    verdict = json.loads(out.with_suffix(".json").read_text())["sections"]["verdict"]
    return verdict["comparability"], verdict["text"]


def test_another_gpu_and_world_size_are_named_as_changes(tmp_path):
    fit, text = _changes(tmp_path, ("NVIDIA A100-SXM4-80GB", 3, 8, 5000), ("Tesla V100-SXM2-16GB", 1, 2, 8000))
    assert fit["comparable"] is True
    assert fit["changes"] == ["GPU NVIDIA A100-SXM4-80GB → Tesla V100-SXM2-16GB", "world size 8 → 2 ranks"]
    assert text.startswith("Between the runs: GPU NVIDIA A100-SXM4-80GB → Tesla V100-SXM2-16GB, world size 8 → 2 "
                           "ranks;")


@pytest.mark.parametrize("world_b", [8, None])
def test_the_same_gpu_and_world_name_no_change(tmp_path, world_b):
    """One rank traced of 8 on each side: no change. A side whose trace states no world size is compared by the
    ranks traced, 1 and 1: nothing is named against an unknown."""
    fit, _ = _changes(tmp_path, ("NVIDIA A100-SXM4-80GB", 3, 8, 5000), ("NVIDIA A100-SXM4-80GB", 5, world_b, 5200))
    assert fit["comparable"] is True and fit["changes"] == []
