"""The per-stream idle split, the critical path, the kernel sequences and the queue over a step on odd traces
(seeded random: overlapping and zero-length events, repeated and missing correlation ids, launches after their
kernels, nested steps, several threads and streams): never an exception, and their numbers stay in range."""

from __future__ import annotations

import json
import random

import pytest

from reportgen.trace_analysis.job import analyze_traces

CATS = ("cpu_op", "cuda_runtime", "kernel", "gpu_memcpy", "gpu_memset", "user_annotation", "cuda_driver")
NAMES = ("aten::mm", "cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize", "sgemm",
         "ncclKernel_AllReduce_RING_LL_Sum_float", "Memcpy HtoD (Pageable -> Device)", "ProfilerStep#1", "ProfilerStep#2")


def _events(rng: random.Random) -> list[dict]:
    out = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
            "ts": i * 300 + rng.choice((0, 5)), "dur": rng.choice((0, 100, 300, 400))} for i in range(rng.randint(0, 4))]
    for _ in range(rng.randint(0, 80)):
        cat = rng.choice(CATS)
        gpu = cat in ("kernel", "gpu_memcpy", "gpu_memset")
        out.append({"ph": "X", "cat": cat, "name": rng.choice(NAMES), "pid": 0 if gpu else 1,
                    "tid": rng.choice((7, 20)) if gpu else rng.choice((1, 2)), "ts": rng.uniform(0, 1200),
                    "dur": rng.choice((0, 0.5, 3, 40, 250)),
                    "args": {"correlation": rng.choice((-1, 1, 2, 3, rng.randint(0, 40))),
                             **({"device": 0, "stream": 7} if gpu else {})}})
    return out


@pytest.mark.parametrize("seed", range(40))
def test_odd_traces_never_raise(tmp_path, seed):
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": _events(random.Random(seed))}))
    doc, _ = analyze_traces([path])
    for rank in doc["ranks"].values():
        ga = rank.get("gpu_analysis")
        if not ga:
            continue
        for stream in ga["idle_per_stream"].values():
            assert min(stream.values()) >= 0
            assert stream["idle_ms"] == pytest.approx(stream["host_wait_ms"] + stream["kernel_wait_ms"]
                                                      + stream["other_ms"])
        path_ = ga["critical_path"]
        if path_ and "path_ms" in path_:
            assert sum(path_["by_ms"].values()) <= path_["path_ms"] + 1e-9
            assert all(s is None or 0 <= s <= 1 + 1e-9 for s in path_["shares"].values())
        for pattern in ga["kernel_patterns"]:
            assert pattern["length"] >= 3 and pattern["count"] >= 1
        over = ga["queue_over_step"]
        for stream in (over or {}).get("streams", {}).values():
            assert 0 <= stream["empty_share"] <= 1 and len(stream["bin_max"]) == 50
