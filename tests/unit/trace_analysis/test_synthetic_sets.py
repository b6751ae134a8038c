"""The benchmark's multi-rank Kineto generator (testdata/kineto_synthetic.py, benchmarks/generate_kineto.py):
byte-for-byte deterministic, and what reportgen reads from its output is what was planted (ranks,
cycles, steps, the straggler and why, no data problem)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from reportgen.trace_analysis import analyze_job, find_traces
from testdata.kineto_synthetic import KinetoSet, step_numbers, write_set

# 3 ranks x 2 cycles, two layers per step: ~3,400 events per step, a few MB in all
SMALL = KinetoSet(ranks=3, mb=1.0, seed=5, cycles=2, straggler=2, straggler_ms=40.0, layers=2)


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_same_arguments_give_byte_identical_files_and_another_seed_does_not(tmp_path):
    first = write_set(SMALL, tmp_path / "a")
    write_set(SMALL, tmp_path / "b")
    write_set(replace(SMALL, seed=6), tmp_path / "c")
    a, b, c = _digests(tmp_path / "a"), _digests(tmp_path / "b"), _digests(tmp_path / "c")
    assert len(a) == 6 and a == b  # 3 ranks x 2 cycles, same names, same bytes
    assert set(a.values()).isdisjoint(c.values())
    # torch's naming: <host>_<pid>.<ns>.pt.trace.json, one file per cycle of a process
    workers = {p.name.split(".")[0] for p in first["files"]}
    assert len(workers) == 3 and all(w.startswith("node000_") for w in workers)
    assert all(p.name.endswith(".pt.trace.json") for p in first["files"])
    # plain JSON that json reads, with torch's metadata
    doc = json.loads(first["files"][-1].read_text())
    assert doc["distributedInfo"] == {"backend": "nccl", "rank": 2, "world_size": 3, "pg_count": 1}
    assert len(doc["deviceProperties"]) == 8 and doc["baseTimeNanoseconds"] > 0


def test_reportgen_reads_the_planted_ranks_steps_and_straggler_without_a_data_problem(tmp_path):
    info = write_set(SMALL, tmp_path)
    doc, problems = analyze_job(find_traces(tmp_path))
    assert problems.total == 0
    assert list(doc["ranks"]) == ["0", "1", "2"]
    expected_steps = [n for cycle in step_numbers(SMALL, info["steps_per_cycle"]) for n in cycle]
    assert len(expected_steps) == 2 * info["steps_per_cycle"] >= 2
    means = []
    for label, rank in doc["ranks"].items():
        assert rank["rank"] == int(label) and rank["world_size"] == 3 and rank["backend"] == "nccl"
        assert rank["cycles"] == 2 and len(rank["files"]) == 2 and rank["complete"]
        assert [s["step"] for s in rank["steps"]] == expected_steps
        assert rank["gpu_ids"] == [int(label)]  # local rank = GPU of an 8-GPU node
        assert rank["kernels"]["count"] > 0 and 0 < rank["gpu"]["active_pct"] <= 100
        assert {m["kind"] for m in rank["memory_ops"]} == {"Memset", "HtoD", "DtoH"}
        assert rank["precision_ms"]["bf16"] > 0 and rank["precision_ms"]["communication (NCCL)"] > 0
        assert rank["dataloader"]["iterator"] == "_MultiProcessingDataLoaderIter" and rank["dataloader"]["workers"]
        means.append(rank["step_stats_ms"]["mean"])
    # lock-step training: equal step times on every rank (the straggler shows in the others' wait)
    assert max(means) / min(means) < 1.01
    loader = {label: r["dataloader"]["per_step_ms"] for label, r in doc["ranks"].items()}
    assert loader["2"] - loader["0"] == pytest.approx(40.0, abs=1.0)
    assert doc["straggler"]["rank"] == "2" and doc["straggler"]["method"] == "collective wait"
    assert "data loading" in doc["straggler"]["reason"]
    waits = doc["comparison"]["collective_wait_ms"]
    assert waits["2"] < waits["0"] and waits["2"] < waits["1"]


def test_without_a_straggler_no_rank_is_named(tmp_path):
    write_set(replace(SMALL, straggler=None), tmp_path)
    doc, problems = analyze_job(find_traces(tmp_path))
    assert problems.total == 0 and len(doc["ranks"]) == 3
    assert doc["straggler"] is None and doc["comparison"]["method"] == "collective wait"
    shares = [r["collectives"]["step_share"] for r in doc["ranks"].values()]
    assert max(shares) - min(shares) < 0.02  # every rank waits about as little
