"""The framework reader's typed decoding (``readers.framework_decode``: msgspec structs) against orjson's
dicts: the same columns for every shape the column-wise path takes, and every text it must not take left
to the usual path (then the same columns and the same problems as without it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from reportgen.problems import ProblemLog
from reportgen.readers import framework, framework_decode
from reportgen.readers.framework import FrameworkReader, read_framework
from tests.unit.readers.test_framework_columns import SHAPES, _columns, _x

SAMPLE = Path(__file__).resolve().parents[3] / "sample_data"


def _typed_and_dicts(events):
    raw = json.dumps(events).encode()
    typed, dicts = FrameworkReader(None, ProblemLog()), FrameworkReader(None, ProblemLog())
    took = typed._read_typed(raw, base=0, node="algo-1", ftype="PythontimelineMetrics")
    dict_took = dicts._read_simple(json.loads(raw), 0, "algo-1", "PythontimelineMetrics")
    return took, dict_took, typed, dicts


@pytest.mark.parametrize("name", SHAPES)
def test_structs_give_the_columns_of_the_dicts(name):
    took, dict_took, typed, dicts = _typed_and_dicts(SHAPES[name])
    assert dict_took
    assert took == len(SHAPES[name])  # every event of the text, metadata included
    assert _columns(typed) == _columns(dicts)


def test_absent_and_null_keys_read_as_in_the_dicts():
    events = [
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": None}},  # a null name: the phase "None"
        {"name": "process_name", "ph": "M", "pid": 2, "args": {"sort_index": 2}},  # no name: pid 2 undeclared
        _x("a", 1, 5, 10, args=None), {"name": "b", "ph": "X", "pid": 2, "ts": 6},  # no dur: 0
        {"ph": "i", "pid": 1, "ts": 7, "dur": 99, "tid": 3},  # no name; an instant's dur is 0
        _x(7, 1, 8, 1, args={"step_num": 12, "num_workers": 2.5, "pin_memory": "True", "other": [1, {"x": 2}]}),
    ]
    took, dict_took, typed, dicts = _typed_and_dicts(events)
    assert took == len(events) and dict_took
    assert _columns(typed) == _columns(dicts)
    typed.out.flush()
    assert list(typed.out.dicts["phase"]) == ["None", "Unknown"]
    assert np.concatenate(typed.out.chunks["dur_us"]).tolist() == [10, 0, 0, 1]
    assert np.concatenate(typed.out.chunks["pin_memory"]).tolist() == [-1, -1, -1, 1]


@pytest.mark.parametrize("raw", [
    b'[{"name": "a", "ph": "X", "pid": 1, "ts": 5, "dur": 1, "args": 5}]',  # args not an object
    b'[{"name": "a", "ph": "X", "pid": 1, "ts": 5, "dur": 1}, 7]',  # an event not an object
    b'{"traceEvents": [{"name": "a", "ph": "X", "pid": 1, "ts": 5, "dur": 1}]}',  # not an array
    b'[{"name": "a", "ph": "X", "pid": 1, "ts": NaN, "dur": 1}]',  # not JSON (the stdlib parser takes it)
    b'[{"name": "a", "ph": "X", "pid": 1, "ts": 5, "dur": 1, "cat": "\xff"}]',  # not UTF-8 in a key not read
    b'[{"name": "a\\ud800", "ph": "X", "pid": 1, "ts": 5, "dur": 1}]',  # a lone surrogate
    b'\xef\xbb\xbf[{"name": "a", "ph": "X", "pid": 1, "ts": 5, "dur": 1}]',  # a byte-order mark
    b'[{"name": "a", "ph": "X", "pid": 1, "ts": 5, "dur": -1}]',  # decodes, but the general path reports it
    b'[{"name": "a", "ph": "B", "pid": 1, "ts": 5}]',  # a B event: the general path pairs it
    b'[{"name": "a", "ph": "X", "pid": 1, "ts": 5, "dur": 1, "x": ' + b"[" * 3000 + b"]" * 3000 + b"}]",  # too deep
], ids=["args", "event", "object", "nan", "utf8", "surrogate", "bom", "negative", "begin", "deep"])
def test_a_text_the_structs_do_not_fit_is_left_to_the_usual_path(raw):
    reader = FrameworkReader(None, ProblemLog())
    assert reader._read_typed(raw, base=0, node="algo-1", ftype="PythontimelineMetrics") is None
    assert reader.out.cols["start_us"] == []  # nothing appended


def _profile_with(tmp_path: Path, text: bytes) -> Path:
    """The sample profile's traces and one more file holding ``text``."""
    root = tmp_path / "p"
    shutil.copytree(SAMPLE / "framework", root / "framework")
    (root / "framework/pevents/2023111422/1700000999000000_27-algo-2_pythontimeline.json").write_bytes(text)
    return root


@pytest.mark.parametrize("extra, noted, names", [
    (b'[{"name": "a", "ph": "X", "pid": 1, "ts": 5, "dur": 1, "cat": "\xff"}]', "non-UTF-8 bytes (replaced)", {"a"}),
    (b'[{"name": "a", "ph": "X", "pid": 1, "ts": 5, "dur": 1, "args": "x"}, {"name": "b", "ph": "X", "pid": 1, '
     b'"ts": 9}]', None, {"a", "b"}),  # args that are not an object read as none, in both
    (b'[{"name": "a", "ph": "X", "pid": 1, "ts": 5, "dur": 1}, {"name": "b", "ph": "X", "pid": 1, "ts": 9', "truncated or corrupt JSON array",
     {"a"}),
    # nested past msgspec's depth limit (its RecursionError once escaped the reader): the usual path's note
    (b'[{"name": "a", "ph": "X", "pid": 1, "ts": 5, "dur": 1, "args": {"pid": ' + b"[" * 3000 + b"]" * 3000 + b"}}]",
     "truncated or corrupt JSON array", set()),
], ids=["not-utf8", "args-string", "cut", "deep"])
def test_a_profile_reads_the_same_with_and_without_the_structs(tmp_path, monkeypatch, extra, noted, names):
    root = _profile_with(tmp_path, extra)
    problems = ProblemLog()
    table = read_framework(root, problems)
    monkeypatch.setattr(framework, "decode_events", lambda raw: None)  # every file through orjson's dicts
    problems_dicts = ProblemLog()
    table_dicts = read_framework(root, problems_dicts)
    assert len(table) > 1000 and table.equals(table_dicts)
    assert problems.to_json() == problems_dicts.to_json()
    reasons = " ".join(problems.to_json()["by_reason"])
    assert (noted in reasons) if noted else reasons == ""
    assert set(table["name"]) & {"a", "b"} == names  # the extra file's events (the sample has neither name)


def test_the_sample_profile_takes_the_structs(monkeypatch):
    taken = []
    decode = framework_decode.decode_events
    monkeypatch.setattr(framework, "decode_events", lambda raw: taken.append(decode(raw) is not None) or decode(raw))
    read_framework(SAMPLE, ProblemLog())
    assert len(taken) == 26 and all(taken)


def test_integers_of_400_digits_read_as_the_stdlib_parser_reads_them():
    """msgspec keeps big integers exact, as the stdlib parser (which orjson leaves such files to) does."""
    big = int("9" * 400)
    events = [_x(big, big, 5, 1, tid=big, args={"pid": big, "step_num": big, "num_workers": big, "pin_memory": big}),
              _x("b", 1, 6, 1)]
    took, dict_took, typed, dicts = _typed_and_dicts(events)
    assert took == 2 and dict_took
    assert _columns(typed) == _columns(dicts)
    typed.out.flush()
    assert list(typed.out.dicts["name"]) == ["9" * 400, "b"]


def test_struct_columns_are_each_field_s_values_in_event_order():
    """``struct_columns`` (the structs' tuples transposed) gives, per field, what one ``attrgetter`` pass gives:
    absent keys as their defaults, nulls as None, every event in order; no events, an empty list per field."""
    raw = json.dumps([
        {"name": "a", "ph": "X", "pid": 1, "tid": 2, "ts": 5, "dur": 3, "args": {"step_num": "7", "pid": 9}},
        {"name": "b", "ph": "i", "ts": 6.5},
        {"ph": "X", "pid": None, "ts": 10**30, "dur": 1, "args": {"num_workers": 4, "pin_memory": True}},
    ]).encode()
    events = framework_decode.decode_events(raw)
    cols = framework_decode.struct_columns(events, framework_decode.EVENT_FIELDS)
    assert list(cols) == list(framework_decode.EVENT_FIELDS)
    for field in framework_decode.EVENT_FIELDS:
        assert cols[field] == framework_decode.column(events, field, True)
    assert cols["name"] == ["a", "b", None] and cols["dur"] == [3, 0, 1] and cols["ts"] == [5, 6.5, 10**30]
    args = [a if a is not None else framework_decode.NO_ARGS for a in cols["args"]]
    acols = framework_decode.struct_columns(args, framework_decode.ARGS_FIELDS)
    assert acols["step_num"] == ["7", None, None] and acols["pid"] == [9, None, None]
    assert acols["num_workers"] == [None, None, 4] and acols["pin_memory"] == [None, None, True]
    assert framework_decode.struct_columns([], framework_decode.EVENT_FIELDS) == {f: [] for f in framework_decode.EVENT_FIELDS}
