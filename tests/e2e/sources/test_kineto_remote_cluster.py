"""A remote Dask cluster with no shared file system analyses PyTorch profiler traces kept in S3.

The test starts ``dask scheduler`` and two ``dask worker`` processes (each in an empty folder of its
own, with the moto server's endpoint and fake credentials in its environment, nothing else shared
with this process but the network), uploads a multi-rank trace set to a moto bucket and deletes the
local copy. ``generate``'s path (``prepare_rule_outputs`` with ``--scheduler tcp://...``) must then
leave the traces in S3 — the workers fetch them — and write the kineto.json the local analysis of
the same files wrote, byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from reportgen.trace_analysis.job import S3System, analyze_traces  # noqa: E402
from reportgen.trace_analysis.outputs import write_kineto_outputs  # noqa: E402
from tests.support.trace_sets import rank_events, write_trace  # noqa: E402

from tests.support.sources_testlib import REGION, client  # noqa: E402

BUCKET = "reportgen-kineto-cluster"
PREFIX = "runs/ddp-2026/traces"


def _trace_set(folder: Path) -> list[Path]:
    """Four DDP ranks of two cycles each; a cut third cycle of rank 0 (no distributedInfo: joins its
    worker's rank); a second process that also says rank 1 (merged into rank 1: a regrouped rank)."""
    for r in range(4):
        for c in range(2):
            write_trace(folder / f"node{r // 2}_{200 + r}.{1700000000000000000 + 10**12 * c + r}.pt.trace.json.gz",
                        rank_events(1.7e15 + 2e6 * c + 10 * r, 3, 1.8 if r == 3 else 1.0, extra=str(r % 2)), rank=r)
    write_trace(folder / f"node0_200.{1700000003000000000}.pt.trace.json", rank_events(1.7e15 + 6e6, 2, 1.0), cut=True)
    write_trace(folder / f"node1_999.{1700000004000000000}.pt.trace.json", rank_events(1.7e15 + 8e6, 2, 1.3, "z"),
                rank=1)
    return sorted(folder.iterdir())


@pytest.fixture(scope="module")
def remote_cluster(moto_endpoint, tmp_path_factory):
    """``tcp://`` address of a scheduler and two single-threaded workers, separate processes."""
    dask_cli = Path(sys.executable).parent / "dask"
    if not dask_cli.exists():
        pytest.skip("the dask command is not installed beside this Python")
    base = tmp_path_factory.mktemp("cluster")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["AWS_ENDPOINT_URL"] = moto_endpoint  # (also in os.environ: set by the moto fixture)
    scheduler_file = base / "scheduler.json"
    procs = []
    try:
        procs.append(subprocess.Popen([str(dask_cli), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                       "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                                      cwd=base, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(300):
            if scheduler_file.is_file() and scheduler_file.stat().st_size:
                break
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        for i in range(2):
            own = base / f"worker{i}"
            own.mkdir()
            procs.append(subprocess.Popen([str(dask_cli), "worker", address, "--nthreads", "1", "--no-dashboard",
                                           "--local-directory", str(own), "--name", f"w{i}"],
                                          cwd=own, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from dask.distributed import Client

        with Client(address, timeout=30) as c:
            c.wait_for_workers(2, timeout=60)
            pids = set(c.run(os.getpid).values())
        yield address, pids
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture(scope="module")
def uploaded(moto_endpoint, tmp_path_factory):
    """The trace set's local analysis (kineto.json bytes, problems), then the files only in S3."""
    folder = tmp_path_factory.mktemp("traces") / "ddp"
    files = _trace_set(folder)
    write_kineto_outputs(files, folder.parent / "local")
    expected = (folder.parent / "local" / "kineto.json").read_bytes()
    _, problems = analyze_traces(files)
    s3 = client("s3")
    s3.create_bucket(Bucket=BUCKET)
    for path in files:
        s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/{path.name}", Body=path.read_bytes())
    shutil.rmtree(folder)  # from now on the traces exist only in the bucket
    return expected, problems, [f"{PREFIX}/{p.name}" for p in files]


def test_generate_on_a_tcp_cluster_leaves_the_traces_in_s3_and_gets_the_same_kineto_json(
        remote_cluster, uploaded, tmp_path, monkeypatch):
    from reportgen.pipeline import EngineOptions, SourceOptions, prepare_rule_outputs

    address, _ = remote_cluster
    expected, local_problems, keys = uploaded
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    messages: list[str] = []
    cache = tmp_path / "cache"
    prepared = prepare_rule_outputs(f"s3://{BUCKET}/{PREFIX}/", tmp_path / "work",
                                    SourceOptions(cache_dir=cache, engine=EngineOptions(scheduler=address)),
                                    progress=messages.append)
    assert prepared.used == "PyTorch profiler traces"
    # the client downloaded no trace: what the cache holds is the trace cache's entries, which the workers (on this
    # machine, so they see the folder) made of the objects they read (trace_analysis/s3_traces.py)
    kept = [p.relative_to(cache) for p in cache.rglob("*") if p.is_file()]
    assert kept and all(p.parts[0] == "traces" and p.name.endswith((".npz", ".head.json", ".rank.json")) for p in kept)
    assert any(f"{len(keys)} PyTorch profiler trace objects stay in s3://{BUCKET}/" in m for m in messages)
    # 5 planned tasks + rank 1 again, on the two workers, every trace byte read there
    sizes = {o["Key"]: o["Size"] for o in client("s3").list_objects_v2(Bucket=BUCKET, Prefix=PREFIX)["Contents"]}
    again = sum(size for key, size in sizes.items() if "node0_201." in key or "node1_999." in key)
    line = next(m for m in messages if m.startswith("PyTorch profiler traces: "))
    assert line.startswith("PyTorch profiler traces: 6 task(s) on ") and " worker process(es), " in line
    assert line.split(" on ")[1].split(" ")[0] in ("1", "2")
    assert f", {(sum(sizes.values()) + again) / 1e6:.1f} MB read there" in line
    analysis = prepared.rule_dir.parent
    assert (analysis / "kineto.json").read_bytes() == expected
    doc = json.loads(expected)
    assert list(doc["ranks"]) == ["0", "1", "2", "3"] and doc["ranks"]["0"]["cycles"] == 3
    assert doc["ranks"]["1"]["workers"] == ["node0_201", "node1_999"]
    quality = json.loads((analysis / "data-quality.json").read_text())
    assert quality["by_reason"] == dict(sorted(local_problems.counts.items())) and quality["total"] == 2
    # the workers name the objects they read by their S3 URI
    assert [p["file"] for p in quality["problems"]] == [f"s3://{BUCKET}/{PREFIX}/node0_200.1700000003000000000.pt.trace.json",
                                                        f"s3://{BUCKET}/{PREFIX}/node0_201.1700000000000000001.pt.trace.json.gz"]


@pytest.mark.slow
def test_every_task_runs_in_a_worker_process_that_fetched_its_own_objects(remote_cluster, uploaded):
    from dask.distributed import Client

    address, worker_pids = remote_cluster
    expected, _, keys = uploaded
    listed = client("s3").list_objects_v2(Bucket=BUCKET, Prefix=PREFIX)["Contents"]
    sizes = {o["Key"]: (o["Size"], o["ETag"].strip('"')) for o in listed}
    spec = S3System(BUCKET, "", tuple((k, *sizes[k]) for k in keys), region=REGION)
    stats: list = []
    with Client(address, timeout=30) as c:
        doc, _ = analyze_traces(keys, client=c, s3=spec, stats=stats)
    assert json.dumps(doc) == expected.decode()
    assert {s.worker_pid for s in stats} <= worker_pids and os.getpid() not in worker_pids
    # 5 planned tasks (one per worker name: node0_200 with its cut cycle, node0_201, node1_202,
    # node1_203, node1_999) + rank 1 reduced again from node0_201's and node1_999's files
    assert len(stats) == 6 and sum(s.files for s in stats[:5]) == len(keys)
    assert sum(s.bytes for s in stats[:5]) == sum(size for size, _ in sizes.values())
