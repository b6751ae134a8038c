"""The framework reader's column-wise path (``FrameworkReader._read_simple``) against its event-by-event
path (``_general``, the reference): the same columns for the shapes the column-wise path takes in one go
(metadata before and among the first events, no thread ids, arguments absent or all ints), and nothing
taken by it when an event needs the general path (a negative duration, a NaN one)."""

from __future__ import annotations

import numpy as np
import pytest

from reportgen.problems import ProblemLog
from reportgen.readers.framework import COLUMNS, FrameworkReader, _TraceState

BASE = 1_700_000_000_000_000


def _meta(pid, name):
    return {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}


def _x(name, pid, ts, dur, **kw):
    return {"name": name, "ph": "X", "pid": pid, "ts": ts, "dur": dur, **kw}


def _columns(reader: FrameworkReader) -> dict:
    reader.out.flush()
    cols = {c: np.concatenate(reader.out.chunks[c]) for c in COLUMNS}
    strings = {c: list(d) for c, d in reader.out.dicts.items()}
    return {c: (cols[c].tobytes(), cols[c].dtype.str) for c in COLUMNS}, strings


def _both(events):
    simple, general = FrameworkReader(None, ProblemLog()), FrameworkReader(None, ProblemLog())
    took = simple._read_simple(events, 0, "algo-1", "PythontimelineMetrics")
    general._general(events, 0, _TraceState(0), "f.json", "algo-1", "PythontimelineMetrics", False)
    return took, simple, general


SHAPES = {
    # smdebug's layout: the base time, then each pid's name just before its first event
    "metadata among the first events": [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": BASE}},
        _meta(1, "Step:ModeKeys.TRAIN"), _x("Step:ModeKeys.TRAIN", 1, 10, 900, args={"step_num": "0"}),
        _meta(2, "cpu_functions"), _x("conv", 2, 20, 300, args={"pid": 27}),
        _x("relu", 2, 25.5, 50.5, args={"pid": 27}), {"name": "mark", "ph": "i", "pid": 2, "ts": 40},
        _x("conv", 2, 1020, 300, args={"pid": 27, "step_num": 1})],
    "no metadata, thread ids": [_x("a", 1, 5, 10, tid=7), _x("b", 1, 6, 1, tid=8)],
    "some thread ids": [_x("a", 1, 5, 10, tid=7), _x("b", 1, 6, 1)],
    "dataloader arguments": [_x("init", 4, 1, 2, args={"num_workers": 4, "pin_memory": True}),
                             _x("fetch", 4, 5, 100, args={"pid": 61, "pin_memory": "false"})],
    "a float pid in the arguments": [_x("fetch", 4, 5, 100, args={"pid": 61.7}), _x("f", 4, 6, 1, args={})],
    # the phase column is coded from the pids' codes when every pid is an int (_PhaseOfPid)
    "pids sharing a phase, one undeclared": [
        _meta(3, "gpu_functions"), _meta(1, "cpu_functions"), _meta(2, "cpu_functions"),
        _x("a", 2, 1, 1), _x("b", 9, 2, 1), _x("c", 1, 3, 1), _x("d", 3, 4, 1), _x("e", 2, 5, 1)],
    "a string pid": [_meta(1, "cpu_functions"), _x("a", "1", 1, 1), _x("b", 1, 2, 1)],
    "a pid beyond int64": [_meta(2**70, "cpu_functions"), _x("a", 2**70, 1, 1), _x("b", 1, 2, 1)],
}


def test_the_phase_column_follows_the_pids_in_order_of_first_appearance():
    took, simple, _ = _both(SHAPES["pids sharing a phase, one undeclared"])
    simple.out.flush()
    phases = list(simple.out.dicts["phase"])
    codes = np.concatenate(simple.out.chunks["phase"]).tolist()
    assert took and phases == ["cpu_functions", "Unknown", "gpu_functions"]
    assert [phases[c] for c in codes] == ["cpu_functions", "Unknown", "cpu_functions", "gpu_functions",
                                          "cpu_functions"]


@pytest.mark.parametrize("name", SHAPES)
def test_column_wise_path_gives_the_event_by_event_columns(name):
    took, simple, general = _both(SHAPES[name])
    assert took
    got, want = _columns(simple), _columns(general)
    assert got == want
    assert len(np.concatenate(simple.out.chunks["start_us"])) == sum(e["ph"] != "M" for e in SHAPES[name])


def test_column_wise_path_without_thread_ids_writes_minus_one():
    took, simple, _ = _both(SHAPES["metadata among the first events"])
    simple.out.flush()
    assert took and np.concatenate(simple.out.chunks["tid"]).tolist() == [-1] * 5
    starts = np.concatenate(simple.out.chunks["start_us"]).tolist()
    assert starts == [BASE + 10, BASE + 20, BASE + 26, BASE + 40, BASE + 1020]  # 25.5 rounds half to even


@pytest.mark.parametrize("bad_dur", [-1, float("nan")], ids=["negative", "nan"])
def test_an_event_the_general_path_must_report_leaves_the_column_wise_path(bad_dur):
    events = [_x("a", 1, 5, 10), _x("b", 1, 6, bad_dur), _x("c", 1, 7, 3)]
    reader = FrameworkReader(None, ProblemLog())
    assert reader._read_simple(events, 0, "algo-1", "PythontimelineMetrics") is False
    assert reader.out.cols["start_us"] == []  # nothing appended
