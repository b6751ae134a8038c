"""One event larger than the single-event cap (stream.MAX_EVENT_BYTES) costs that event only
(issue 20, item 5): a streamed trace with one 80 MiB event lost the 1,000 valid events after it and
was called "truncated or corrupt"."""

from __future__ import annotations

import json

from reportgen.readers.framework import read_framework
from reportgen.readers.kineto_trace import read_trace
from reportgen.problems import ProblemLog
from reportgen.traces.stream import OVERSIZED


def _event(i: int, **extra) -> bytes:
    return json.dumps({"ph": "X", "cat": "kernel", "name": f"k{i % 5}", "pid": 0, "tid": 7,
                       "ts": 1_000_000 + 10 * i, "dur": 4, **extra}).encode()


def test_streamed_kineto_trace_keeps_the_events_after_an_80_mib_event(tmp_path):
    path = tmp_path / "rank0.pt.trace.json"
    with open(path, "wb") as fh:  # > 64 MB: streamed by default
        fh.write(b'{"distributedInfo": {"rank": 0}, "traceEvents": [\n')
        fh.write(b",\n".join(_event(i) for i in range(10)) + b",\n")
        fh.write(_event(10, args={"blob": "x" * (80 << 20)}) + b",\n")
        fh.write(b",\n".join(_event(i) for i in range(11, 1011)) + b"\n]}\n")
    problems = ProblemLog()
    trace = read_trace(path, problems)
    assert len(trace.start_us) == 1010  # every event but the oversized one
    assert sorted(trace.names) == ["k0", "k1", "k2", "k3", "k4"] and trace.rank == 0
    assert [(p.line, p.reason) for p in problems.items] == [(12, OVERSIZED)]
    assert not trace.complete  # an event was skipped


def test_streamed_framework_trace_skips_an_oversized_event_only(tmp_path, monkeypatch):
    import reportgen.traces.stream as trace_stream

    monkeypatch.setattr(trace_stream, "MAX_EVENT_BYTES", 4096)
    monkeypatch.setattr(trace_stream, "READ_BLOCK", 1000)
    monkeypatch.setenv("REPORTGEN_STREAM_TRACE_MB", "0")
    folder = tmp_path / "framework" / "pevents" / "000000001"
    folder.mkdir(parents=True)
    lines = [_event(i) for i in range(5)] + [_event(5, args={"blob": "y" * 50_000})] + [_event(i) for i in range(6, 30)]
    (folder / "1700000001000000_1-algo-1_pythontimeline.json").write_bytes(b"[\n" + b",\n".join(lines) + b"\n]\n")
    problems = ProblemLog()
    df = read_framework(tmp_path, problems)
    assert len(df) == 29
    assert [(p.line, p.reason) for p in problems.items] == [(7, OVERSIZED)]
