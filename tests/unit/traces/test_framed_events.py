"""A streamed trace framed in runs of whole events (traces/stream.py FramedEvents) and read through structs
(readers/kineto_trace.py): the same trace and problems as the event-by-event walk, whatever the layout; a text
the runs do not fit (indented events, B/E pairs, damage, non-UTF-8, a gzip stream cut) is read again by the walk,
which notes what it finds."""

from __future__ import annotations

import gzip
import io
import json
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from reportgen.problems import ProblemLog
from reportgen.readers import kineto_trace
from reportgen.readers.kineto_decode import decode_events
from reportgen.readers.trace_model import TraceColumns
from reportgen.traces.stream import FramedEvents
from tests.support.paths import ROOT

RECORDING = ROOT / "tests" / "recordings" / "gpu-host-sync" / "h100-host-sync" / "gpu_host-sync.1795717234729580225.pt.trace.json.gz"


def _events(n: int) -> list[dict]:
    out = []
    for i in range(n):
        out.append({"ph": "X", "cat": "kernel" if i % 3 else "cpu_op", "name": f"op{i % 7}", "pid": 1, "tid": i % 2,
                    "ts": 1000.0 + i, "dur": 0.5, "args": {"device": 0, "correlation": i, "Input Dims": [[2, 3], []]}})
    out.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 0, "ts": 1005.0,
                "args": {"Bytes": 512, "Total Allocated": 1024, "Total Reserved": 2048, "Device Type": 1,
                         "Device Id": 0, "Addr": 77}})
    return out


def _kineto_text(events: list[dict], *, tail: str = '"traceName": "x]", "baseTimeNanoseconds": 1000') -> str:
    """torch's layout: metadata, then one event per line, then more metadata (here with a "]" in it)."""
    lines = ",\n".join("  " + json.dumps(e) for e in events)
    return ('{\n  "schemaVersion": 1,\n  "distributedInfo": {"rank": 3, "world_size": 4},\n'
            f'  "traceEvents": [\n{lines}\n  ],\n  {tail}\n}}\n')


def _read(path: Path, monkeypatch, *, framed: bool) -> tuple[TraceColumns, ProblemLog, list[bool]]:
    calls: list[bool] = []  # per call: the runs took the file
    real = kineto_trace._stream_typed

    def counted(*args):
        taken = real(*args) if framed else None
        calls.append(taken is not None)
        return taken
    with monkeypatch.context() as patched:
        patched.setenv("REPORTGEN_STREAM_TRACE_MB", "0")  # every file streamed
        patched.setattr(kineto_trace, "_stream_typed", counted)
        log = ProblemLog()
        trace = kineto_trace.read_trace(path, log)
    return trace, log, calls


def _same(a: TraceColumns, b: TraceColumns) -> None:
    for f in fields(TraceColumns):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f.name
        elif f.name in ("memory", "flops"):
            for column in vars(x):
                assert np.array_equal(getattr(x, column), getattr(y, column), equal_nan=True), f"{f.name}.{column}"
        elif f.name != "cpu_collectives":
            assert x == y, f.name


def _framed_and_walked(path: Path, monkeypatch, *, taken: bool = True) -> tuple[TraceColumns, ProblemLog]:
    framed, framed_log, calls = _read(path, monkeypatch, framed=True)
    walked, walked_log, _ = _read(path, monkeypatch, framed=False)
    assert calls == [taken]
    _same(framed, walked)
    assert framed_log.to_json() == walked_log.to_json()
    return framed, framed_log


@pytest.mark.parametrize("gz", [False, True])
def test_a_torch_layout_file_is_read_in_runs_as_the_walk_reads_it(gz, tmp_path, monkeypatch):
    text = _kineto_text(_events(3000)).encode()
    path = tmp_path / ("rank3.pt.trace.json" + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(text) if gz else text)
    monkeypatch.setattr("reportgen.traces.stream.READ_BLOCK", 4096)  # many runs
    framing = FramedEvents(io.BytesIO(text), decode_events, chunk=4096)
    runs = [len(run) for run in framing]
    assert framing.ok and len(runs) > 20 and sum(runs) == framing.count == 3001
    assert '"distributedInfo"' in framing.head and '"traceName": "x]"' in framing.tail
    trace, log = _framed_and_walked(path, monkeypatch)
    assert trace.rank == 3 and trace.events_in_file == 3001 and trace.complete and log.total == 0
    assert len(trace.start_us) == 3000 and len(trace.memory.time_us) == 1
    assert trace.start_us[0] == pytest.approx(1000.0 + 1.0)  # baseTimeNanoseconds (1 µs) added


def test_a_real_recording_streamed_is_read_in_runs_as_the_walk_reads_it(tmp_path, monkeypatch):
    path = tmp_path / RECORDING.name
    path.write_bytes(RECORDING.read_bytes())
    trace, _ = _framed_and_walked(path, monkeypatch)
    assert len(trace.start_us) > 5000 and trace.complete


def _indented(events: list[dict]) -> str:
    return json.dumps({"traceEvents": events}, indent=2)  # "{" lines inside events (a list of objects)


@pytest.mark.parametrize("layout", ["indented", "begin-end", "cut", "comma", "not-utf8", "one-line", "no-array"])
def test_a_text_the_runs_do_not_fit_is_walked_with_its_problems(layout, tmp_path, monkeypatch):
    events = _events(200)
    if layout == "indented":
        for event in events:  # lines that start an object inside every event
            event["args"]["list"] = [{"a": 1}, {"b": [2]}]
        text = _indented(events).encode()
    elif layout == "begin-end":
        events[10:10] = [{"ph": "B", "name": "b", "pid": 1, "tid": 0, "ts": 1.0},
                         {"ph": "E", "name": "b", "pid": 1, "tid": 0, "ts": 2.0}]
        text = _kineto_text(events).encode()
    elif layout == "cut":
        full = _kineto_text(events).encode()
        text = full[: len(full) * 2 // 3]
    elif layout == "comma":  # two commas between events: the walk passes over them, strict JSON does not
        text = _kineto_text(events).replace("}},\n", "}},,\n", 1).encode()
    elif layout == "not-utf8":
        text = _kineto_text(events).replace("op3", "op\udcff3").encode("utf-8", "surrogateescape")
    elif layout == "one-line":
        text = json.dumps({"traceEvents": events}).encode()
    else:
        text = b'{"a": 1}'
    path = tmp_path / "rank0.pt.trace.json"
    path.write_bytes(text)
    monkeypatch.setattr("reportgen.traces.stream.READ_BLOCK", 4096)  # many runs
    # one line: no line start to cut at, so the whole text is the last run (in a file of more than
    # MAX_EVENT_BYTES the runs give up)
    trace, log = _framed_and_walked(path, monkeypatch, taken=layout == "one-line")
    problems = log.to_json()
    if layout in ("cut", "not-utf8", "comma", "no-array"):
        assert layout == "comma" or problems["total"] > 0
    else:
        assert problems["total"] == 0 and len(trace.start_us) == 200 + (layout == "begin-end")


def test_a_damaged_gzip_stream_is_walked_and_noted(tmp_path, monkeypatch):
    raw = gzip.compress(_kineto_text(_events(3000)).encode())
    path = tmp_path / "rank3.pt.trace.json.gz"
    path.write_bytes(raw[: len(raw) * 2 // 3])  # the stream cut: what came before it is kept
    trace, log = _framed_and_walked(path, monkeypatch, taken=False)
    assert not trace.complete and log.total > 0 and 0 < len(trace.start_us) < 3000


def _whole(path: Path, monkeypatch, *, in_runs: bool) -> tuple[TraceColumns, ProblemLog, list[bool]]:
    calls: list[bool] = []
    real = kineto_trace._stream_typed

    def counted(*args):
        taken = real(*args)
        calls.append(taken is not None)
        return taken
    with monkeypatch.context() as patched:
        patched.setattr(kineto_trace, "WHOLE_IN_RUNS", in_runs)
        patched.setattr(kineto_trace, "_stream_typed", counted)
        log = ProblemLog()
        trace = kineto_trace.read_trace(path, log)
    return trace, log, calls


@pytest.mark.parametrize("doc", ["recording", "nested-meta", "duplicate-key", "top-level-array", "begin-end"])
def test_a_whole_file_read_in_runs_is_the_file_decoded_at_once(doc, tmp_path, monkeypatch):
    path = tmp_path / "rank1.pt.trace.json"
    events = _events(500)
    if doc == "recording":
        path.write_bytes(gzip.decompress(RECORDING.read_bytes()))
    elif doc == "nested-meta":  # a key the text search would find first, inside another object of the head
        path.write_text('{"other": {"baseTimeNanoseconds": 5, "distributedInfo": {"rank": 9}},\n'
                        + _kineto_text(events)[1:])
    elif doc == "duplicate-key":  # JSON's last value wins, as when the document is decoded at once
        path.write_text(_kineto_text(events).replace('"schemaVersion": 1', '"baseTimeNanoseconds": 7'))
    elif doc == "top-level-array":
        path.write_text(json.dumps(events))
    else:
        events[3:3] = [{"ph": "B", "name": "b", "pid": 1, "tid": 0, "ts": 1.0},
                       {"ph": "E", "name": "b", "pid": 1, "tid": 0, "ts": 2.0}]
        path.write_text(_kineto_text(events))
    runs, runs_log, calls = _whole(path, monkeypatch, in_runs=True)
    once, once_log, _ = _whole(path, monkeypatch, in_runs=False)
    _same(runs, once)
    assert runs_log.to_json() == once_log.to_json()
    assert calls == ([] if doc == "top-level-array" else [doc != "begin-end"])  # taken in runs, else at once
    if doc == "nested-meta":
        assert runs.rank == 3 and runs.start_us[0] == 1000.0 + 1.0  # the document's own 1000 ns, not the 5
    if doc == "duplicate-key":
        assert runs.start_us[0] == 1000.0 + 1.0  # the later 1000 ns, not the earlier 7
