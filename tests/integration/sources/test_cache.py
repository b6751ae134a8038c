"""The download cache: reuse (ETag+size), change detection, pruning, interrupts, resume, path safety."""

from __future__ import annotations

import os
import uuid

import pytest

from reportgen.sources import resolve_source
from reportgen.sources.s3 import S3Cache, S3Object, UnsafeKey, key_segments
from tests.support.sources_testlib import client, tree


@pytest.fixture
def bucket(moto_endpoint):
    """A fresh bucket per test, with a job's raw profiler data; returns (name, {rel: bytes})."""
    name = f"cache-test-{uuid.uuid4().hex[:12]}"
    s3 = client("s3")
    s3.create_bucket(Bucket=name)
    files = {f"system/incremental/2021122220/{1640205540 + 60 * i}.algo-1.json": (f'{{"i": {i}}}\n' * (50 + i)).encode()
             for i in range(6)}
    files["system/training_job_end.ts"] = b""
    for rel, data in files.items():
        s3.put_object(Bucket=name, Key=f"job/profiler-output/{rel}", Body=data)
    return name, files


def snapshot(root):
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@pytest.mark.fixtures
def test_second_run_downloads_nothing(world, tmp_path):
    first = resolve_source(f"job:{world.training_job}", cache_dir=tmp_path, recompute=True)
    assert first.downloads == 16
    calls = []
    second = resolve_source(f"job:{world.training_job}", cache_dir=tmp_path, recompute=True, progress=calls.append)
    assert second.downloads == 0
    assert second.bytes_downloaded == 0
    assert calls == []
    assert (second.rule_output_dir, second.raw_dir) == (first.rule_output_dir, first.raw_dir)
    assert tree(second.rule_output_dir) == world.rule_files
    assert tree(second.raw_dir) == world.raw_files
    # the processing-job form of the same job reuses the same files
    assert resolve_source(world.processing_by_uris, cache_dir=tmp_path).downloads == 0


def test_changed_and_deleted_objects(bucket, tmp_path):
    name, files = bucket
    uri = f"s3://{name}/job/profiler-output/"
    first = resolve_source(uri, cache_dir=tmp_path)
    assert first.downloads == 7
    s3 = client("s3")
    changed = "system/incremental/2021122220/1640205540.algo-1.json"
    new_bytes = files[changed].replace(b'"i"', b'"j"')  # same size, different ETag
    s3.put_object(Bucket=name, Key=f"job/profiler-output/{changed}", Body=new_bytes)
    deleted = "system/incremental/2021122220/1640205600.algo-1.json"
    s3.delete_object(Bucket=name, Key=f"job/profiler-output/{deleted}")
    second = resolve_source(uri, cache_dir=tmp_path)
    assert second.downloads == 1
    expected = dict(files, **{changed: new_bytes})
    del expected[deleted]
    assert tree(second.raw_dir) == expected  # the deleted object is gone from the cache too


def test_interrupted_run_resumes_with_completed_files_kept(bucket, tmp_path):
    name, files = bucket
    uri = f"s3://{name}/job/profiler-output/"

    class Interrupt(Exception):
        pass

    def stop_after_two(progress):
        if progress.files_done == 2:
            raise Interrupt()

    with pytest.raises(Interrupt):
        resolve_source(uri, cache_dir=tmp_path, progress=stop_after_two, max_workers=1)
    resumed = resolve_source(uri, cache_dir=tmp_path)
    # the first file was recorded in the manifest; the second finished its rename when the callback
    # raised and is adopted because its MD5 equals its ETag; the other five are downloaded now
    assert resumed.downloads == len(files) - 2
    assert tree(resumed.raw_dir) == files
    assert resolve_source(uri, cache_dir=tmp_path).downloads == 0


def test_partial_file_resumes_with_range_request(moto_endpoint, tmp_path):
    name = f"cache-test-{uuid.uuid4().hex[:12]}"
    s3 = client("s3")
    s3.create_bucket(Bucket=name)
    big = os.urandom(3 * 1024 * 1024 + 123)
    key = "job/profiler-output/framework/pevents/2021122220/1640205600250000_27-algo-1_pythontimeline.json"
    s3.put_object(Bucket=name, Key=key, Body=big)
    uri = f"s3://{name}/job/profiler-output/"

    class Interrupt(Exception):
        pass

    def stop_mid_file(progress):
        if progress.bytes_done >= 1024 * 1024 and progress.files_done == 0:
            raise Interrupt()

    with pytest.raises(Interrupt):
        resolve_source(uri, cache_dir=tmp_path, progress=stop_mid_file)
    parts = list(tmp_path.rglob("*.part"))
    assert len(parts) == 1 and parts[0].name.startswith("1640205600250000_27-algo-1_pythontimeline.json.")
    kept = parts[0].stat().st_size
    assert 0 < kept < len(big)
    assert not parts[0].with_name("1640205600250000_27-algo-1_pythontimeline.json").exists()

    resumed = resolve_source(uri, cache_dir=tmp_path)
    assert resumed.downloads == 1
    assert resumed.bytes_downloaded == len(big) - kept  # only the missing tail was fetched
    assert tree(resumed.raw_dir) == {"framework/pevents/2021122220/1640205600250000_27-algo-1_pythontimeline.json": big}
    assert not list(tmp_path.rglob("*.part"))


# ------------------------------------------------------------------------------------- path safety


@pytest.mark.parametrize(
    "key, reason",
    [
        ("../escape.json", "'..' path segment"),
        ("a/../../escape.json", "'..' path segment"),
        ("a/./b.json", "'.' path segment"),
        ("/etc/passwd", "absolute path"),
        ("a//b.json", "empty path segment"),
        ("a\\..\\..\\b.json", "backslash in key"),
        ("a/b\x00.json", "control or non-printable character in key"),
        ("a/b\n.json", "control or non-printable character in key"),
        ("a/b\u2028.json", "control or non-printable character in key"),
        ("a/" + "x" * 256, "path segment longer than 255 bytes"),
        ("a/b.json.12345678.part", "name ends with .part (reserved for partial downloads)"),
    ],
)
def test_unsafe_keys_refused(key, reason):
    with pytest.raises(UnsafeKey) as info:
        key_segments(key)
    assert str(info.value) == reason


def test_safe_key_segments():
    assert key_segments("models/job/profiler-output/system/incremental/2021122220/1640205540.algo-1.json") == [
        "models", "job", "profiler-output", "system", "incremental", "2021122220", "1640205540.algo-1.json"]
    assert key_segments("a/ünïcode file (1).json") == ["a", "ünïcode file (1).json"]


EVIL_KEYS = (
    "job/profiler-output/system/../../../../../../escape-dotdot.json",
    "job/profiler-output/system/incremental/..\\..\\..\\escape-backslash.json",
    "job/profiler-output/system/incremental/escape\x01ctrl.json",
    "job/profiler-output/system/incremental/escape\u2028sep.json",
    "job/profiler-output/system//escape-empty.json",
    "job/rule-output/R/profiler-output/profiler-reports/../../../../../../../CPUBottleneck.json",
)


def test_s3_keys_cannot_escape_the_cache(bucket, tmp_path):
    name, files = bucket
    s3 = client("s3")
    for key in EVIL_KEYS:
        s3.put_object(Bucket=name, Key=key, Body=b"evil")
    outside = tmp_path / "outside"
    cache = outside / "cache"
    outside.mkdir()
    before = snapshot(tmp_path)
    resolved = resolve_source(f"s3://{name}/job/", cache_dir=cache)
    new = snapshot(tmp_path) - before
    assert all(p == "outside/cache" or p.startswith("outside/cache/") for p in new), new
    assert not [p for p in new if "escape" in p or "evil" in p]
    assert b"evil" not in b"".join(p.read_bytes() for p in cache.rglob("*") if p.is_file())
    assert tree(resolved.raw_dir) == files
    assert sorted(resolved.refused_keys) == sorted(
        f"{k!r} ({r})" for k, r in [
            (EVIL_KEYS[0], "'..' path segment"),
            (EVIL_KEYS[1], "backslash in key"),
            (EVIL_KEYS[2], "control or non-printable character in key"),
            (EVIL_KEYS[3], "control or non-printable character in key"),
            (EVIL_KEYS[4], "empty path segment"),
            (EVIL_KEYS[5], "'..' path segment"),
        ])
    assert "6 S3 keys skipped: unsafe or conflicting names" in resolved.notes


def test_cache_layer_refuses_even_without_selection(moto_endpoint, tmp_path):
    """S3Cache.sync itself refuses unsafe keys, absolute keys and file/folder conflicts (defence in depth)."""
    name = f"cache-test-{uuid.uuid4().hex[:12]}"
    s3 = client("s3")
    s3.create_bucket(Bucket=name)
    keys = ["/abs/escape.json", "../escape.json", "ok/a", "ok/a/b.json", "ok/c.json"]
    for key in keys:
        s3.put_object(Bucket=name, Key=key, Body=key.encode())
    objects = [S3Object(o["Key"], o["Size"], o["ETag"].strip('"')) for o in s3.list_objects_v2(Bucket=name)["Contents"]]
    root = tmp_path / "cache"
    cache = S3Cache(root, s3, max_workers=1)
    result = cache.sync(name, objects)
    refused = dict(result.refused)
    assert refused["/abs/escape.json"] == "absolute path"
    assert refused["../escape.json"] == "'..' path segment"
    # "ok/a" and "ok/a/b.json" cannot both exist on disk: whichever comes second is refused
    assert len(refused) == 3 and ("ok/a" in refused) != ("ok/a/b.json" in refused)
    assert result.downloaded == 2
    assert {p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*")} == {"cache"}
    assert (cache.bucket_dir(name) / "ok" / "c.json").read_bytes() == b"ok/c.json"
    with pytest.raises(UnsafeKey):
        cache.local_path(name, "../../escape")
