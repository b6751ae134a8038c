"""A remote Dask cluster with no shared file system reads a SageMaker profile's framework traces
(and system metrics) kept in S3.

The cluster is the one ``test_kineto_remote_cluster`` starts (``dask scheduler`` and two ``dask
worker`` processes in empty folders of their own, sharing only the network and the moto endpoint).
A small synthetic SageMaker profile (system metrics, pevents traces) is analysed locally, uploaded
to a moto bucket, and the local copy deleted: ``generate``'s path with ``--scheduler tcp://...``
must leave the traces and the system metrics in S3 and write the local analysis's rule outputs,
timeline and data-quality.json byte for byte; each trace file is reduced in a worker process that
fetched it itself.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from reportgen.engine import analyze  # noqa: E402
from reportgen.problems import ProblemLog  # noqa: E402
from reportgen.cluster.s3_objects import S3System  # noqa: E402
from reportgen.readers.distributed import framework_listing  # noqa: E402

from tests.support.sources_testlib import REGION, client  # noqa: E402
from tests.e2e.sources.test_kineto_remote_cluster import remote_cluster  # noqa: E402,F401  (the module's cluster fixture)

BUCKET = "reportgen-framework-cluster"
PREFIX = "jobs/fw-2026/profiler-output"


def _outputs(folder: Path) -> dict[str, bytes]:
    got = {p.name: p.read_bytes() for p in sorted((folder / "profiler-reports").glob("*.json"))}
    for name in ("data-quality.json", "timeline.json"):
        got[name] = (folder / name).read_bytes()
    return got


@pytest.fixture(scope="module")
def uploaded(moto_endpoint, tmp_path_factory):
    """The profile's local analysis, then the profile only in the bucket."""
    from testdata.synthetic import generate

    folder = tmp_path_factory.mktemp("fw") / "profile"
    generate(folder, nodes=2, cores=4, gpus=1, duration_s=300, interval_ms=500, seed=9)
    local = folder.parent / "local"
    analyze(folder, local)
    n_traces = len(list((folder / "framework").rglob("*.json")))
    s3 = client("s3")
    s3.create_bucket(Bucket=BUCKET)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/{path.relative_to(folder).as_posix()}", Body=path.read_bytes())
    shutil.rmtree(folder)  # from now on the profile exists only in the bucket
    return _outputs(local), n_traces


@pytest.mark.slow
def test_generate_on_a_tcp_cluster_leaves_traces_in_s3_and_writes_the_local_outputs(
        remote_cluster, uploaded, tmp_path, monkeypatch):  # noqa: F811
    from reportgen.pipeline import EngineOptions, SourceOptions, prepare_rule_outputs

    address, _ = remote_cluster
    expected, n_traces = uploaded
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    messages: list[str] = []
    cache = tmp_path / "cache"
    prepared = prepare_rule_outputs(f"s3://{BUCKET}/{PREFIX}/", tmp_path / "work",
                                    SourceOptions(cache_dir=cache, engine=EngineOptions(scheduler=address)),
                                    progress=messages.append)
    assert prepared.used == "raw data"
    cached = [p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file()]
    assert not [p for p in cached if "/framework/" in p or ("/system/" in p and p.endswith(".json"))]
    assert n_traces == 10 and any(f"{n_traces} framework traces stay in s3://{BUCKET}/" in m for m in messages)
    got = _outputs(prepared.rule_dir.parent)
    assert len(got) == 13 and got == expected
    overall = json.loads(got["OverallFrameworkMetrics.json"])["Details"]
    assert set(overall["phase"]) >= {"Step:ModeKeys.TRAIN", "others"}  # the rules saw the traces


@pytest.mark.slow
def test_each_trace_is_reduced_in_a_worker_that_fetched_it(remote_cluster, uploaded):  # noqa: F811
    from dask.distributed import Client

    from reportgen.engine.framework_events import FileSummary
    from tests.support.engine_builders import summaries_on

    address, worker_pids = remote_cluster
    _, n_traces = uploaded
    listed = client("s3").list_objects_v2(Bucket=BUCKET, Prefix=f"{PREFIX}/framework/")["Contents"]
    spec = S3System(BUCKET, PREFIX, tuple((o["Key"], o["Size"], o["ETag"].strip('"')) for o in listed), region=REGION)
    nowhere = Path("/nonexistent-reportgen-root")  # nothing is read on this side
    files = [rel for _, rel in framework_listing(nowhere, None, spec)]
    seen: list = []
    with Client(address, timeout=30) as c:
        fw = summaries_on(c, nowhere, ProblemLog(), files, seen, s3=spec)
    try:
        assert len(seen) == len(files) == n_traces and all(isinstance(fs, FileSummary) for fs in seen)
        assert {fs.stats.worker_pid for fs in seen} <= worker_pids and os.getpid() not in worker_pids
        assert sum(fs.stats.bytes for fs in seen) == sum(o["Size"] for o in listed)
        assert fw.n_events > 1000 and 0 < len(fw.rows) < fw.n_events
    finally:
        fw.close()
