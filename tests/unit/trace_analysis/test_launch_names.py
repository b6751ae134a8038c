"""ROCm's HIP runtime names and CUDA-graph replays paired with their kernels like CUDA launches (issue 48): the
project's launch-bound set (testdata/kineto_synthetic.py) rewritten with the names those traces carry."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

from reportgen.diagnosis import diagnose
from reportgen.rule_outputs import RuleOutputs
from reportgen.trace_analysis import analyze_job, find_traces
from testdata.kineto_synthetic import KinetoSet, write_set

RENAMES = {"cuda": {}, "hip": {"cudaLaunchKernel": "hipLaunchKernel", "cudaMemcpyAsync": "hipMemcpyAsync",
                               "cudaMemsetAsync": "hipMemsetAsync", "cudaStreamSynchronize": "hipStreamSynchronize",
                               "cudaDeviceSynchronize": "hipDeviceSynchronize"},
           "graph": {"cudaLaunchKernel": "cudaGraphLaunch"}, "mixed": {}}


@functools.lru_cache(maxsize=None)
def _analysed(runtime: str) -> str:
    with tempfile.TemporaryDirectory() as folder:
        write_set(KinetoSet(ranks=1, mb=1.5, seed=3, cycles=1, straggler=None, cause="kernel-launch-bound"),
                  Path(folder))
        for path in Path(folder).rglob("*.json"):
            text = path.read_text()
            for old, new in RENAMES[runtime].items():
                text = text.replace(f'"{old}"', f'"{new}"')
            if runtime == "mixed":  # two launches in three replayed from graphs, the rest launched one by one
                parts = text.split('"cudaLaunchKernel"')
                text = parts[0] + "".join(('"cudaLaunchKernel"' if i % 3 == 0 else '"cudaGraphLaunch"') + part
                                          for i, part in enumerate(parts[1:]))
            path.write_text(text)
        doc, _ = analyze_job(find_traces(Path(folder)))
    return json.dumps(doc)


def _rank(runtime: str) -> dict:
    return next(iter(json.loads(_analysed(runtime))["ranks"].values()))


def _findings(runtime: str):
    made = RuleOutputs(folder=Path("."))
    made.rules, made.timeline, made.traces = {}, None, json.loads(_analysed(runtime))
    return diagnose(made).findings


def test_hip_launches_are_paired_as_cuda_ones():
    cuda, hip = _rank("cuda")["gpu_analysis"], _rank("hip")["gpu_analysis"]
    assert cuda["launch"]["with_launch"] > 0 and cuda["launch"]["graph_launched"] == 0
    assert hip["launch"] == cuda["launch"]
    assert hip["queue_length"] == cuda["queue_length"] and hip["critical_path"] == cuda["critical_path"]
    assert hip["sync"]["by_call"] == {"hipStreamSynchronize": 1} and cuda["sync"]["by_call"] == {"cudaStreamSynchronize": 1}
    assert {**hip["sync"], "by_call": None} == {**cuda["sync"], "by_call": None}
    assert [f.cause for f in _findings("hip")][:1] == ["kernel-launch-bound"]


def test_kernels_a_graph_replay_launched_are_counted_apart_and_no_graph_capture_is_advised():
    cuda, graph = _rank("cuda")["gpu_analysis"]["launch"], _rank("graph")["gpu_analysis"]["launch"]
    kernels = cuda["kernels"]
    assert graph["graph_launched"] == kernels and graph["graph_launched_share"] > 0.9
    assert graph["with_launch"] == cuda["with_launch"] - kernels  # the copies and memsets keep their calls
    assert _rank("graph")["gpu_analysis"]["queue_length"] == _rank("cuda")["gpu_analysis"]["queue_length"]
    assert not any("CUDA graphs" in f.fix for f in _findings("graph"))


def test_a_step_mostly_replayed_from_graphs_is_not_told_to_capture_graphs():
    launch = _rank("mixed")["gpu_analysis"]["launch"]
    assert launch["graph_launched_share"] > 0.5 and launch["with_launch"] > 0
    (bound,) = [f for f in _findings("mixed") if f.cause == "kernel-launch-bound"]
    assert "already replays from CUDA graphs" in bound.fix and "capture the step" not in bound.fix
