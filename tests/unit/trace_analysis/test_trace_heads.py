"""Each file's head kept beside its entry (readers/trace_heads.py): a warm run with every rank kept groups the files
from their heads and loads no file's entry, giving the cold run's document and Data quality; a damaged, foreign or
missing head, or a missing rank entry, sends the task back to reading its files (never a wrong grouping)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reportgen.problems import MAX_LISTED, ProblemLog
from reportgen.readers import trace_cache
from reportgen.readers.trace_cache import ENTRY_SUFFIXES, TraceCache
from reportgen.readers.trace_heads import HEAD_SUFFIX, head_path, load_head
from reportgen.trace_analysis.job import analyze_traces
from reportgen.readers.trace_files import read_trace_file
from reportgen.trace_analysis.rank_cache import RANK_SUFFIX
from tests.support.paths import ROOT
from tests.support.warm_job import make_job_files

RECORDINGS = ROOT / "tests" / "recordings"


@pytest.fixture
def cache(tmp_path) -> TraceCache:
    folder = tmp_path / "cache"
    folder.mkdir()
    return TraceCache(folder, 1 << 30)


@pytest.fixture
def job_files(tmp_path) -> list[Path]:
    """Two ranks: a worker's two cycles, the second cut at 60 % (its damage goes to Data quality), and a CPU run."""
    return make_job_files(tmp_path / "job")


class Loads:
    """Counts the file entries a run loads (``trace_cache.load_entry``)."""

    def __init__(self, monkeypatch) -> None:
        self.names: list[str] = []
        real = trace_cache.load_entry

        def counted(cache, key, path):
            self.names.append(Path(path).name)
            return real(cache, key, path)
        monkeypatch.setattr(trace_cache, "load_entry", counted)


def _heads(cache: TraceCache) -> list[Path]:
    return sorted(cache.folder.glob(f"*{HEAD_SUFFIX}"))


def _same(result, reference) -> None:
    doc, problems = result
    assert json.dumps(doc) == json.dumps(reference[0])
    assert problems.to_json() == reference[1].to_json()


def test_a_warm_run_loads_no_file_entry_and_gives_the_cold_document(cache, job_files, monkeypatch):
    off = analyze_traces(job_files)
    assert off[1].total > 0  # the cut file's damage, which a warm run must still report
    _same(analyze_traces(job_files, cache=cache), off)
    assert len(_heads(cache)) == 3 and len(list(cache.folder.glob("*.npz"))) == 3
    loads = Loads(monkeypatch)
    _same(analyze_traces(job_files, cache=cache), off)
    assert loads.names == []
    doc = analyze_traces(job_files, cache=cache)[0]
    assert doc["ranks"]["vm_442"]["cycles"] == 2 and loads.names == []


def test_a_head_holds_what_the_read_found(cache, job_files):
    analyze_traces(job_files, cache=cache)
    key = trace_cache.file_key(job_files[1], MAX_LISTED)[0]  # the cap analyze_traces' own log has
    head = load_head(cache, key, job_files[1])
    assert head is not None and head.path == job_files[1] and head.problem_counts
    read = read_trace_file(job_files[1], log := ProblemLog(MAX_LISTED))
    assert (head.label, head.rank, head.first_us) == (read.label, read.rank, float(read.start_us[0]))
    assert dict(head.problem_counts) == dict(log.counts)
    assert load_head(cache, key, job_files[0]) is None  # another path under this key: foreign, and removed
    assert not head_path(cache, key).exists()


@pytest.mark.parametrize("damage", ["altered", "cut", "foreign", "removed"])
def test_a_damaged_head_is_removed_and_its_task_read_again(cache, job_files, monkeypatch, damage):
    off = analyze_traces(job_files)
    analyze_traces(job_files, cache=cache)
    victim = head_path(cache, trace_cache.file_key(job_files[2], MAX_LISTED)[0])
    other = head_path(cache, trace_cache.file_key(job_files[0], MAX_LISTED)[0])
    raw = victim.read_bytes()
    if damage == "altered":  # a start changed under an intact header: its checksum no longer matches
        victim.write_bytes(raw.replace(b'"first_us": ', b'"first_us": 1'))
    elif damage == "cut":
        victim.write_bytes(raw[: len(raw) // 2])
    elif damage == "foreign":
        shutil.copyfile(other, victim)
    else:
        victim.unlink()
    loads = Loads(monkeypatch)
    _same(analyze_traces(job_files, cache=cache), off)
    assert loads.names == [job_files[2].name]  # only the damaged head's task read its file (from its entry)
    assert victim.read_bytes() == raw  # made again from that read
    loads.names.clear()
    _same(analyze_traces(job_files, cache=cache), off)
    assert loads.names == []


def test_a_missing_rank_entry_reads_that_ranks_files_only(cache, job_files, monkeypatch):
    off = analyze_traces(job_files)
    analyze_traces(job_files, cache=cache)
    ranks = sorted(cache.folder.glob(f"*{RANK_SUFFIX}"), key=lambda p: p.stat().st_size)
    ranks[-1].unlink()  # the larger: the two-cycle GPU rank
    loads = Loads(monkeypatch)
    _same(analyze_traces(job_files, cache=cache), off)
    assert sorted(loads.names) == sorted(p.name for p in job_files[:2])


def test_a_cache_filled_before_heads_gains_them_on_its_next_run(cache, job_files, monkeypatch):
    off = analyze_traces(job_files)
    analyze_traces(job_files, cache=cache)
    for head in _heads(cache):
        head.unlink()
    loads = Loads(monkeypatch)
    _same(analyze_traces(job_files, cache=cache), off)
    assert len(loads.names) == 3 and len(_heads(cache)) == 3
    loads.names.clear()
    _same(analyze_traces(job_files, cache=cache), off)
    assert loads.names == []


def test_heads_are_bounded_with_the_entries():
    assert HEAD_SUFFIX in ENTRY_SUFFIXES
