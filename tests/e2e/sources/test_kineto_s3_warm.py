"""Warm re-runs over PyTorch profiler traces left in S3 for the Dask workers download nothing (issue 51).

``generate``'s path (``prepare_rule_outputs``) on an ``s3://`` prefix of traces with ``--scheduler local:1``: the
workers fetch the objects and keep what they read in the trace cache by (bucket, key, size, ETag)
(``trace_analysis/s3_traces.py``). Every GET the fake S3 (a moto server in this process) answers for an object is
counted: the second run makes none, starts no Dask cluster (every rank is kept) and writes the same analysis, byte
for byte; an object written again (a new
ETag) is the only one fetched again; a damaged entry is made again, with the same outputs; ``--no-cache`` and
``REPORTGEN_NO_CACHE`` fetch every object as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from reportgen.cluster.s3_objects import S3System  # noqa: E402
from reportgen.problems import ProblemLog  # noqa: E402
from reportgen.trace_analysis.s3_traces import object_entry  # noqa: E402
from tests.support.aws import count_gets  # noqa: E402
from tests.support.sources_testlib import REGION, client  # noqa: E402
from tests.support.trace_sets import rank_events, write_trace  # noqa: E402

BUCKET = "reportgen-kineto-warm"


def _trace_set(folder: Path) -> list[Path]:
    """Rank 0 in two profiling cycles (one worker, two files), ranks 1 and 2 in one file each, and a cut file of
    rank 0's worker (no distributedInfo: a Data quality note naming the object)."""
    for c in range(2):
        write_trace(folder / f"node0_100.{1700000000000000000 + 10**12 * c}.pt.trace.json.gz",
                    rank_events(1.7e15 + 2e6 * c, 3, 1.0), rank=0)
    write_trace(folder / "node0_101.1700000000000000001.pt.trace.json", rank_events(1.7e15 + 10, 3, 1.4, "a"), rank=1)
    write_trace(folder / "node1_102.1700000000000000002.pt.trace.json.gz", rank_events(1.7e15 + 20, 3, 0.9, "b"),
                rank=2)
    write_trace(folder / "node0_100.1700003000000000000.pt.trace.json", rank_events(1.7e15 + 6e6, 2, 1.0), cut=True)
    return sorted(folder.iterdir())


@pytest.fixture
def gets(moto_endpoint, monkeypatch) -> list[str]:
    return count_gets(monkeypatch)


@pytest.fixture
def uploaded(moto_endpoint, tmp_path, request) -> tuple[str, list[str]]:
    """The trace set under a prefix of this test's own: its URI and keys."""
    s3 = client("s3")
    if BUCKET not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket=BUCKET)
    prefix = f"runs/{request.node.name}/traces"
    keys = []
    for path in _trace_set(tmp_path / "traces"):
        keys.append(f"{prefix}/{path.name}")
        s3.put_object(Bucket=BUCKET, Key=keys[-1], Body=path.read_bytes())
    return f"s3://{BUCKET}/{prefix}/", keys


NO_CLUSTER = "PyTorch profiler traces: every rank served from the trace cache, no Dask cluster started"


def _run(source: str, work: Path, cache: Path, gets: list[str], monkeypatch, *, cluster: bool = True,
         **options) -> tuple[dict, list[str]]:
    """One ``generate``-path run: every file of its analysis folder (name -> bytes) and the keys it GOT.
    ``cluster``: whether the run must start its Dask cluster (False: every rank served from the cache)."""
    from reportgen.pipeline import EngineOptions, SourceOptions, prepare_rule_outputs

    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    before = len(gets)
    messages: list[str] = []
    prepared = prepare_rule_outputs(source, work, SourceOptions(cache_dir=cache, engine=EngineOptions(scheduler="local:1"),
                                                                **options), progress=messages.append)
    assert prepared.used == "PyTorch profiler traces"
    ran = [m for m in messages if m.startswith("PyTorch profiler traces: ")]
    if cluster:
        assert len(ran) == 1 and " task(s) on 1 worker process(es)" in ran[0], ran
    else:
        assert ran == [NO_CLUSTER]
    analysis = prepared.rule_dir.parent
    outputs = {p.relative_to(analysis).as_posix(): p.read_bytes() for p in sorted(analysis.rglob("*")) if p.is_file()}
    assert "kineto.json" in outputs and "data-quality.json" in outputs
    return outputs, sorted(gets[before:])


def _entries(cache: Path, key: str) -> tuple[Path, Path]:
    """The file entry and the head the trace cache keeps for the object ``key`` as it is listed now."""
    listed = {o["Key"]: (o["Size"], o["ETag"].strip('"'))
              for o in client("s3").list_objects_v2(Bucket=BUCKET, Prefix=key)["Contents"]}
    s3 = S3System(BUCKET, "", ((key, *listed[key]),), region=REGION)
    entry = object_entry(s3, key, ProblemLog().cap)
    assert entry is not None
    return cache / "traces" / f"{entry[0]}.npz", cache / "traces" / f"{entry[0]}.head.json"


def test_a_warm_run_downloads_no_object_and_writes_the_same_analysis(uploaded, gets, tmp_path, monkeypatch):
    source, keys = uploaded
    cache = tmp_path / "cache"
    first, got = _run(source, tmp_path / "w1", cache, gets, monkeypatch)
    assert got == sorted(keys)  # each object once: the rank of two tasks is merged again from the kept reads
    doc = json.loads(first["kineto.json"])
    assert list(doc["ranks"]) == ["0", "1", "2"] and doc["ranks"]["0"]["cycles"] == 3
    quality = json.loads(first["data-quality.json"])
    assert quality["total"] >= 1
    assert {p["file"] for p in quality["problems"]} == {f"s3://{BUCKET}/{keys[2]}"}  # the cut file, by its URI
    heads = sorted((cache / "traces").glob("*.head.json"))
    assert len(heads) == len(keys)
    # the head of each object records the SHA-256 of the bytes downloaded
    npz, head = _entries(cache, keys[0])
    import hashlib

    body = client("s3").get_object(Bucket=BUCKET, Key=keys[0])["Body"].read()
    assert npz.is_file() and json.loads(head.read_bytes().split(b"\n", 1)[0])["content_sha256"] == \
        hashlib.sha256(body).hexdigest()
    del gets[:]

    second, got = _run(source, tmp_path / "w2", cache, gets, monkeypatch, cluster=False)
    assert got == []
    assert second == first

    off, got = _run(source, tmp_path / "w3", cache, gets, monkeypatch, trace_cache=False)  # --no-cache
    assert got == sorted(keys) and off == first
    monkeypatch.setenv("REPORTGEN_NO_CACHE", "1")
    off, got = _run(source, tmp_path / "w4", cache, gets, monkeypatch)
    assert got == sorted(keys) and off == first


def test_an_object_written_again_is_the_only_one_downloaded_again(uploaded, gets, tmp_path, monkeypatch):
    """Rank 0's first cycle uploaded again, same bytes, as a multipart upload: a new ETag (``<md5>-1``), so that
    object is fetched again and nothing else; the analysis is the same, and the next run fetches nothing."""
    source, keys = uploaded
    cache = tmp_path / "cache"
    first, _ = _run(source, tmp_path / "w1", cache, gets, monkeypatch)
    s3 = client("s3")
    target = keys[0]
    old_etag = s3.head_object(Bucket=BUCKET, Key=target)["ETag"]
    body = s3.get_object(Bucket=BUCKET, Key=target)["Body"].read()
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=target)
    part = s3.upload_part(Bucket=BUCKET, Key=target, PartNumber=1, UploadId=upload["UploadId"], Body=body)
    s3.complete_multipart_upload(Bucket=BUCKET, Key=target, UploadId=upload["UploadId"],
                                 MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]})
    new_etag = s3.head_object(Bucket=BUCKET, Key=target)["ETag"]
    assert new_etag != old_etag and new_etag.strip('"').endswith("-1")
    del gets[:]
    again, got = _run(source, tmp_path / "w2", cache, gets, monkeypatch)
    assert got == [target]
    assert again == first
    warm, got = _run(source, tmp_path / "w3", cache, gets, monkeypatch, cluster=False)
    assert got == [] and warm == first


def test_a_damaged_entry_is_made_again_with_the_same_outputs(uploaded, gets, tmp_path, monkeypatch):
    """An object's entry and head damaged: that object is fetched again (alone); the ranks' entries damaged: the
    ranks are analysed again from the kept reads (no fetch). Same analysis each time; whole entries after."""
    source, keys = uploaded
    cache = tmp_path / "cache"
    first, _ = _run(source, tmp_path / "w1", cache, gets, monkeypatch)
    npz, head = _entries(cache, keys[3])
    npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])  # cut
    head.write_bytes(b'{"format": 1}\n{}')  # foreign
    del gets[:]
    again, got = _run(source, tmp_path / "w2", cache, gets, monkeypatch)
    assert got == [keys[3]] and again == first
    assert npz.stat().st_size > 0 and json.loads(head.read_bytes().split(b"\n", 1)[0])["content_sha256"]
    ranks = sorted((cache / "traces").glob("*.rank.json"))
    assert ranks
    for entry in ranks:
        entry.write_bytes(entry.read_bytes().replace(b'"', b"'", 3))
    third, got = _run(source, tmp_path / "w3", cache, gets, monkeypatch)
    assert got == [] and third == first
    assert all(json.loads(entry.read_bytes().split(b"\n", 1)[0])["format"] == 1
               for entry in (cache / "traces").glob("*.rank.json"))
    warm, got = _run(source, tmp_path / "w4", cache, gets, monkeypatch, cluster=False)
    assert got == [] and warm == first
