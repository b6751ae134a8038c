"""Sibling formats as fallbacks: when one copy of a profile gives no event and another format of the same
profile lies beside it, the other is read (under the same rank name) and Data quality says so.

Before: a 0-byte ``host0.xplane.pb`` beside a valid ``host0.trace.json.gz`` gave "no usable profiler data"
(the JSON copy is skipped by name, since the XSpace file holds everything when it is whole).
"""

from __future__ import annotations

import gzip
import json
import os

import pytest

from reportgen.problems import ProblemLog
from reportgen.readers.trace_files import read_trace_file
from reportgen.sources.layout import find_traces
from tests.support.xspace_writer import plane, space

MS = 10**9
NOTE = "no usable events: the same profile's other copy host0.trace.json.gz was read instead"


def _copy() -> bytes:
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "ts": 10.0 * i, "dur": 5.0, "pid": 1, "tid": 1}
              for i in range(6)]
    return gzip.compress(json.dumps({"traceEvents": events}).encode())


def _whole_xspace() -> bytes:
    return space(plane("/host:CPU", [("t", 1_795_000_000_000_000_000, [(1, 0, MS, b""), (1, 2 * MS, MS, b"")])],
                       {1: "op"}))


UNUSABLE = {
    "zero bytes": lambda p: p.write_bytes(b""),
    "garbage": lambda p: p.write_bytes(b"\xff" * 64),
    "cut in its first plane": lambda p: p.write_bytes(_whole_xspace()[:9]),
    "planes without events": lambda p: p.write_bytes(space(plane("/host:CPU", [], {}))),
}


@pytest.mark.parametrize("damage", UNUSABLE)
def test_an_unusable_xspace_file_falls_back_to_its_json_copy(tmp_path, damage):
    UNUSABLE[damage](tmp_path / "host0.xplane.pb")
    (tmp_path / "host0.trace.json.gz").write_bytes(_copy())
    [path] = find_traces(tmp_path)  # the copy is still not listed as a rank of its own
    assert path.name == "host0.xplane.pb"
    problems = ProblemLog()
    trace = read_trace_file(path, problems)
    assert trace.start_us.size == 6 and trace.label == "host0"
    assert sorted(trace.names) == [f"op{i}" for i in range(6)]
    assert problems.counts[NOTE] == 1


def test_an_xspace_name_that_is_no_file_leaves_the_copy_as_the_profile(tmp_path):
    os.mkfifo(tmp_path / "host0.xplane.pb")
    (tmp_path / "host0.trace.json.gz").write_bytes(_copy())
    [path] = find_traces(tmp_path)
    assert path.name == "host0.trace.json.gz"
    assert read_trace_file(path, ProblemLog()).start_us.size == 6


@pytest.mark.parametrize("damage", ["zero bytes", "garbage"])
def test_without_a_copy_nothing_is_invented(tmp_path, damage):
    UNUSABLE[damage](tmp_path / "host0.xplane.pb")
    problems = ProblemLog()
    trace = read_trace_file(tmp_path / "host0.xplane.pb", problems)
    assert trace.start_us.size == 0 and NOTE not in problems.counts


def test_a_whole_xspace_file_is_read_and_its_copy_left_alone(tmp_path):
    (tmp_path / "host0.xplane.pb").write_bytes(_whole_xspace())
    (tmp_path / "host0.trace.json.gz").write_bytes(_copy())
    problems = ProblemLog()
    trace = read_trace_file(tmp_path / "host0.xplane.pb", problems)
    assert trace.start_us.size == 2 and trace.names == ["op"] and problems.total == 0


def test_an_unusable_copy_changes_nothing(tmp_path):
    (tmp_path / "host0.xplane.pb").write_bytes(b"")
    (tmp_path / "host0.trace.json.gz").write_bytes(b"")
    problems = ProblemLog()
    trace = read_trace_file(tmp_path / "host0.xplane.pb", problems)
    assert trace.start_us.size == 0 and NOTE not in problems.counts
    assert "not an XSpace protobuf (no planes)" in problems.counts
