"""A warm run opens no trace file the digest memo knows unchanged (trace_analysis/job.plan_ranks): the task plan takes
each file's rank from its kept head instead of reading its first 64 KiB, and the reduction is served from the heads
and the ranks' entries; a file touched since, or whose head is gone, is opened again, and the document and Data
quality are the cold run's either way (issue 51)."""

from __future__ import annotations

import gzip
import json
import os
import sys
import time
from pathlib import Path

import pytest

from reportgen.problems import MAX_LISTED, ProblemLog
from reportgen.readers import trace_cache
from reportgen.readers.digest_memo import DigestMemo
from reportgen.readers.trace_cache import TraceCache
from reportgen.readers.trace_files import read_trace_file
from reportgen.readers.trace_heads import head_path
from reportgen.trace_analysis.job import analyze_traces, plan_ranks, plan_tasks, probe_rank
from tests.support.paths import ROOT
from tests.support.warm_job import make_job_files

RECORDINGS = ROOT / "tests" / "recordings"


def _ahead() -> int:
    """The memo trusts a file changed more than 2 s before its hashing began: a clock 10 s ahead trusts files just
    copied."""
    return time.time_ns() + 10**10


class Opens:
    """The paths a block of code opens (``open`` audit events: ``open``, ``io.open``, ``os.open``, numpy's loads...).

    An audit hook cannot be removed: one hook per process, idle unless a block is being watched."""

    watching: list[list[str]] = []

    def __init__(self) -> None:
        self.paths: list[str] = []
        if not getattr(Opens, "installed", False):
            sys.addaudithook(Opens._hook)
            Opens.installed = True

    @staticmethod
    def _hook(event: str, args: tuple) -> None:
        if event == "open" and Opens.watching and isinstance(args[0], (str, bytes, os.PathLike)):
            Opens.watching[-1].append(os.fsdecode(args[0]))

    def __enter__(self) -> Opens:
        Opens.watching.append(self.paths)
        return self

    def __exit__(self, *exc) -> None:
        Opens.watching.pop()

    def of(self, files: list[Path]) -> list[str]:
        """The opens of ``files``, by name, in order."""
        names = {str(f) for f in files}
        return [Path(p).name for p in self.paths if p in names]


def _cache(folder: Path) -> TraceCache:
    """A cache as a run makes it: its memo read afresh from the folder (each run is a new process)."""
    folder.mkdir(exist_ok=True)
    return TraceCache(folder, 1 << 30, memo=DigestMemo(folder, clock=_ahead))


@pytest.fixture
def job_files(tmp_path) -> list[Path]:
    """Two ranks: a worker's two cycles, the second cut at 60 % (its damage goes to Data quality), and a CPU run."""
    return make_job_files(tmp_path / "job")


def _same(result, reference) -> None:
    doc, problems = result
    assert json.dumps(doc) == json.dumps(reference[0])
    assert problems.to_json() == reference[1].to_json()


def test_a_warm_run_opens_no_trace_file(tmp_path, job_files):
    off = analyze_traces(job_files)
    assert off[1].total > 0  # the cut file's damage, which a warm run must still report
    with Opens() as cold:
        _same(analyze_traces(job_files, cache=_cache(tmp_path / "c")), off)
    assert sorted(set(cold.of(job_files))) == sorted(p.name for p in job_files)  # the watch sees the reads
    with Opens() as warm:
        _same(analyze_traces(job_files, cache=_cache(tmp_path / "c")), off)
    assert warm.of(job_files) == []
    assert any(p.endswith(".head.json") for p in warm.paths)  # what it read instead


def test_the_plan_takes_each_rank_from_its_head_when_the_file_is_unchanged(tmp_path, job_files):
    names = [str(p) for p in job_files]
    probed = [probe_rank(p) for p in job_files]
    assert plan_ranks(names, MAX_LISTED, None) == (probed, set())  # no cache: every file probed
    analyze_traces(job_files, cache=_cache(tmp_path / "c"))
    ranks, kept = plan_ranks(names, MAX_LISTED, _cache(tmp_path / "c"))
    assert kept == {0, 1, 2}
    # the rank the whole read found: the cut second cycle states none of its own, and its head says so as well
    assert ranks == [read_trace_file(p, ProblemLog()).rank for p in job_files]
    assert plan_tasks(names, ranks) == plan_tasks(names, probed)


def test_a_touched_file_is_opened_again_and_the_others_are_not(tmp_path, job_files):
    off = analyze_traces(job_files)
    analyze_traces(job_files, cache=_cache(tmp_path / "c"))
    st = job_files[2].stat()
    os.utime(job_files[2], ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # same bytes, another identity
    ranks, kept = plan_ranks([str(p) for p in job_files], MAX_LISTED, _cache(tmp_path / "c"))
    assert kept == {0, 1} and ranks[2] == probe_rank(job_files[2])
    with Opens() as warm:
        _same(analyze_traces(job_files, cache=_cache(tmp_path / "c")), off)
    opened = warm.of(job_files)
    assert opened and set(opened) == {job_files[2].name}  # probed and hashed again; its entry still serves it
    with Opens() as again:  # remembered by its new identity
        _same(analyze_traces(job_files, cache=_cache(tmp_path / "c")), off)
    assert again.of(job_files) == []


def test_a_file_whose_head_is_gone_is_probed_and_read_again(tmp_path, job_files):
    off = analyze_traces(job_files)
    analyze_traces(job_files, cache=_cache(tmp_path / "c"))
    cache = _cache(tmp_path / "c")
    head_path(cache, trace_cache.file_key(job_files[0], MAX_LISTED, cache.memo)[0]).unlink()
    with Opens() as warm:
        _same(analyze_traces(job_files, cache=_cache(tmp_path / "c")), off)
    # probed for the plan; its task (the worker's two cycles) then loads both files' entries, no trace byte
    assert set(warm.of(job_files)) == {job_files[0].name}
    assert head_path(cache, trace_cache.file_key(job_files[0], MAX_LISTED, cache.memo)[0]).is_file()


def test_a_file_rewritten_with_other_content_is_never_planned_from_its_old_head(tmp_path, job_files):
    analyze_traces(job_files, cache=_cache(tmp_path / "c"))
    job_files[2].write_bytes(gzip.compress(json.dumps({"distributedInfo": {"rank": 7}, "traceEvents": []}).encode()))
    ranks, kept = plan_ranks([str(p) for p in job_files], MAX_LISTED, _cache(tmp_path / "c"))
    assert kept == {0, 1} and ranks[2] == 7
    assert analyze_traces(job_files, cache=_cache(tmp_path / "c"))[0] == analyze_traces(job_files)[0]
