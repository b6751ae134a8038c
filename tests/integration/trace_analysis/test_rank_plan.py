"""A rank whose files torch did not name alike (one ``distributedInfo.rank`` in several files) is planned as
one task from the files' headers, so each file is read once, not once per task and again for the merge; on
Dask its files are read by separate tasks (on every worker at once) and merged by one (issue #33)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from reportgen.trace_analysis import job
from reportgen.trace_analysis.job import analyze_traces, plan_tasks, probe_rank
from tests.support.trace_sets import rank_events


def _write(path: Path, events: list[dict], rank: int | None, header: bool = True) -> Path:
    """A trace with distributedInfo before its events (as torch writes it) or after them."""
    info = {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 4}} if rank is not None else {}
    doc = {"schemaVersion": 1, **(info if header else {}), "traceEvents": events, **({} if header else info)}
    text = json.dumps(doc).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text) if path.name.endswith(".gz") else text)
    return path


@pytest.fixture()
def copies(tmp_path):
    """Rank 0 in three files named like the issue's set (rank-<i>....json.gz, no torch worker name), rank 1
    in one, and a file with no distributedInfo."""
    files = [_write(tmp_path / f"rank-{i}.Apr_03_18_51_38.1102.pt.trace.json.gz",
                    rank_events(1.7e15 + 3e6 * i, 3, 1.0 + i / 10, str(i)), rank=0) for i in range(3)]
    files.append(_write(tmp_path / "rank-3.Apr_03_18_51_38.1102.pt.trace.json.gz", rank_events(1.7e15, 3, 1.5, "b"),
                        rank=1))
    files.append(_write(tmp_path / "lone.json", rank_events(1.7e15, 2, 1.0, "c"), rank=None))
    return files


def test_probe_rank_reads_the_header_only_and_never_raises(tmp_path):
    events = rank_events(1.7e15, 2, 1.0)
    assert probe_rank(_write(tmp_path / "a.json.gz", events, rank=5)) == 5
    assert probe_rank(_write(tmp_path / "b.json", events, rank=0)) == 0
    assert probe_rank(_write(tmp_path / "after.json", events, rank=2, header=False)) is None  # after the events
    assert probe_rank(_write(tmp_path / "none.json", events, rank=None)) is None
    (tmp_path / "bool.json").write_text('{"distributedInfo": {"rank": true}, "traceEvents": []}')
    (tmp_path / "cut.json").write_text('{"distributedInfo": {"rank": 3, "world')
    (tmp_path / "junk.json.gz").write_bytes(b"\x1f\x8b" + os.urandom(200))
    (tmp_path / "list.json").write_text('{"distributedInfo": [1], "traceEvents": []}')
    for name in ("bool.json", "cut.json", "junk.json.gz", "list.json", "missing.json"):
        assert probe_rank(tmp_path / name) is None, name
    # a gzip bomb: only PROBE_TEXT bytes are decompressed, and nothing is found in them
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b'{"x": "' + b" " * (50 * 2**20) + b'", "distributedInfo": {"rank": 1}}'))
    assert probe_rank(bomb) is None


def test_the_plan_joins_the_files_of_one_rank_and_of_one_torch_worker():
    names = ["rank-0.x.json", "rank-1.x.json", "rank-2.x.json", "vm_1.1700000000000000000.pt.trace.json",
             "vm_1.1700000001000000000.pt.trace.json", "y.json"]
    assert plan_tasks(names) == [[0], [1], [2], [3, 4], [5]]  # names only: as before
    # rank 0 in files 0 and 2; vm_1's first cycle says rank 1 (its cut second cycle says nothing); y.json rank 1
    assert plan_tasks(names, [0, None, 0, 1, None, 1]) == [[0, 2], [1], [3, 4, 5]]


def test_one_rank_in_several_files_is_read_once_per_file(copies, monkeypatch):
    reads: list[str] = []
    real = job.read_trace_keyed

    def counting(path, log, cache):  # no cache here (analyze_traces without one): every call reads the file
        reads.append(Path(path).name)
        return real(path, log, cache)

    monkeypatch.setattr(job, "read_trace_keyed", counting)
    stats: list = []
    doc, problems = analyze_traces(copies, stats=stats)
    assert sorted(reads) == sorted(p.name for p in copies)  # before: the three rank-0 files twice each
    assert list(doc["ranks"]) == ["0", "1", "lone"]
    assert doc["ranks"]["0"]["cycles"] == 3 and doc["ranks"]["0"]["files"] == [p.name for p in copies[:3]]
    assert [s.files for s in stats] == [3, 1, 1]
    # the same document as when the plan knows nothing (tasks from names, rank 0 reduced again)
    monkeypatch.setattr(job, "probe_rank", lambda path: None)
    reads.clear()
    again, again_problems = analyze_traces(copies)
    assert len(reads) == len(copies) + 3
    assert json.dumps(again) == json.dumps(doc) and again_problems.to_json() == problems.to_json()


def test_on_dask_a_rank_of_several_files_is_read_by_one_task_per_file_and_merged_once(copies, dask_cluster):
    from distributed import get_task_stream

    local_doc, local_problems = analyze_traces(copies)
    stats: list = []
    with get_task_stream(dask_cluster) as stream:
        doc, problems = analyze_traces(copies, client=dask_cluster, stats=stats)
    assert json.dumps(doc) == json.dumps(local_doc) and problems.to_json() == local_problems.to_json()
    ran = sorted(t["key"].split("-")[0] for t in stream.data)
    # rank 0: three reads and one merge; rank 1 and the lone file: one task each; nothing reduced again
    assert ran == ["read_file"] * 3 + ["reduce_reads"] + ["reduce_task"] * 2
    assert [s.files for s in stats] == [3, 1, 1]
    assert stats[0].bytes == sum(p.stat().st_size for p in copies[:3])
    workers = set(dask_cluster.run(os.getpid).values())
    assert {s.worker_pid for s in stats} <= workers


def _worker_config() -> tuple:
    import dask

    return (dask.config.get("distributed.worker.profile.enabled"), dask.config.get("distributed.admin.tick.interval"),
            dask.config.get("distributed.worker.memory.monitor-interval"))


def test_a_local_cluster_runs_its_workers_without_the_statistical_profiler():
    pytest.importorskip("distributed")
    from reportgen.cluster.client import dask_client
    from reportgen.cluster.scheduler import parse_scheduler

    with dask_client(parse_scheduler("local:1")) as client:
        # the workers are forked from a server started before this configuration was set: the nanny passes it on
        assert list(client.run(_worker_config).values()) == [(False, "500ms", "500ms")]


def test_on_dask_a_warm_rank_of_several_files_is_one_task_served_from_its_heads(copies, dask_cluster, tmp_path):
    """Issue 51: with every file's head kept, the rank's three files are not read by three tasks (each loading the
    file's entry) but reduced by one task from the heads and the rank's kept analysis."""
    import functools
    import time

    from distributed import get_task_stream

    from reportgen.readers.digest_memo import DigestMemo
    from reportgen.readers.trace_cache import TraceCache

    def cache() -> TraceCache:  # as each run makes it; a clock 10 s ahead: the memo trusts files just written
        folder = tmp_path / "cache"
        folder.mkdir(exist_ok=True)
        return TraceCache(folder, 1 << 30, memo=DigestMemo(folder, clock=functools.partial(int, time.time_ns() + 10**10)))

    local_doc, local_problems = analyze_traces(copies)
    with get_task_stream(dask_cluster) as cold:
        doc, problems = analyze_traces(copies, client=dask_cluster, cache=cache())
    assert json.dumps(doc) == json.dumps(local_doc) and problems.to_json() == local_problems.to_json()
    assert sorted(t["key"].split("-")[0] for t in cold.data) == ["read_file"] * 3 + ["reduce_reads"] + ["reduce_task"] * 2
    entries = sorted((tmp_path / "cache").glob("*.npz"))
    assert len(entries) == len(copies)
    for entry in entries:  # a loaded entry is touched (its last use): none may be
        os.utime(entry, ns=(10**18, 10**18))
    stats: list = []
    with get_task_stream(dask_cluster) as warm:
        doc, problems = analyze_traces(copies, client=dask_cluster, cache=cache(), stats=stats)
    assert json.dumps(doc) == json.dumps(local_doc) and problems.to_json() == local_problems.to_json()
    assert sorted(t["key"].split("-")[0] for t in warm.data) == ["reduce_task"] * 3
    assert [s.files for s in stats] == [3, 1, 1]
    assert [entry.stat().st_mtime_ns for entry in entries] == [10**18] * len(entries)
