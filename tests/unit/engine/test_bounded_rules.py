"""Bounded work per node (issue #30 item 5): one node with many GPU series costs time linear in the data.

A node with 20,000 GPU series (a 7 MB file) took 98 s and 4 GB: BatchSize selected every column once per
GPU, LoadBalancing built every GPU pair. Timings are in benchmarks/HISTORY.md ("Many GPU series on one
node"), not here; this checks the outcome: LoadBalancing compares at most ``MAX_GPU_SERIES_PER_NODE``
series and Data quality says how many were left out; BatchSize still looks at every GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

from reportgen.engine import analyze
from reportgen.engine.model import MAX_GPU_SERIES_PER_NODE
from tests.support.gpu_series import make_node

NOTE = (f"more than {MAX_GPU_SERIES_PER_NODE} GPU series on one node "
        f"(LoadBalancing and the timeline use the first {MAX_GPU_SERIES_PER_NODE} only)")


def _analyze(tmp_path: Path, gpus: int) -> tuple[dict, dict]:
    make_node(tmp_path / "src", gpus, instants=12)
    analyze(tmp_path / "src", tmp_path / "out")
    rules = tmp_path / "out" / "profiler-reports"
    quality = json.loads((tmp_path / "out" / "data-quality.json").read_text())
    return {p.stem: json.loads(p.read_text()) for p in rules.glob("*.json")}, quality


def test_past_the_cap_load_balancing_compares_the_first_series_and_says_so(tmp_path):
    gpus = MAX_GPU_SERIES_PER_NODE + 36
    rules, quality = _analyze(tmp_path, gpus)
    workloads = rules["LoadBalancing"]["Details"]["algo-1"]["workloads"]
    assert list(workloads) == [f"gpu{g}" for g in range(MAX_GPU_SERIES_PER_NODE)]
    assert quality["by_reason"] == {NOTE: 36}
    assert [p["file"] for p in quality["problems"]] == ["node algo-1"]
    assert rules["BatchSize"]["Datapoints"] == 12  # every GPU still read by the other rules


def test_a_normal_node_is_not_capped(tmp_path):
    rules, quality = _analyze(tmp_path, 8)
    assert list(rules["LoadBalancing"]["Details"]["algo-1"]["workloads"]) == [f"gpu{g}" for g in range(8)]
    assert quality.get("by_reason", {}) == {}


def test_batch_size_reads_each_dimension_once_not_once_per_gpu(tmp_path, monkeypatch):
    """columns × GPUs before: 2 selects (one per dimension) per node now, whatever the number of GPUs."""
    from reportgen.engine import load_data
    from reportgen.engine.rules import batch_size

    make_node(tmp_path / "src", 200, instants=4)
    data, _ = load_data(tmp_path / "src")
    node = data.nodes["algo-1"]
    calls = []
    real = type(node).select

    def counting(self, dimension=None, name=None):
        calls.append((dimension, name))
        return real(self, dimension, name)

    monkeypatch.setattr(type(node), "select", counting)
    batch_size.evaluate(data)
    # the cores are read with ``take`` a block of ticks at a time (issue 32), the GPUs' columns by one select each
    assert calls == [("GPUUtilization", None), ("GPUMemoryUtilization", None)]
