"""One sanity policy for event times in every trace reader (``trace_model.times_in_range``).

An event longer than 30 days or starting beyond year 2255 (either side of the epoch) is dropped and counted
as ``OUT_OF_RANGE`` in Data quality, whichever format it came in. Before, the XSpace reader kept them: one
kernel of 2^63-1 ps made a 107-day rank "GPU active 99.99999998 %", a host event at offset 2^63-1 ps the
same, and a line timestamp of -2^63 ns dated every event of its line to 1678. Each case holds good events
beside the bad ones: those are all kept.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from reportgen.problems import ProblemLog
from reportgen.readers.kineto_trace import read_trace
from reportgen.readers.trace_model import MAX_ABS_TS_US, MAX_DURATION_US, OUT_OF_RANGE
from reportgen.readers.xspace_trace import read_xspace
from tests.support.xspace_writer import int_field, len_field, plane, space

MS = 10**9  # ps
START_NS = 1_795_000_000_000_000_000
MAX_I64 = 2**63 - 1


def _xspace(tmp_path, host_line_ns: int = 0, host_offset_ps: int = 0, kernel_ps: int = MS):
    """Task Environment + a host line (3 good ops, one at ``host_offset_ps``) + a GPU stream of 2 kernels
    (the second ``kernel_ps`` long). Returns (path, good events)."""
    env = plane("Task Environment", [], {}, {1: "profile_start_time"},
                plane_stats=len_field(6, int_field(1, 1) + int_field(3, START_NS)))
    host = plane("/host:CPU", [("main", 0, [(1, 0, MS, b""), (1, 2 * MS, MS, b"")]),
                               ("other", host_line_ns, [(1, host_offset_ps, MS, b"")])], {1: "op"})
    gpu = plane("/device:GPU:0", [("Stream #1(Compute)", 0, [(1, 0, MS, b""), (1, 3 * MS, kernel_ps, b"")])],
                {1: "fusion"})
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(space(env, host, gpu))
    return path


def _kineto(tmp_path, ts: float = 0.0, dur: float = 1000.0):
    """Four good events (µs) and one with ``ts``/``dur`` added to its own."""
    base = 1.795e15
    events = [{"ph": "X", "cat": "kernel", "name": "k", "ts": base + i * 10, "dur": 5, "pid": 0, "tid": 7}
              for i in range(4)]
    events.append({"ph": "X", "cat": "kernel", "name": "k", "ts": base + ts, "dur": dur, "pid": 0, "tid": 7})
    path = tmp_path / "w.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


# (reader, file maker, events that must be dropped, events that must be kept)
CASES = {
    "xspace kernel of 2^63-1 ps": (read_xspace, lambda t: _xspace(t, kernel_ps=MAX_I64), 1, 4),
    "xspace host event at offset 2^63-1 ps": (read_xspace, lambda t: _xspace(t, host_offset_ps=MAX_I64), 1, 4),
    "xspace line timestamp -2^63 ns": (read_xspace, lambda t: _xspace(t, host_line_ns=-2**63), 1, 4),
    "xspace line timestamp 2^63-1 ns": (read_xspace, lambda t: _xspace(t, host_line_ns=MAX_I64), 1, 4),
    "xspace clean": (read_xspace, lambda t: _xspace(t), 0, 5),
    "kineto duration of 2^64 ns": (read_trace, lambda t: _kineto(t, dur=2.0**64 / 1000), 1, 4),
    "kineto start beyond 2255": (read_trace, lambda t: _kineto(t, ts=1e17), 1, 4),
    "kineto start 1e17 µs before the epoch": (read_trace, lambda t: _kineto(t, ts=-1e17), 1, 4),
    "kineto clean": (read_trace, lambda t: _kineto(t), 0, 5),
}


@pytest.mark.parametrize("case", CASES)
def test_impossible_times_are_dropped_and_counted_in_every_reader(tmp_path, case):
    read, make, dropped, kept = CASES[case]
    problems = ProblemLog()
    trace = read(make(tmp_path), problems)
    assert problems.counts.get(OUT_OF_RANGE, 0) == dropped
    assert trace.start_us.size == kept
    assert np.all(np.abs(trace.start_us) < MAX_ABS_TS_US) and np.all(trace.dur_us <= MAX_DURATION_US)
    span_days = (trace.start_us + trace.dur_us).max() - trace.start_us.min()
    assert span_days / 86400e6 < 1  # the rank spans milliseconds, not 107 days
    assert np.all(np.diff(trace.start_us) >= 0)  # still sorted after the drop
