"""The system reader's DuckDB feed (``readers.system._RowFeed``): queries run by two feed threads at once, their
results taken in order, so that the tables equal a one-query-at-a-time read whatever finishes first, a slice
DuckDB rejects sends only its node to the batch path, and an unexpected error reaches the caller."""

import threading
import time

import numpy as np
import pytest

from reportgen.problems import ProblemLog
from reportgen.readers import system as sr
from reportgen.readers.system import read_system

from .test_readers import T, instant, write_sys


def _profile(root, nodes=("algo-1", "algo-2", "algo-3"), minutes=3):
    for n, node in enumerate(nodes):
        for m in range(minutes):
            t0 = T + 60 * m
            write_sys(root, t0, [l for k in range(4) for l in instant(t0 + 0.5 * k, cpu=10.0 * (n + 1) + m + k,
                                                                        node=node)], node=node)


def _tables(data) -> dict:
    return {node: (ns.tick_ts.tolist(), np.asarray(ns.values).tolist()) for node, ns in data.nodes.items()}


@pytest.fixture
def one_file_a_query(monkeypatch):
    monkeypatch.setattr(sr, "GROUPED_QUERY_BYTES", 1)  # a slice a file: three row queries a node


def test_results_come_in_order_whatever_query_ends_first(tmp_path, monkeypatch, one_file_a_query):
    _profile(tmp_path)
    expected = _tables(read_system(tmp_path, ProblemLog()))
    real = sr._rows
    calls = []

    def slow_first(cursor, sql, files, bound=None):
        calls.append(threading.current_thread().name)
        if len(calls) % 2 == 1:
            time.sleep(0.05)  # every other query ends after the one started after it
        return real(cursor, sql, files, bound)

    monkeypatch.setattr(sr, "_rows", slow_first)
    found = read_system(tmp_path, ProblemLog())
    assert len(calls) == 9 and len(set(calls)) == 2  # both feed threads queried
    assert _tables(found) == expected and list(found.nodes) == ["algo-1", "algo-2", "algo-3"]


def test_a_rejected_slice_sends_its_node_alone_to_the_batch_path(tmp_path, monkeypatch, one_file_a_query):
    import duckdb

    _profile(tmp_path)
    expected = _tables(read_system(tmp_path, ProblemLog()))
    real = sr._rows
    bad = sorted((tmp_path / "system").rglob(f"{T + 60}.algo-2.json"))[0]

    def reject(cursor, sql, files, bound=None):
        if str(bad) in files:
            raise duckdb.InvalidInputException("planted")
        return real(cursor, sql, files, bound)

    monkeypatch.setattr(sr, "_rows", reject)
    batches = []
    real_batches = sr.SystemReader._read_batches
    monkeypatch.setattr(sr.SystemReader, "_read_batches", lambda self, files: batches.append(
        sorted(f.name.split(".")[1] for f in files)) or real_batches(self, files))
    problems = ProblemLog()
    found = read_system(tmp_path, problems)
    assert batches == [["algo-2"] * 3]  # the node's three files, read again by the batch path
    assert _tables(found) == expected and problems.total == 0


def test_an_unexpected_error_in_a_query_reaches_the_caller(tmp_path, monkeypatch, one_file_a_query):
    _profile(tmp_path)
    real = sr._rows

    def broken(cursor, sql, files, bound=None):
        if "algo-3" in files[0]:
            raise MemoryError("planted")
        return real(cursor, sql, files, bound)

    monkeypatch.setattr(sr, "_rows", broken)
    with pytest.raises(MemoryError, match="planted"):
        read_system(tmp_path, ProblemLog())
    assert not [t for t in threading.enumerate() if t.name.startswith("reportgen-duckdb")]  # none left running


def test_an_error_listing_a_node_s_slices_reaches_the_caller_in_its_place(tmp_path, monkeypatch, one_file_a_query):
    """Listing a node's slices (its files' sizes and last lines) that raises: the nodes before it are read, then
    the error is raised where that node comes, and no feed thread is left running."""
    _profile(tmp_path)
    real = sr._slices
    reached = []

    def slices(files, last=False):
        if "algo-2" in files[0].name:
            raise MemoryError("planted")
        return real(files, last)

    monkeypatch.setattr(sr, "_slices", slices)
    real_grouped = sr.SystemReader._grouped
    monkeypatch.setattr(sr.SystemReader, "_grouped", lambda self, r: reached.append(r is not None) or real_grouped(self, r))
    with pytest.raises(MemoryError, match="planted"):
        read_system(tmp_path, ProblemLog())
    assert reached == [True]  # algo-1 was read; algo-2's error came next
    assert not [t for t in threading.enumerate() if t.name.startswith("reportgen-duckdb")]


def test_a_catalog_query_does_not_hold_a_feed_thread_back(tmp_path, monkeypatch, one_file_a_query):
    """While the reading thread waits for a slow row query (algo-1's last slice), the other feed thread runs
    the node's catalog and the next node's row queries up to ``FEED_AHEAD`` row queries ahead: the catalog
    does not count. Counted, the third task ahead (algo-2's second slice) waited for the slow query to end."""
    _profile(tmp_path, nodes=("algo-1", "algo-2"))
    expected = _tables(read_system(tmp_path, ProblemLog()))
    real = sr._rows
    third_ahead = threading.Event()
    waited = []

    def slow_last_slice(cursor, sql, files, bound=None):
        name = files[0].rsplit("/", 1)[-1]
        if name == f"{T + 60}.algo-2.json":
            third_ahead.set()
        if name == f"{T + 120}.algo-1.json":
            waited.append(third_ahead.wait(2.0))  # False: no other query started meanwhile
        return real(cursor, sql, files, bound)

    monkeypatch.setattr(sr, "_rows", slow_last_slice)
    found = read_system(tmp_path, ProblemLog())
    assert sr.FEED_AHEAD == 3 and waited == [True]
    assert _tables(found) == expected


def _sized_files(root, lines):
    """Files of the given numbers of 100-byte lines (each a JSON object), in name order."""
    root.mkdir(exist_ok=True)
    files = []
    for i, n in enumerate(lines):
        f = root / f"{1700000000 + 60 * i}.algo-1.json"
        f.write_bytes((b"{" + b" " * 97 + b"}\n") * n)
        files.append(f)
    return files


def test_a_node_s_slices_are_about_equal_and_the_last_node_s_twice_as_many(tmp_path, monkeypatch):
    """141 units in 64-unit slices: three of 47 (not 64 + 64 + 13, which left a feed thread idle at the read's
    end); the read's last node in six. Contiguous, in file order, every file once; never over the cap unless
    one file is."""
    monkeypatch.setattr(sr, "GROUPED_QUERY_BYTES", 64 * 100)  # 64 lines
    assert [len(s) for s in sr._slices(_sized_files(tmp_path / "three", [47] * 3))] == [1, 1, 1]
    files = _sized_files(tmp_path / "many", [1] * 141)
    slices = sr._slices(files)
    assert [len(s) for s in slices] == [47, 47, 47]
    assert sum(slices, []) == [str(f) for f in files]
    last = sr._slices(files, last=True)
    assert [len(s) for s in last] == [24, 24, 24, 24, 24, 21]
    assert sum(last, []) == [str(f) for f in files]
    # under one slice's bytes: one slice (two for the last node); one file: one slice however big
    assert [len(s) for s in sr._slices(files[:10])] == [10]
    assert [len(s) for s in sr._slices(files[:10], last=True)] == [5, 5]
    assert sr._slices(_sized_files(tmp_path / "one", [640]), last=True) == [[str(tmp_path / "one" / "1700000000.algo-1.json")]]
    # three files of 40 in 64-unit slices: two slices of 60 would hold 80 in one; the cap keeps one a slice
    assert [len(s) for s in sr._slices(_sized_files(tmp_path / "forty", [40] * 3))] == [1, 1, 1]
