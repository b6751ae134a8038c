"""kept_file: the one guard every cache reads its own files through (issue: untrusted input, one policy per class).
A cache folder may be restored from an artifact: a link is not followed, a FIFO not waited on, a file past its
bound not read; and the trace and rank entries, which read their files without it before, now go through it."""

from __future__ import annotations

import os
import shutil

import pytest

from reportgen.kept_file import open_kept, read_kept, regular_or_absent
from reportgen.problems import ProblemLog
from reportgen.readers.trace_cache import TraceCache, entry_path, file_key, load_entry, read_trace_cached
from reportgen.trace_analysis.analysis import analyze_trace, totals_by_name
from reportgen.trace_analysis.rank_cache import load_rank, rank_entry_key, rank_entry_path, store_rank
from reportgen.trace_analysis.ranks import merge_cycles
from reportgen.readers.trace_files import read_trace_file
from tests.support.paths import ROOT

SHORT = ROOT / "tests" / "recordings" / "cpu-torch" / "short" / "pytorch-traces" / "vm_25557.1795718343710566171.pt.trace.json.gz"
posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and O_NOFOLLOW are POSIX")


def test_a_regular_file_is_read_within_its_bound(tmp_path):
    kept = tmp_path / "entry"
    kept.write_bytes(b"0123456789")
    assert read_kept(kept) == b"0123456789" and read_kept(kept, 10) == b"0123456789"
    assert read_kept(kept, 9) is None  # past the bound: not read at all
    assert read_kept(tmp_path / "absent") is None and regular_or_absent(tmp_path / "absent")
    assert regular_or_absent(kept)
    with open_kept(kept) as handle:
        assert handle.read(4) == b"0123"


@posix_only
def test_a_link_a_fifo_and_a_folder_are_neither_read_nor_written_over(tmp_path):
    target = tmp_path / "secret"
    target.write_bytes(b"not the cache's")
    link, fifo, folder = tmp_path / "link", tmp_path / "fifo", tmp_path / "folder"
    link.symlink_to(target)
    os.mkfifo(fifo)  # no writer: a blocking open would wait for ever
    folder.mkdir()
    for odd in (link, fifo, folder):
        assert read_kept(odd) is None and open_kept(odd) is None and not regular_or_absent(odd)


@posix_only
def test_a_trace_entry_replaced_by_a_link_or_a_fifo_is_a_miss_left_alone(cache, tmp_path):
    path = tmp_path / "job" / SHORT.name
    path.parent.mkdir()
    shutil.copyfile(SHORT, path)
    read_trace_cached(path, ProblemLog(), cache)
    key = file_key(path, 200)[0]
    where = entry_path(cache, key)
    whole = tmp_path / "moved.npz"
    where.rename(whole)
    where.symlink_to(whole)  # a valid entry behind a link: not followed
    assert load_entry(cache, key, path) is None and where.is_symlink()
    where.unlink()
    os.mkfifo(where)
    assert load_entry(cache, key, path) is None and where.exists()  # returned at once; the FIFO left alone


@posix_only
def test_a_rank_entry_replaced_by_a_fifo_or_grown_past_the_bound_is_a_miss(cache):
    one = merge_cycles([read_trace_file(SHORT, ProblemLog())])
    key = rank_entry_key(["k"])
    assert store_rank(cache, key, analyze_trace(one), totals_by_name(one)) is not None
    where = rank_entry_path(cache, key)
    size = where.stat().st_size
    assert load_rank(cache, key) is not None
    assert load_rank(TraceCache(cache.folder, size - 1), key) is None and where.exists()  # too large: not read
    where.unlink()
    os.mkfifo(where)
    assert load_rank(cache, key) is None and where.exists()  # before, read_bytes() waited for a writer for ever
