"""``--scheduler`` with an s3:// source: the Dask workers fetch the system metrics themselves.

The profile is a small synthetic one (2 nodes, 4 cores, 1 GPU, 5 minutes: 10 system files and their
framework traces) uploaded to a moto server; the local Dask cluster (2 worker processes) is started
once for the module, after the fake AWS environment is set, so its workers see the same endpoint.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from reportgen.engine import analyze  # noqa: E402
from reportgen.cluster.s3_objects import S3System  # noqa: E402
from reportgen.readers.distributed import read_pieces  # noqa: E402
from reportgen.problems import ProblemLog  # noqa: E402
from reportgen.readers.system import read_system  # noqa: E402
from reportgen.rulebook import RULE_ORDER  # noqa: E402

from tests.support.sources_testlib import REGION, client  # noqa: E402

DASK_BUCKET = "reportgen-dask-bucket"
PREFIX = "jobs/dask-job-2026/profiler-output"


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    from testdata.synthetic import generate

    folder = tmp_path_factory.mktemp("s3dask") / "profile"
    generate(folder, nodes=2, cores=4, gpus=1, duration_s=300, interval_ms=500, seed=5)
    return folder


@pytest.fixture(scope="module")
def uploaded(moto_endpoint, profile) -> str:
    s3 = client("s3")
    if DASK_BUCKET not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket=DASK_BUCKET)
        for path in sorted(profile.rglob("*")):
            if path.is_file():
                s3.put_object(Bucket=DASK_BUCKET, Key=f"{PREFIX}/{path.relative_to(profile).as_posix()}",
                              Body=path.read_bytes())
    return f"s3://{DASK_BUCKET}/{PREFIX}/"


@pytest.fixture(scope="module")
def cluster(moto_endpoint):
    """Started after the session's moto fixture put the fake credentials and AWS_ENDPOINT_URL in
    os.environ, so the worker processes inherit them."""
    from dask.distributed import Client, LocalCluster

    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                     silence_logs=logging.ERROR)
    cl = Client(c)
    try:
        yield cl
    finally:
        cl.close()
        c.close()


def test_workers_read_s3_objects_and_match_the_local_read(uploaded, profile, cluster, tmp_path):
    s3 = client("s3")
    listed = s3.list_objects_v2(Bucket=DASK_BUCKET, Prefix=f"{PREFIX}/system/")["Contents"]
    objects = tuple((o["Key"], o["Size"], o["ETag"].strip('"')) for o in listed if o["Key"].endswith(".json"))
    assert len(objects) == 10
    spec = S3System(DASK_BUCKET, PREFIX, objects, region=REGION)
    empty_root = tmp_path / "nothing-local"
    empty_root.mkdir()
    problems = ProblemLog()
    data, info = read_pieces(empty_root, problems, client=cluster, s3=spec)
    worker_pids = set(cluster.run(os.getpid).values())
    assert {s.worker_pid for s in info.stats} <= worker_pids and os.getpid() not in worker_pids
    assert sum(s.files for s in info.stats) == 10
    assert sum(s.bytes for s in info.stats) == sum(size for _, size, _ in objects)
    local = read_system(profile, ProblemLog())
    assert list(data.nodes) == list(local.nodes) == ["algo-1", "algo-2"]
    for node in local.nodes:
        a, b = data.nodes[node], local.nodes[node]
        assert a.columns == b.columns and a.shape == b.shape and a.shape[0] > 500
        assert (a.tick_ts == b.tick_ts).all()
        assert a.values.tobytes() == b.values.tobytes()
    assert (data.first_file_key_us, data.last_file_key_us, data.files) == \
           (local.first_file_key_us, local.last_file_key_us, local.files)
    assert not list(empty_root.rglob("*"))  # nothing was written on the client's side


def test_workers_read_framework_traces_from_s3_and_match_the_local_read(uploaded, profile, cluster, tmp_path,
                                                                        monkeypatch):
    """One task per trace file, each on a worker that downloads its own object: the merged event
    table and the problems equal the single-machine read of the same files."""
    from reportgen.readers.distributed import framework_listing, read_traces
    from reportgen.readers.framework import list_framework_files, read_framework

    s3 = client("s3")
    listed = s3.list_objects_v2(Bucket=DASK_BUCKET, Prefix=f"{PREFIX}/framework/")["Contents"]
    objects = tuple((o["Key"], o["Size"], o["ETag"].strip('"')) for o in listed)
    spec = S3System(DASK_BUCKET, PREFIX, objects, region=REGION)
    local_files = list_framework_files(profile)
    assert len(local_files) >= 2
    empty_root = tmp_path / "nothing-local"
    empty_root.mkdir()
    listing = framework_listing(empty_root, None, spec)
    assert [rel for _, rel in listing] == [p.relative_to(profile).as_posix() for p in local_files]
    seen_pids = []
    from reportgen.readers import framework as fw_mod

    real = fw_mod.table_of_files

    def spy(files, problems):
        def each():
            for fe in files:
                seen_pids.append(fe.stats.worker_pid)
                yield fe
        return real(each(), problems)

    monkeypatch.setattr(fw_mod, "table_of_files", spy)
    problems = ProblemLog()
    events = read_traces(empty_root, problems, [rel for _, rel in listing], client=cluster, s3=spec)
    worker_pids = set(cluster.run(os.getpid).values())
    assert len(seen_pids) == len(local_files) and set(seen_pids) <= worker_pids and os.getpid() not in worker_pids
    ref_problems = ProblemLog()
    ref = read_framework(profile, ref_problems)
    assert len(events) == len(ref) > 1000
    assert events.equals(ref)
    assert problems.to_json() == ref_problems.to_json()
    assert not list(empty_root.rglob("*"))  # nothing was written on the client's side


@pytest.mark.slow
def test_generate_pipeline_leaves_system_metrics_and_traces_in_s3(uploaded, profile, tmp_path, monkeypatch):
    """The pipeline path (as `generate s3://... --scheduler local:2`): the sources cache gets the end
    marker but no system-metrics file and no framework trace, and the rule outputs equal the local ones."""
    from reportgen.pipeline import EngineOptions, SourceOptions, prepare_rule_outputs

    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    messages: list[str] = []
    cache = tmp_path / "cache"
    prepared = prepare_rule_outputs(uploaded, tmp_path / "work",
                                    SourceOptions(cache_dir=cache, engine=EngineOptions(scheduler="local:2")),
                                    progress=messages.append)
    assert prepared.used == "raw data"
    cached = [p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file()]
    assert not [p for p in cached if "/framework/" in p]
    n_traces = len(list((profile / "framework").rglob("*.json")))
    assert n_traces >= 2 and any(f"{n_traces} framework traces stay in s3://" in m for m in messages)
    assert any(p.endswith("system/training_job_end.ts") for p in cached) or \
        not (profile / "system" / "training_job_end.ts").exists()
    assert not [p for p in cached if "/system/" in p and p.endswith(".json")]
    assert any("10 system-metrics objects stay in s3://" in m for m in messages)
    ref = tmp_path / "ref"
    analyze(profile, ref)
    rule_files = sorted(p.name for p in (ref / "profiler-reports").glob("*.json"))
    assert rule_files == sorted(f"{name}.json" for name in RULE_ORDER)
    for name in rule_files:
        assert (prepared.rule_dir / name).read_bytes() == (ref / "profiler-reports" / name).read_bytes(), name


def test_incremental_with_s3_workers_fingerprints_by_etag(uploaded, profile, cluster, tmp_path):
    """--incremental with S3 on the workers: pieces keyed by key + size + ETag; a second run fetches nothing."""
    s3 = client("s3")
    listed = s3.list_objects_v2(Bucket=DASK_BUCKET, Prefix=f"{PREFIX}/system/")["Contents"]
    objects = tuple((o["Key"], o["Size"], o["ETag"].strip('"')) for o in listed if o["Key"].endswith(".json"))
    spec = S3System(DASK_BUCKET, PREFIX, objects, region=REGION)
    root = tmp_path / "local-part"
    root.mkdir()
    first, info1 = read_pieces(root, ProblemLog(), client=cluster, s3=spec, cache_root=tmp_path / "cache")
    second, info2 = read_pieces(root, ProblemLog(), client=cluster, s3=spec, cache_root=tmp_path / "cache")
    assert (first.files_read, second.files_read) == (10, 0)
    assert info2.cached_pieces == info1.pieces == 4  # per node: older files + the newest one
    assert info2.stats == []  # no task ran
    local = read_system(profile, ProblemLog())
    for node in local.nodes:
        assert second.nodes[node].values.tobytes() == local.nodes[node].values.tobytes()
    # objects rewritten in S3 (new ETag): algo-1's newest file (a piece of its own) and algo-2's oldest
    # (in the piece of its 4 older files) -> 1 + 4 files fetched and parsed again, nothing else
    a1 = sorted(k for k, _, _ in objects if k.endswith(".algo-1.json"))
    a2 = sorted(k for k, _, _ in objects if k.endswith(".algo-2.json"))
    assert len(a1) == len(a2) == 5
    rewritten = {a1[-1], a2[0]}
    changed = tuple((k, s, "0" * 32 if k in rewritten else e) for k, s, e in objects)
    third, info3 = read_pieces(root, ProblemLog(), client=cluster, s3=S3System(DASK_BUCKET, PREFIX, changed, region=REGION),
                               cache_root=tmp_path / "cache")
    assert third.files_read == 5 and info3.cached_pieces == 2
