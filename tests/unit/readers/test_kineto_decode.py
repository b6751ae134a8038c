"""The Kineto reader's typed whole-file path (``readers.kineto_decode`` structs, columns built whole) against
its event-by-event path over the parser's dicts: the same trace, field for field and problem for problem,
for every shape the typed path takes; every text it must not take is left to the event-by-event path."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from reportgen.problems import ProblemLog
from reportgen.readers import kineto_trace
from reportgen.readers.kineto_trace import read_trace
from reportgen.traces import stream


TYPED_COLUMNS = kineto_trace._typed_columns
STREAM_TYPED = kineto_trace._stream_typed


def _x(name, ts, dur, cat="cpu_op", tid=1, pid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            **({"args": args} if args else {})}


def _mem(ts, nbytes, tid=1, **more):
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": tid, "ts": ts,
            "args": {"Bytes": nbytes, "Total Allocated": 4096, "Total Reserved": 8192, "Device Type": 1,
                     "Device Id": 0, "Addr": 94000, **more}}


RICH = {
    "schemaVersion": 1,
    "deviceProperties": [{"id": 0, "name": "NVIDIA A100", "totalGlobalMem": 42505273344, "computeMajor": 8,
                          "computeMinor": 0}],
    "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
    "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
        _x("ProfilerStep#1", 100, 900, cat="user_annotation"),
        _x("aten::mm", 120.5, 30, **{"Input Dims": [[64, 128], [128, 32]], "correlation": 7}),
        _x("aten::addmm", 160, 20, **{"Input Dims": [[32], [64, 128], [128, 16]], "flops": "no"}),
        _x("aten::conv2d", 190, 10, flops=123456),
        _x("aten::bmm", 200, 10, **{"Input Dims": "odd"}),
        _x("aten::mm", 205, 1, **{"Input Dims": [[2, 3], [4, 5]]}),  # shapes that do not multiply
        _x("ncclKernel_AllReduce", 300, 50, cat="kernel", pid=0, tid=7,
           **{"device": 0, "stream": 7, "correlation": 9, "In msg nelems": 1000, "dtype": "BFloat16"}),
        _x("ncclKernel_AllGather", 360, 50, cat="Kernel", pid=0, tid=7, **{"In msg nelems": "1e3", "dtype": "Odd"}),
        _x("Memcpy HtoD", 420, 5, cat="gpu_memcpy", pid=0, tid=7, bytes=4096, device=True),
        _x("Memset", 430, 5, cat="gpu_memset", pid=2, tid=8, bytes="12"),
        _x("gpu step", 100, 900, cat="gpu_user_annotation", pid=0, tid=7),
        _x("cudaLaunchKernel", 299, 2, cat="cuda_runtime", correlation=None),
        _x("cudaMemcpy", 419, 2, cat="cuda_runtime", correlation=True),
        _x("odd ids", 450, 1, cat="python_function", tid=-5, correlation=-2),
        _x("aten::mm", 120.5, 30, tid=2**62),  # a tie with the first aten::mm: file order decides
        _x("negative", 500, -1), _x("endless", 510, 2**64), _x("far", 3.0e19, 1),
        {"ph": "s", "cat": "ac2g", "name": "flow", "id": 7, "pid": 1, "tid": 1, "ts": 120},
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
         "ts": 90, "dur": 1000, "args": {"Op count": 0}},
        _x("listed tid", 600, 1, tid=[1, 2]), _x("Null name and cat", 610, 1, cat=None),
        _mem(130, 512), _mem(140, -512, tid="PyTorch Profiler", Addr=None), _mem(150, "x"), _mem(3.0e19, 8),
        {"ph": "i", "name": "Record Window End", "pid": "", "tid": "", "ts": 1000},
    ],
    "traceName": "rich",
}


def _fields(trace) -> dict:
    out = {}
    for key, value in vars(trace).items():
        if dataclasses.is_dataclass(value):
            value = _fields(value)
        elif isinstance(value, np.ndarray):
            value = (value.dtype.str, value.tolist(), value.tobytes())  # bytes: NaN == NaN, -0.0 != 0.0
        out[key] = value
    return out


@pytest.fixture(autouse=True, params=[False, True], ids=["at-once", "in-runs"])
def whole_in_runs(request, monkeypatch) -> bool:
    """Every test twice: a whole file's structs decoded at once, and a run at a time (``WHOLE_IN_RUNS``)."""
    monkeypatch.setattr(kineto_trace, "WHOLE_IN_RUNS", request.param)
    return request.param


def _both(tmp_path: Path, text: bytes, monkeypatch, name: str = "rank.pt.trace.json") -> tuple:
    """(typed path taken, the trace and problems read as usual, the same read with the typed path off)."""
    path = tmp_path / name
    path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    taken = []

    def spy(real):
        def spied(*args):
            trace = real(*args)
            taken.append(trace is not None)
            return trace
        return spied

    monkeypatch.setattr(kineto_trace, "_typed_columns", spy(TYPED_COLUMNS))
    monkeypatch.setattr(kineto_trace, "_stream_typed", spy(STREAM_TYPED))
    usual = ProblemLog()
    trace = read_trace(path, usual)
    monkeypatch.setattr(kineto_trace, "_typed_columns", lambda *args: None)
    monkeypatch.setattr(kineto_trace, "_stream_typed", lambda *args: None)
    dicts = ProblemLog()
    reference = read_trace(path, dicts)
    return any(taken), (_fields(trace), usual.to_json()), (_fields(reference), dicts.to_json())


@pytest.mark.parametrize("name", ["rank.pt.trace.json", "rank.pt.trace.json.gz"])
def test_the_typed_path_gives_the_dict_paths_trace_and_problems(tmp_path, monkeypatch, name):
    taken, typed, reference = _both(tmp_path, json.dumps(RICH).encode(), monkeypatch, name)
    assert taken
    assert typed == reference
    trace = typed[0]
    assert trace["label"] == "3" and trace["world_size"] == 8 and trace["device_memory"] == {0: 42505273344.0}
    names = trace["names"]
    assert [names[i] for i in trace["name"][1]][:4] == ["PyTorch Profiler (0)", "ProfilerStep#1", "gpu step",
                                                         "aten::mm"]
    assert names.index("aten::mm") < names.index("aten::addmm")  # interned in file order
    assert sorted(trace["nbytes"][1]) == [0.0] * 15 + [12.0, 2000.0, 4096.0]  # memset, all-reduce, memcpy
    assert trace["flops"]["flops"][1] == [2 * 64 * 128 * 32, 2 * 64 * 128 * 16, 123456.0]
    assert trace["memory"]["nbytes"][1] == [512.0, -512.0]
    assert -1 in trace["corr"][1] and 9 in trace["corr"][1] and min(trace["tid"][1]) < 0
    assert typed[1]["total"] == 5  # a negative duration, two out of range, two memory rows


def test_operators_on_float64_tensors_are_kept_from_their_input_types(tmp_path, monkeypatch):
    """record_shapes=True writes each operator's ``Input type``: those with a float64 tensor ("double", one or more
    dimensions) are kept as spans, by both paths; a float32 operator, one given a Python number (a 0-dimensional
    double), a kernel and an operator without types are not."""
    doc = {"traceEvents": [_x("aten::conv2d", 100, 50, **{"Input type": ["double", "double", "", "ScalarList"],
                                                         "Input Dims": [[32, 3, 8, 8], [16, 3, 3, 3], [], []]}),
                           _x("aten::add", 160, 5, **{"Input type": ["float", "double", "Scalar"],
                                                      "Input Dims": [[4], [4], []]}),
                           _x("aten::mul", 170, 5, **{"Input type": ["float", "float"], "Input Dims": [[4], [4]]}),
                           # x.mul_(0.9): the Python number is a 0-dimensional double, no float64 work
                           _x("aten::mul_", 175, 3, **{"Input type": ["float", "double"], "Input Dims": [[4], []]}),
                           _x("aten::relu", 180, 5),
                           _x("kernel", 190, 5, cat="kernel", pid=0, tid=7, **{"Input type": ["double"]})]}
    taken, typed, reference = _both(tmp_path, json.dumps(doc).encode(), monkeypatch)
    assert taken and typed == reference
    assert typed[0]["float64"]["time_us"][1] == [100.0, 160.0]
    assert typed[0]["float64"]["end_us"][1] == [150.0, 165.0]


def test_nanosecond_times_relative_to_a_base(tmp_path, monkeypatch):
    doc = {"baseTimeNanoseconds": 1_700_000_000_000_000_000,
           "traceEvents": [_x("a", 2 * 10**17 + 5, 1000), _x("b", 2 * 10**17 + 2000, 3000.5), _mem(2 * 10**17, 8)]}
    taken, typed, reference = _both(tmp_path, json.dumps(doc).encode(), monkeypatch)
    assert taken and typed == reference
    assert typed[0]["time_unit"] == "ns" and typed[0]["dur_us"][1] == [1.0, 3.0005]


def test_a_top_level_array_and_an_empty_one(tmp_path, monkeypatch):
    taken, typed, reference = _both(tmp_path, json.dumps([_x("a", 1, 2), _x("b", 0, 1)]).encode(), monkeypatch)
    assert taken and typed == reference and typed[0]["start_us"][1] == [0.0, 1.0]
    taken, typed, reference = _both(tmp_path, b'{"traceEvents": []}', monkeypatch)
    assert taken and typed == reference and typed[1]["total"] == 1  # no complete events


@pytest.mark.parametrize("text", [
    b'[{"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 1}, {"ph": "E", "pid": 1, "tid": 1, "ts": 4}]',
    b'[{"ph": "X", "name": "a", "ts": "12.5", "dur": 1}]',  # a time as text
    b'[{"ph": "X", "name": "a", "ts": 1}]',  # no duration
    b'[{"ph": "X", "name": "a", "ts": 1, "dur": 1, "args": [1]}]',  # args not an object
    b'[{"ph": "X", "name": "a", "ts": 1, "dur": 1}, 7]',  # an event not an object
    b'[{"ph": "X", "name": "a", "ts": 1, "dur": true}]',
    b'[{"ph": ["X"], "name": "a", "ts": 1, "dur": 1}]',
    b'[{"ph": "X", "name": "a", "ts": NaN, "dur": 1}]',
    b'[{"ph": "X", "name": "a", "ts": 1e400, "dur": 1}]',
    b'[{"ph": "X", "name": "a", "ts": 1, "dur": 1, "x": "\\ud800"}]',  # a lone surrogate in a key not read
    b'[{"ph": "X", "name": "a", "ts": 1, "dur": 1, "x": "\xff"}]',  # not UTF-8 in a key not read
    b'[{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1, "args": {"Input Dims": "\\udc00"}}]',
    b'{"traceEvents": 5}', b'{"other": []}', b'"text"', b'[{"ph": "X", "name": "a", "ts": 1, "dur": 1}',
])
def test_what_the_structs_do_not_fit_is_read_event_by_event(tmp_path, monkeypatch, text):
    taken, typed, reference = _both(tmp_path, text, monkeypatch)
    assert not taken
    assert typed == reference


def test_names_and_categories_that_are_no_strings(tmp_path, monkeypatch):
    text = (b'[{"ph": "X", "name": 5, "cat": 1, "ts": 1, "dur": 1}, {"ph": "X", "name": null, "cat": true, "ts": 2,'
            b' "dur": 1}, {"ph": "X", "name": "5", "cat": "KERNEL", "ts": 3, "dur": 1}]')
    taken, typed, reference = _both(tmp_path, text, monkeypatch)
    assert taken and typed == reference
    assert typed[0]["names"] == ["5", "None"] and typed[0]["cat"][1] == [10, 10, 2]  # other, other, kernel


def test_duplicate_keys_keep_the_last_value_as_the_parsers_do(tmp_path, monkeypatch):
    text = (b'{"traceEvents": [{"ph": "X", "name": "a", "name": "b", "ts": 1, "dur": 2, "dur": 3}],'
            b' "distributedInfo": {"rank": 1}, "distributedInfo": {"rank": 2}}')
    taken, typed, reference = _both(tmp_path, text, monkeypatch)
    assert taken and typed == reference
    assert typed[0]["names"] == ["b"] and typed[0]["dur_us"][1] == [3.0] and typed[0]["rank"] == 2


def _lines(events: list) -> str:
    return ",\n".join("  " + json.dumps(e) for e in events)


_MANY = [_x(f"op{i % 7}", 100 + i, 1 + i % 3, cat=("cpu_op", "kernel")[i % 2], pid=i % 2, tid=1 + i % 2,
            **{"correlation": i, "device": 0, "Input Dims": [[2, 3], [3, 4]]}) for i in range(300)]
_BODY = _lines(_MANY)
_HALF = len(_BODY) // 2
_BIG = _lines([_x(f"op{i}", 100 + i, 1, pad="p" * 3000) for i in range(20)])  # one event a run: cut at each


@pytest.mark.parametrize("doc, runs_take", [
    ('{\n "distributedInfo": {"rank": 3},\n "traceEvents": [\n' + _BODY + '\n ],\n "traceName": "x"\n}\n', True),
    # metadata after the events: an array on one line (newer Kineto's "INFO" log), objects on lines of their own
    ('{"traceEvents": [\n' + _BODY + '\n],\n "INFO": ["a]", "b"], "baseTimeNanoseconds": 5}', True),
    ('{"traceEvents": [\n' + _BODY + '\n],\n "deviceProperties": [\n{"id": 0, "name": "G"},\n{"id": 1}\n]}', True),
    ('{"other": {"traceEvents": [\n  {"ph": "X", "name": "fake", "ts": 1, "dur": 1}\n]},\n "traceEvents": [\n'
     + _BODY + '\n]}', True),  # a "traceEvents" key in the metadata before the document's own
    ('{"a": [], "b": [ ], "traceEvents": [\n' + _BODY + '\n], "c": [  ]}', True),  # the empty arrays put in its place
    ('{"a": "\\"traceEvents\\": [", "traceEvents": [\n' + _BODY + '\n]}', True),
    ('{"traceEvents": [\n' + _lines(_MANY[:20]) + '\n], "traceEvents": [\n' + _BODY + '\n]}', True),  # the last kept
    ('{"traceEvents": [\n' + _BODY[:_HALF] + _BODY[_HALF:].replace(",\n  {", "\n  {", 1) + '\n]}', False),
    ('{"traceEvents": [\n' + _BODY[:_HALF] + _BODY[_HALF:].replace(",\n  {", ",,\n  {", 1) + '\n]}', False),
    ('{"traceEvents": [\n' + _BODY + ',\n]}', False),  # a trailing comma
    ('{"traceEvents": [\n' + _BIG.replace(",\n  {", "\n  {", 1) + '\n]}', False),  # a comma missing between runs
    ('{"traceEvents": [\n' + _BIG + '\n]}', True),
    ('{"traceEvents": [\n' + _BODY + '\n], "x": }', False),
    ('{"traceEvents": [\n' + _BODY + '\n]} {"traceEvents": []}', False),
    ('{"traceEvents": [\n\n  ], "baseTimeNanoseconds": 7}', True),
])
def test_a_document_split_around_its_events_is_the_document_read_whole(tmp_path, monkeypatch, doc, runs_take):
    """A whole file's events array is found without reading it (``kineto_decode.split_document``) and read in runs
    (here of ~2 KB: 40 or so per file) that take it only when it is JSON: a guess that is wrong (an object after the
    events, a "traceEvents" key in the metadata) or a document that is not JSON gives the event-by-event path's
    trace and problems all the same."""
    monkeypatch.setattr(stream, "RUN_BLOCK", 2048)
    taken, typed, reference = _both(tmp_path, doc.encode(), monkeypatch)
    assert typed == reference
    assert taken == runs_take
    if runs_take:  # every event of the document's own array
        assert len(typed[0]["start_us"][1]) == (0 if "[\n\n" in doc else 20 if "ppp" in doc else 300)


def test_split_document_is_frame_document_where_it_is_sure():
    """``split_document`` gives ``frame_document``'s events text and metadata, or None (never another answer)."""
    from reportgen.readers.kineto_decode import frame_document, split_document
    docs = {"plain": '{"distributedInfo": {"rank": 3}, "traceEvents": [\n' + _BODY + '\n], "baseTimeNanoseconds": 5}',
            "nested": '{"other": {"traceEvents": [\n  {"ph": "X"}\n]},\n "traceEvents": [\n' + _BODY + '\n]}',
            "one line": json.dumps({"traceEvents": _MANY})}
    split = {name: split_document(text.encode()) for name, text in docs.items()}
    framed = {name: frame_document(text.encode()) for name, text in docs.items()}
    assert split["plain"] is not None and bytes(split["plain"][0]) == bytes(framed["plain"][0])
    assert split["plain"][1] == framed["plain"][1] == {"distributedInfo": {"rank": 3}, "baseTimeNanoseconds": 5}
    assert split["nested"] is None and framed["nested"] is not None  # unsure: frame_document decides
    assert split["one line"] is None and len(bytes(framed["one line"][0])) > 10_000  # no line that starts an event


@pytest.mark.parametrize("depth", [1100, 5000])
def test_an_event_nested_past_the_decoders_depth_is_skipped_not_raised(tmp_path, monkeypatch, depth):
    """msgspec raises RecursionError (no MsgspecError) past its nesting limit: every typed path gives the text up
    (it read whole files with a traceback before) and the parsers' salvage skips the one event, whole as streamed."""
    deep = '  {"ph": "X", "name": "deep", "ts": 1, "dur": 1, "args": {"z": ' + "[" * depth + "]" * depth + "}}"
    text = ('{"traceEvents": [\n' + _lines(_MANY[:50]) + ",\n" + deep + ",\n" + _lines(_MANY[50:100]) + "\n]}").encode()
    path = tmp_path / "rank0.pt.trace.json"
    path.write_bytes(text)
    whole = ProblemLog()
    trace = read_trace(path, whole)
    monkeypatch.setenv("REPORTGEN_STREAM_TRACE_MB", "0")
    streamed = ProblemLog()
    assert _fields(read_trace(path, streamed)) == _fields(trace)
    assert whole.to_json() == streamed.to_json()
    assert len(trace.start_us) == 100 and not trace.complete
    assert whole.to_json()["by_reason"] == {"corrupt JSON event (skipped)": 1}
