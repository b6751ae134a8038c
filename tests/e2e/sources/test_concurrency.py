"""Two reportgen processes at once, sharing an S3 download cache and an output folder.

Real parallel subprocesses against the local moto S3 endpoint. The cache takes turns per bucket (a
lock on the bucket's folder) and the report pair is written under a lock on the output folder, each
file by an atomic rename: whatever the interleaving, every file is complete and parses, the cached
bytes equal S3's, and report.html and report.json always come from the same run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from html import unescape

import pytest

from tests.support.sources_testlib import client, tree
from tests.support.corpus.make_corpus import FW_DIR, SYS_DIR, T, fw_events, fw_meta, fw_text, instants
from tests.support.paths import ROOT

REPO = ROOT


@pytest.fixture
def big_bucket(moto_endpoint):
    """Raw data of two nodes, 30 minutes each (~2.6 MB per file): downloads that overlap in time."""
    name = f"concurrency-{uuid.uuid4().hex[:12]}"
    s3 = client("s3")
    s3.create_bucket(Bucket=name)
    files = {}
    for node in ("algo-1", "algo-2"):
        for m in range(6):
            minute = T + 60 * m
            lines = instants(120 * 5, start=minute, node=node, step=0.1)
            files[f"{SYS_DIR}/{minute}.{node}.json"] = ("\n".join(lines) + "\n").encode()
    files[f"{FW_DIR}/{T * 1_000_000 + 60_000_000}_27-algo-1_pythontimeline.json"] = \
        fw_text(fw_meta() + fw_events(50)).encode()
    for rel, data in files.items():
        s3.put_object(Bucket=name, Key=f"job/profiler-output/{rel}", Body=data)
    return name, files


def _start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.Popen([sys.executable, *args], env=env, cwd=str(REPO), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(procs) -> list[tuple[int, str]]:
    out = []
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        out.append((proc.returncode, err))
    return out


RESOLVE = ("import sys; from reportgen.sources import resolve_source; "
           "r = resolve_source(sys.argv[1], cache_dir=sys.argv[2]); print(r.raw_dir)")


def test_two_processes_filling_one_cache_at_once(big_bucket, tmp_path):
    name, files = big_bucket
    uri = f"s3://{name}/job/profiler-output/"
    cache = tmp_path / "cache"
    procs = [_start(["-c", RESOLVE, uri, str(cache)]) for _ in range(3)]
    results = _finish(procs)
    assert [rc for rc, _ in results] == [0, 0, 0], results
    raw = next(cache.rglob("profiler-output"))
    assert tree(raw) == files  # every byte as in S3: no interleaved or doubled .part writes
    assert not list(cache.rglob("*.part"))
    manifest = json.loads(next((cache / "manifests").rglob(f"{name}.json")).read_text())
    assert set(manifest) == {f"job/profiler-output/{rel}" for rel in files}


def _shown_name(html: str) -> str:
    return unescape(html.split("<h1>", 1)[1].split("</h1>", 1)[0])


@pytest.mark.slow
def test_two_generate_runs_into_one_output_folder_with_one_cache(big_bucket, tmp_path):
    name, files = big_bucket
    uri = f"s3://{name}/job/profiler-output/"
    cache, out = tmp_path / "cache", tmp_path / "out"
    gen = ["-m", "reportgen", "generate", uri, "--cache-dir", str(cache), "-q"]
    procs = [_start(gen + ["-o", str(out / "report.html"), "--job-name", "run-A"]),
             _start(gen + ["-o", str(out / "report.html"), "--job-name", "run-B"]),
             _start(gen + ["-o", str(out / "other.html"), "--job-name", "run-C"])]
    results = _finish(procs)
    assert results == [(0, ""), (0, ""), (0, "")]
    assert sorted(p.name for p in out.iterdir()) == ["other.html", "other.json", "report.html", "report.json"]
    html = (out / "report.html").read_text(encoding="utf-8")
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert html.rstrip().endswith("</html>")
    assert _shown_name(html) in ("run-A", "run-B")
    assert data["job"]["name"] == _shown_name(html)  # the pair comes from one run
    assert json.loads((out / "other.json").read_text(encoding="utf-8"))["job"]["name"] == "run-C"
    assert _shown_name((out / "other.html").read_text(encoding="utf-8")) == "run-C"
    summary = data["sections"]["training-job-summary"]
    assert summary["job_duration_s"] > 0
    assert tree(next(cache.rglob("profiler-output"))) == files
