"""The ranks' analyses kept in the trace cache (trace_analysis/rank_cache.py): a warm run analyses no rank and
gives the cold run's document; a damaged, foreign or stale entry is removed and the rank analysed again; what
JSON would not give back exactly is not kept; the entries share the files' bound."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from reportgen.problems import ProblemLog
from reportgen.readers.trace_cache import ENTRY_SUFFIXES, TraceCache, evict
from reportgen.trace_analysis import job, rank_cache
from reportgen.trace_analysis.analysis import analyze_trace, totals_by_name
from reportgen.trace_analysis.job import analyze_traces
from reportgen.trace_analysis.rank_cache import (ANALYSIS_VERSION, RANK_SUFFIX, load_rank, rank_entry_key,
                                                 rank_entry_path, same_values, store_rank)
from reportgen.trace_analysis.ranks import merge_cycles
from reportgen.readers.trace_files import read_trace_file
from tests.support.paths import ROOT

RECORDINGS = ROOT / "tests" / "recordings"
WORKERS = sorted((RECORDINGS / "gpu-input").glob("w*/*.pt.trace.json.gz"))  # one GPU rank in two cycles
MEMORY = RECORDINGS / "cpu-memory" / "leak" / "worker0.1.pt.trace.json.gz"  # allocator events
SHORT = RECORDINGS / "cpu-torch" / "short" / "pytorch-traces" / "vm_25557.1795718343710566171.pt.trace.json.gz"


@pytest.fixture
def job_files(tmp_path) -> list[Path]:
    folder = tmp_path / "job"
    folder.mkdir()
    return [Path(shutil.copyfile(w, folder / w.name)) for w in (*WORKERS, SHORT)]  # two ranks


def _refuse_analysing(monkeypatch) -> None:
    def refuse(trace):
        raise AssertionError(f"a warm run analysed {trace.path}")
    monkeypatch.setattr(job, "analyze_trace", refuse)


def _ranks(cache: TraceCache) -> list[Path]:
    return sorted(cache.folder.glob(f"*{RANK_SUFFIX}"))


def test_a_warm_run_analyses_no_rank_and_gives_the_cold_document(cache, job_files, monkeypatch):
    off, off_problems = analyze_traces(job_files)
    cold, cold_problems = analyze_traces(job_files, cache=cache)
    assert len(_ranks(cache)) == 2 == len(cold["ranks"])
    with monkeypatch.context() as patched:
        _refuse_analysing(patched)
        warm, warm_problems = analyze_traces(job_files, cache=cache)
    for doc, problems in ((cold, cold_problems), (warm, warm_problems)):
        assert json.dumps(doc) == json.dumps(off)
        assert problems.to_json() == off_problems.to_json()
    gpu_rank = warm["ranks"]["vm_442"]
    assert gpu_rank["cycles"] == 2 and gpu_rank["kernels"]["count"] > 0 and warm["job"]["kernels"]["top"]


def test_a_changed_file_is_another_rank_entry(cache, job_files):
    analyze_traces(job_files, cache=cache)
    before = _ranks(cache)
    os.truncate(job_files[0], job_files[0].stat().st_size - 1000)  # its gzip stream cut: other columns
    doc, problems = analyze_traces(job_files, cache=cache)
    assert len(_ranks(cache)) == 3 and set(before) < set(_ranks(cache))
    assert problems.total > 0 and json.dumps(doc) == json.dumps(analyze_traces(job_files)[0])


def _rank_of(path: Path):
    return merge_cycles([read_trace_file(path, ProblemLog())])


def _damage(where: Path, how: str) -> None:
    raw = where.read_bytes()
    if how == "cut":
        where.write_bytes(raw[: len(raw) // 2])
    elif how == "empty":
        where.write_bytes(b"")
    elif how == "flip":  # one digit of the body: the header's SHA-256 no longer matches
        at = raw.index(b"1", raw.index(b"\n"))
        where.write_bytes(raw[:at] + b"2" + raw[at + 1:])
    elif how == "header":
        where.write_bytes(b"[1, 2]\n" + raw.partition(b"\n")[2])
    elif how == "shape":  # a whole, checked entry of another shape
        body = json.dumps({"doc": {}}).encode()
        header = {"format": rank_cache.RANK_FORMAT, "key": where.name[: -len(RANK_SUFFIX)],
                  "sha256": hashlib.sha256(body).hexdigest()}
        where.write_bytes(json.dumps(header).encode() + b"\n" + body)


@pytest.mark.parametrize("how", ["cut", "empty", "flip", "header", "shape", "foreign"])
def test_a_damaged_entry_is_removed_and_the_rank_analysed_again(how, cache):
    rank = _rank_of(SHORT)
    doc, totals = analyze_trace(rank), totals_by_name(rank)
    key = rank_entry_key(["a"])
    assert store_rank(cache, key, doc, totals) is not None
    where = rank_entry_path(cache, key)
    if how == "foreign":  # another rank's whole entry renamed over this one
        other = rank_entry_key(["b"])
        store_rank(cache, other, doc, totals)
        os.replace(rank_entry_path(cache, other), where)
    else:
        _damage(where, how)
    assert load_rank(cache, key) is None
    assert not where.exists()


def test_an_entry_gives_back_exactly_what_was_kept(cache):
    rank = _rank_of(MEMORY)
    doc, totals = analyze_trace(rank), totals_by_name(rank)
    assert "memory" in doc
    key = rank_entry_key(["m"])
    kept = store_rank(cache, key, doc, totals)
    loaded = load_rank(cache, key)
    assert same_values([doc, totals], list(kept)) and same_values([doc, totals], list(loaded))
    assert json.dumps(loaded) == json.dumps([doc, totals])
    name, pair = next(iter(loaded[1]["cpu_ops"].items()))
    assert isinstance(pair, tuple) and pair == totals["cpu_ops"][name]


@pytest.mark.parametrize("odd", [np.int64(3), (1, 2), {1: "a"}, float("nan")])
def test_what_json_would_not_give_back_is_not_kept(odd, cache):
    key = rank_entry_key(["odd"])
    kept = store_rank(cache, key, {"value": odd}, {"kernels": {}})
    if isinstance(odd, float):  # NaN comes back as NaN: kept
        assert kept is not None and np.isnan(kept[0]["value"]) and load_rank(cache, key) is not None
        return
    assert kept is None and _ranks(cache) == []


def test_same_values_tells_kinds_apart():
    assert same_values({"a": [1, 2.5, None]}, {"a": [1, 2.5, None]})
    assert same_values(np.float64(0.1), 0.1) and same_values(float("nan"), float("nan"))
    assert not same_values(1, 1.0) and not same_values(True, 1) and not same_values(-0.0, 0.0)
    assert not same_values({"a": 1, "b": 2}, {"b": 2, "a": 1}) and not same_values((1,), [1])


def test_the_key_follows_the_files_their_order_and_the_peak_table(tmp_path, monkeypatch):
    base = rank_entry_key(["a", "b"])
    assert base != rank_entry_key(["b", "a"]) and base != rank_entry_key(["a"])
    table = tmp_path / "peaks.json"
    table.write_text(json.dumps({"dated": "2026", "gpus": [{"match": "X", "tflops": {"fp32": 1}}]}))
    monkeypatch.setenv("REPORTGEN_PEAK_TFLOPS", str(table))
    assert rank_entry_key(["a", "b"]) != base
    monkeypatch.setattr(rank_cache, "ANALYSIS_VERSION", ANALYSIS_VERSION + 1)
    monkeypatch.delenv("REPORTGEN_PEAK_TFLOPS")
    assert rank_entry_key(["a", "b"]) != base


def test_rank_entries_count_in_the_bound_and_go_least_recently_used_first(cache):
    assert RANK_SUFFIX in ENTRY_SUFFIXES
    rank = _rank_of(SHORT)
    doc, totals = analyze_trace(rank), totals_by_name(rank)
    keys = [rank_entry_key([str(i)]) for i in range(3)]
    for i, key in enumerate(keys):
        store_rank(cache, key, doc, totals)
        os.utime(rank_entry_path(cache, key), (1000 + i, 1000 + i))
    size = rank_entry_path(cache, keys[0]).stat().st_size
    load_rank(cache, keys[0])  # used now: kept
    bounded = TraceCache(cache.folder, 2 * size)
    assert evict(bounded) == 1
    assert _ranks(cache) == sorted(rank_entry_path(cache, k) for k in (keys[0], keys[2]))


def test_a_read_only_cache_serves_and_keeps_nothing(cache, job_files):
    cold, _ = analyze_traces(job_files, cache=cache)
    only_read = TraceCache(cache.folder, cache.max_bytes, writable=False)
    for entry in _ranks(cache):
        entry.unlink()
    again, _ = analyze_traces(job_files, cache=only_read)
    assert json.dumps(again) == json.dumps(cold) and _ranks(cache) == []


def _analysis_digest() -> str:
    digest = hashlib.sha256()
    for path in (MEMORY, SHORT, *WORKERS):
        rank = _rank_of(path)
        digest.update(json.dumps([analyze_trace(rank), totals_by_name(rank)], sort_keys=True).encode())
    return digest.hexdigest()


def test_analysis_version_is_bumped_with_the_output():
    """The analyses of the recordings, as one digest. When a change to the analysis fails this test, the cache
    would serve the old analysis for the same files: bump ``ANALYSIS_VERSION`` (trace_analysis/rank_cache.py)
    and write the new pair here. When the analysis got only faster, the digest stays and so does the number."""
    assert (ANALYSIS_VERSION, _analysis_digest()) == (16, "237f4d680c6e1728400c7107d602fce112d7b5a1384f03ab355133b3da8b15d0")
