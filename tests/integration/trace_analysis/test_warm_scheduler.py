"""A warm ``--scheduler`` run whose every rank is kept starts no Dask cluster (``job.served_whole``): the heads and
the ranks' entries it would have sent its workers to read are read here, and the outputs are the cold run's, byte
for byte. A rank whose entry is gone sends the run back to its cluster, with the same outputs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from reportgen.cluster import client as cluster_client  # noqa: E402
from reportgen.pipeline import EngineOptions, SourceOptions, prepare_rule_outputs  # noqa: E402
from tests.support.trace_sets import rank_events, write_trace  # noqa: E402

NO_CLUSTER = "PyTorch profiler traces: every rank served from the trace cache, no Dask cluster started"


def _run(source: Path, work: Path, cache: Path) -> tuple[dict[str, bytes], list[str]]:
    messages: list[str] = []
    prepared = prepare_rule_outputs(str(source), work, SourceOptions(cache_dir=cache,
                                                                     engine=EngineOptions(scheduler="local:1")),
                                    progress=messages.append)
    analysis = prepared.rule_dir.parent
    outputs = {p.relative_to(analysis).as_posix(): p.read_bytes() for p in sorted(analysis.rglob("*")) if p.is_file()}
    assert "kineto.json" in outputs
    return outputs, [m for m in messages if m.startswith("PyTorch profiler traces: ")]


def test_a_warm_scheduler_run_starts_no_cluster_and_writes_the_cold_runs_outputs(tmp_path, monkeypatch):
    source = tmp_path / "traces"
    for c in range(2):  # rank 0 in two cycles, rank 1 in one file
        write_trace(source / f"node0_100.{1700000000000000000 + 10**12 * c}.pt.trace.json",
                    rank_events(1.7e15 + 2e6 * c, 3, 1.0), rank=0)
    write_trace(source / "node0_101.1700000000000000001.pt.trace.json.gz", rank_events(1.7e15, 3, 1.3, "a"), rank=1)
    time.sleep(2.1)  # older than the digest memo's racy window: a warm run knows the files by a stat
    cache = tmp_path / "cache"
    cold, lines = _run(source, tmp_path / "w1", cache)
    assert len(lines) == 1 and " task(s) on 1 worker process(es)" in lines[0]

    with monkeypatch.context() as patched:
        def refuse(*_, **__):
            raise AssertionError("a warm run whose every rank is kept started a Dask cluster")

        patched.setattr(cluster_client, "dask_client", refuse)
        warm, lines = _run(source, tmp_path / "w2", cache)
    assert lines == [NO_CLUSTER] and warm == cold

    ranks = sorted((cache / "traces").glob("*.rank.json"))
    assert len(ranks) >= 2
    ranks[0].unlink()
    again, lines = _run(source, tmp_path / "w3", cache)
    assert len(lines) == 1 and " task(s) on 1 worker process(es)" in lines[0] and again == cold
    warm, lines = _run(source, tmp_path / "w4", cache)
    assert lines == [NO_CLUSTER] and warm == cold
