"""One trace object as a Dask worker reads it (``trace_analysis/s3_traces.read_object``), against a moto server:
kept by its listed identity only when the bytes downloaded are that write, served again with no GET."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from reportgen.cluster.s3_objects import S3System, download_listed
from reportgen.problems import ProblemLog
from reportgen.readers.trace_cache import TraceCache
from reportgen.trace_analysis.s3_traces import object_entry, read_object
from tests.support.aws import count_gets
from tests.support.sources_testlib import REGION, client
from tests.support.trace_sets import rank_events, write_trace

BUCKET = "reportgen-trace-objects"
KEY = "runs/one/node0_7.1700000000000000000.pt.trace.json"


@pytest.fixture
def listed(moto_endpoint, tmp_path) -> tuple[S3System, bytes]:
    """One rank's trace, cut short (a Data quality note), in the bucket; the listing as the client makes it."""
    write_trace(tmp_path / "t.json", rank_events(1.7e15, 3, 1.0), cut=True)
    body = (tmp_path / "t.json").read_bytes()
    s3 = client("s3")
    if BUCKET not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=body)
    head = s3.head_object(Bucket=BUCKET, Key=KEY)
    return S3System(BUCKET, "", ((KEY, head["ContentLength"], head["ETag"].strip('"')),), region=REGION), body


def _cache(tmp_path: Path) -> TraceCache:
    folder = tmp_path / "traces"
    folder.mkdir()
    return TraceCache(folder, 1 << 30)


def test_a_listed_object_is_kept_by_its_identity_and_served_without_a_get(listed, tmp_path, monkeypatch):
    spec, body = listed
    cache = _cache(tmp_path)
    gets = count_gets(monkeypatch)
    cold = read_object(spec, KEY, 200, cache)
    assert gets == [KEY] and cold.key is not None and cold.nbytes == len(body)
    assert cold.key == object_entry(spec, KEY, 200)[0]
    assert {p.file for p in cold.problems.items} == {f"s3://{BUCKET}/{KEY}"} and cold.problems.total >= 1
    header = json.loads((cache.folder / f"{cold.key}.head.json").read_bytes().split(b"\n", 1)[0])
    assert header["content_sha256"] == hashlib.sha256(body).hexdigest()
    warm = read_object(spec, KEY, 200, cache)
    assert gets == [KEY]  # no second GET
    assert warm.key == cold.key and warm.nbytes == cold.nbytes
    assert warm.problems.to_json() == cold.problems.to_json()
    assert warm.trace.path.name == cold.trace.path.name == Path(KEY).name
    for column in ("start_us", "dur_us", "name", "cat", "device"):
        assert np.array_equal(getattr(warm.trace, column), getattr(cold.trace, column)), column
    assert warm.trace.names == cold.trace.names and warm.trace.start_us.size > 10


@pytest.mark.parametrize("stale", ["etag", "size"])
def test_an_object_not_as_listed_is_read_but_not_kept(listed, tmp_path, monkeypatch, stale):
    """The listing says another write (rewritten since: another ETag, or size): the bytes downloaded are read and
    reported as always, and nothing is kept under the listed identity."""
    spec, body = listed
    (key, size, etag), = spec.objects
    other = ((key, size, "0" * 32),) if stale == "etag" else ((key, size + 1, etag),)
    spec = S3System(BUCKET, "", other, region=REGION)
    cache = _cache(tmp_path)
    gets = count_gets(monkeypatch)
    got = read_object(spec, KEY, 200, cache)
    assert got.key is None and got.trace is not None and got.trace.start_us.size > 10 and got.nbytes == len(body)
    assert list(cache.folder.iterdir()) == []
    read_object(spec, KEY, 200, cache)
    assert gets == [KEY, KEY]
    path, exact = download_listed(spec, KEY, tmp_path / "dl")
    assert path is not None and path.read_bytes() == body and exact is False


def test_without_a_cache_every_read_downloads(listed, tmp_path, monkeypatch):
    spec, _ = listed
    gets = count_gets(monkeypatch)
    first, second = read_object(spec, KEY, 200, None), read_object(spec, KEY, 200, None)
    assert gets == [KEY, KEY] and first.key is None and second.key is None
    assert first.problems.to_json() == second.problems.to_json()


def test_a_read_only_cache_is_read_and_not_written(listed, tmp_path, monkeypatch):
    spec, _ = listed
    folder = tmp_path / "traces"
    folder.mkdir()
    cache = TraceCache(folder, 1 << 30, writable=False)
    got = read_object(spec, KEY, 200, cache)
    assert got.key is not None and list(folder.iterdir()) == []


def test_the_key_follows_the_objects_identity_and_the_reads_settings(listed, monkeypatch):
    spec, _ = listed
    (key, size, etag), = spec.objects
    base = object_entry(spec, KEY, 200)[0]

    def key_of(objects, bucket=BUCKET, cap=200):
        return object_entry(S3System(bucket, "", objects, region=REGION), KEY, cap)[0]

    assert key_of(((key, size, etag),)) == base
    variants = {key_of(((key, size, etag + "-2"),)), key_of(((key, size + 1, etag),)),
                key_of(((key, size, etag),), bucket="another-bucket"), key_of(((key, size, etag),), cap=5)}
    monkeypatch.setenv("REPORTGEN_STREAM_TRACE_MB", "1")
    variants.add(key_of(((key, size, etag),)))
    assert len(variants) == 5 and base not in variants
    assert object_entry(S3System(BUCKET, "", (), region=REGION), KEY, 200) is None  # not listed
    assert ProblemLog().cap == 200
