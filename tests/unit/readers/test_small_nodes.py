"""Per-node cost: in a folder of many nodes, a small node is read line by line in Python instead of by a
DuckDB query (~7 ms of CPU each, whatever its size: 10,000 one-line nodes ran past 120 s of CPU).

The line-by-line read must give what the query gives: the same tick tables, byte for byte, and the same
problems, for clean nodes and for every kind of small node that the fast path hands to the careful path
anyway (a bad line, an empty file, a negative value, a BOM and CRLF, records out of order).
"""

from __future__ import annotations

import numpy as np

from reportgen.problems import ProblemLog
from reportgen.readers import system as sr
from reportgen.readers.system import read_system

from .test_readers import T, instant, rec, write_sys


def _tables(root) -> tuple[dict, list]:
    problems = ProblemLog()
    nodes = read_system(root, problems).nodes
    return ({n: (t.tick_ts.tobytes(), t.columns, t.interval_s, t.first_ts, t.last_ts,
                 np.asarray(t.values).tobytes()) for n, t in nodes.items()},
            sorted((p.file, p.line, p.reason) for p in problems.items))


def _many_small_nodes(root) -> None:
    for i in range(40):  # one line, as the 10,000 nodes
        write_sys(root, T, [rec("cpu", "cpu0", "CPUUtilization", 10.0 + i, T + 0.5, f"algo-{i}")], node=f"algo-{i}")
    for i in range(40, 48):  # two minutes of instants, two files
        for minute in (T, T + 60):
            write_sys(root, minute, [line for k in range(6) for line in instant(minute + 10 * k, cpu=k * 3.5,
                                                                                 node=f"algo-{i}")], node=f"algo-{i}")
    lines = [line for k in range(6) for line in instant(T + 10 * k, node="algo-90")]
    write_sys(root, T, lines[6:] + lines[:6], node="algo-90")  # out of order: re-sorted, no note on either path
    write_sys(root, T, [], node="algo-91", raw=b"")  # an empty file
    write_sys(root, T, [rec("cpu", "cpu0", "CPUUtilization", 5.0, T + 1, "algo-92"), "{oops",
                        rec("cpu", "cpu0", "CPUUtilization", 6.0, T + 2, "algo-92")], node="algo-92")
    write_sys(root, T, [rec("cpu", "cpu0", "CPUUtilization", -1.0, T + 1, "algo-93")], node="algo-93")
    write_sys(root, T, [], node="algo-94",
              raw=b"\xef\xbb\xbf" + "\r\n".join(instant(T + 3, node="algo-94")).encode() + b"\r\n")


def test_small_nodes_read_in_python_equal_the_query_path(tmp_path, monkeypatch):
    _many_small_nodes(tmp_path)
    monkeypatch.setattr(sr, "SMALL_NODES_FROM", 10**9)  # every node through DuckDB, as before
    queried = _tables(tmp_path)
    monkeypatch.setattr(sr, "SMALL_NODES_FROM", 2)
    calls = []
    real = sr._rows
    monkeypatch.setattr(sr, "_rows", lambda *a: calls.append(a) or real(*a))
    in_python = _tables(tmp_path)
    assert calls == []  # no node went to DuckDB
    assert len(queried[0]) == 52 and in_python == queried  # algo-91 (empty) has no table
    assert ("system/incremental/2023111422/%d.algo-92.json" % T, 2, "malformed JSON line") in in_python[1]


def test_a_node_above_the_bound_still_takes_the_query(tmp_path, monkeypatch):
    _many_small_nodes(tmp_path)
    monkeypatch.setattr(sr, "SMALL_NODES_FROM", 2)
    monkeypatch.setattr(sr, "SMALL_NODE_BYTES", 2000)  # the two-minute nodes are above it
    calls = []
    real = sr._rows
    monkeypatch.setattr(sr, "_rows", lambda *a: calls.append(a) or real(*a))
    read_system(tmp_path, ProblemLog())
    assert calls  # the larger nodes were queried
