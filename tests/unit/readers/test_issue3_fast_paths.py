"""Issue 3 (engine speed): the fast paths must give exactly what the general paths give.

- ``encode_placed`` (a column encoded straight from its series) = ``encode_block`` on the full column;
- the series-by-series tick table (``_by_series``) = the record-by-record one (``_by_record``), also
  when DuckDB hands a series' records back out of order;
- the framework traces, read in a thread beside the system metrics, keep their problems after the
  system ones;
- importing the engine does not import pandas (it is imported while DuckDB parses);
- the per-node rows in file order: grouped by a reshape when the series repeat with a fixed period,
  by hashing otherwise (real smdebug files list the series in a new order at every instant), with
  the same result either way, over any number of query slices, and with series that start late.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from reportgen.engine import load_data
from reportgen.readers import system as sr
from reportgen.readers import tick_build, tick_table
from reportgen.problems import ProblemLog
from reportgen.readers.system import read_system

from .test_readers import HEAD, T, instant, rec, write_sys, write_trace
from tests.support.paths import ROOT

REPO = ROOT


def _column(v, tick, n):
    col = np.full(n, np.nan)
    col[tick] = v
    return col


COLUMNS = {
    "two decimals": np.array([0.0, 12.34, 99.99, 100.0, 50.5]),
    "integers beyond int16 at scale 100": np.array([0.0, 400.0, 70000.0, 12.0, 3.0]),
    "integers beyond int32 at scale 100": np.array([1e8, 2.5e7, 3.0, 0.0, 7.0]),
    "three decimals, float32-exact": np.array([0.125, 0.375, 1.5, 2.0, 3.25]) + 0.0,
    "float64 only": np.array([0.1234567, 1 / 3, 2 / 7, 5.0, 6.0]),
    "negative zero": np.array([-0.0, 1.0, 2.0, 3.0, 4.0]),
    "huge": np.array([1e300, 2e300, 3.0, 4.0, 5.0]),
    "beyond int32 even at scale 1": np.array([3e9, 1.0, 2.0, 3.0, 4.0]),
}


@pytest.mark.parametrize("name", sorted(COLUMNS))
@pytest.mark.parametrize("gaps", [False, True])
def test_encode_placed_equals_encode_block(name, gaps):
    v = COLUMNS[name]
    n = 9 if gaps else len(v)
    tick = np.array([0, 2, 3, 6, 8]) if gaps else np.arange(len(v))
    want = tick_table.encode_block(_column(v, tick, n)[:, None])[0]
    got = tick_table.encode_placed(v, tick, n)
    assert got[1] == want[1]
    assert got[0].dtype == want[0].dtype
    assert got[0].tobytes() == want[0].tobytes()


def test_encode_placed_equals_encode_block_random():
    rng = np.random.default_rng(3)
    for k in range(300):
        n = int(rng.integers(1, 60))
        m = int(rng.integers(1, n + 1))
        tick = np.sort(rng.choice(n, m, replace=False))
        decimals = int(rng.integers(0, 5))
        scale = 10.0 ** int(rng.integers(0, 9))
        v = np.round(rng.random(m) * scale, decimals)
        want = tick_table.encode_block(_column(v, tick, n)[:, None])[0]
        got = tick_table.encode_placed(v, tick, n)
        assert (got[1], got[0].dtype, got[0].tobytes()) == (want[1], want[0].dtype, want[0].tobytes()), k


def _tables(root, monkeypatch=None, force_records=False):
    if force_records:
        monkeypatch.setattr(tick_build, "_by_series", lambda *a, **k: None)
    pl = ProblemLog()
    nodes = read_system(root, pl).nodes
    return {n: (t.tick_ts.tobytes(), t.columns, t.interval_s, t.first_ts, t.last_ts,
                [(a.dtype.str, a.tobytes(), s) for a, s in t._store]) for n, t in nodes.items()}, pl.to_json()


def _profile(root: Path, shuffle: bool):
    rng = np.random.default_rng(7)
    for node in ("algo-1", "algo-2", "algo-3"):
        for minute in range(3):
            t0 = T + 60 * minute
            lines = [l for k in range(40) for l in instant(t0 + 0.5 * k, cpu=float(k % 7) * 10 + 0.25, gpu=k * 0.5,
                                                            node=node)]
            lines += [rec("gpu", "gpu1", "GPUMemoryUtilization", 33.0, t0 + 0.5 * k + 0.02, node) for k in range(0, 40, 3)]
            if shuffle:
                rng.shuffle(lines)
            write_sys(root, t0, lines, node=node)


@pytest.mark.parametrize("shuffle", [False, True])
def test_series_placement_equals_record_placement(tmp_path, monkeypatch, shuffle):
    _profile(tmp_path, shuffle)
    fast, fast_dq = _tables(tmp_path)
    slow, slow_dq = _tables(tmp_path, monkeypatch, force_records=True)
    assert sorted(fast) == ["algo-1", "algo-2", "algo-3"]
    assert fast == slow and fast_dq == slow_dq
    ns = read_system(tmp_path, ProblemLog()).nodes["algo-2"]
    assert ns.values.shape == (120, 7)
    gpu1 = ns.columns.index("gpu1/GPUMemoryUtilization")
    assert int(np.isfinite(ns.values[:, gpu1]).sum()) == 3 * 14  # every third tick of each minute


def test_series_path_is_taken_for_regular_nodes(tmp_path, monkeypatch):
    _profile(tmp_path, shuffle=True)
    calls = []
    real = tick_build._by_series
    monkeypatch.setattr(tick_build, "_by_series", lambda *a: calls.append(1) or real(*a))
    read_system(tmp_path, ProblemLog())
    assert len(calls) == 3


@pytest.mark.parametrize("h, want", [
    ([5, 6, 7, 5, 6, 7], 3),
    ([5, 6, 7], 3),  # one instant: every series once
    ([9], 1),
    ([9, 9, 9], 1),
    ([5, 6, 7, 5, 6], 0),  # a partial last instant
    ([5, 6, 7, 5, 7, 6], 0),  # another order
    ([5, 6, 5, 7, 5, 6, 5, 7], 0),  # a series twice in one period
    ([], 0),
])
def test_period_of_row_hashes(h, want):
    assert sr._period(np.array(h, dtype=np.uint64)) == want


def _grouped_dict(res):
    uniq, ts_l, v_l = res
    if isinstance(ts_l, np.ndarray):  # the periodic case: (instants x series) matrices
        ts_l, v_l = ts_l.T, v_l.T
    return {int(h): (t.tolist(), v.tolist()) for h, t, v in zip(uniq, ts_l, v_l)}


def test_group_rows_reshape_equals_hashing(monkeypatch):
    rng = np.random.default_rng(11)
    series = rng.integers(0, 2**63, 37, dtype=np.uint64)
    h = np.tile(series, 50)
    ts = np.arange(len(h), dtype=np.float64) * 0.01
    v = rng.random(len(h))
    by_reshape = sr._group_rows(h, ts, v)
    assert sr._period(h) == 37 and [int(x) for x in by_reshape[0]] == series.tolist()
    monkeypatch.setattr(sr, "_period", lambda h: 0)
    by_hashing = sr._group_rows(h, ts, v)
    assert _grouped_dict(by_hashing) == _grouped_dict(by_reshape)
    first = _grouped_dict(by_reshape)[int(series[0])]
    assert first[0] == ts[::37].tolist() and first[1] == v[::37].tolist()


def test_group_rows_refuses_null_numbers():
    h = np.array([1, 2], dtype=np.uint64)
    v = np.ma.masked_array([1.0, 2.0], mask=[False, True])
    assert sr._group_rows(h, np.array([1.0, 2.0]), v) is None


@pytest.mark.parametrize("slice_bytes", [1, 10**9])
def test_rows_path_over_slices_equals_record_placement(tmp_path, monkeypatch, slice_bytes):
    """Per-instant shuffled lines (the real layout) read as one query or one query per file."""
    _profile(tmp_path, shuffle=True)
    monkeypatch.setattr(sr, "GROUPED_QUERY_BYTES", slice_bytes)
    fast, fast_dq = _tables(tmp_path)
    slow, slow_dq = _tables(tmp_path, monkeypatch, force_records=True)
    assert fast == slow and fast_dq == slow_dq


def test_series_that_starts_in_a_later_file_is_kept_on_the_fast_path(tmp_path, monkeypatch):
    for minute in range(3):
        t0 = T + 60 * minute
        lines = [l for k in range(10) for l in instant(t0 + 0.5 * k)]
        if minute == 2:  # a second GPU shows up in the last file only
            lines += [rec("gpu", "gpu1", "GPUUtilization", 40.0 + k, t0 + 0.5 * k + 0.012) for k in range(10)]
        write_sys(tmp_path, t0, lines)
    batches = []
    monkeypatch.setattr(sr.SystemReader, "_read_batches", lambda self, files: batches.append(files))
    pl = ProblemLog()
    ns = read_system(tmp_path, pl).nodes["algo-1"]
    assert batches == [] and pl.to_json()["total"] == 0
    assert ns.values.shape == (30, 7)
    gpu1 = ns.values[:, ns.columns.index("gpu1/GPUUtilization")]
    assert np.isnan(gpu1[:20]).all() and gpu1[20:].tolist() == [40.0 + k for k in range(10)]


def test_null_value_sends_the_node_to_the_batch_path(tmp_path):
    lines = [l for k in range(4) for l in instant(T + 0.5 * k)]
    lines[8] = lines[8].replace('"Value": 25.0', '"Value": null')  # cpu1 of the second instant
    assert '"Value": null' in lines[8]
    write_sys(tmp_path, T, lines)
    pl = ProblemLog()
    ns = read_system(tmp_path, pl).nodes["algo-1"]
    assert [(p.line, p.reason) for p in pl.items] == [(9, "missing or non-numeric Value/Timestamp")]
    cpu1 = ns.values[:, ns.columns.index("cpu1/CPUUtilization")]
    assert cpu1[0] == 25.0 and np.isnan(cpu1[1]) and cpu1[2:].tolist() == [25.0, 25.0]


def test_catalog_refuses_two_identities_with_one_hash():
    rows = [(7, "algo-1", "cpu", "cpu0", "CPUUtilization", True), (7, "algo-1", "cpu", "cpu1", "CPUUtilization", True),
            (8, "algo-1", "memory", "MemoryUsedPercent", "", True)]
    assert sr._catalog_of(rows, [7, 8]) is None
    assert sr._catalog_of(rows, [8]) == {8: ("algo-1", "memory", "MemoryUsedPercent", "")}


def test_catalog_refuses_a_series_with_fields_of_the_wrong_json_type():
    rows = [(7, "algo-1", "cpu", "cpu0", "CPUUtilization", True), (8, "12", "memory", "MemoryUsedPercent", "", False)]
    assert sr._catalog_of(rows, [7, 8]) is None
    assert sr._catalog_of(rows, [7]) == {7: ("algo-1", "cpu", "cpu0", "CPUUtilization")}


def test_feed_stops_cleanly_when_the_reader_fails(tmp_path, monkeypatch):
    """An exception while a node is taken (here: its records turn up after its table was built)
    stops the DuckDB feed threads, and the restart reads everything again with the same result."""
    _profile(tmp_path, shuffle=False)
    # a record of algo-1 in algo-3's file: algo-1's table is built by then, so the read restarts
    write_sys(tmp_path, T + 60 * 5, [rec("cpu", "cpu0", "CPUUtilization", 1.0, T + 60 * 5, "algo-1")], node="algo-3")
    import threading

    readers = []
    real_init = sr.SystemReader.__init__
    monkeypatch.setattr(sr.SystemReader, "__init__", lambda self, *a, **k: readers.append(k) or real_init(self, *a, **k))
    data = read_system(tmp_path, ProblemLog())
    assert [k["streaming"] for k in readers] == [True, False]  # the first read gave up, the second did it
    assert not [t for t in threading.enumerate() if t.name.startswith("reportgen-duckdb")]  # every feed thread
    assert sorted(data.nodes) == ["algo-1", "algo-2", "algo-3"]
    assert data.nodes["algo-1"].values.shape[0] == 121  # the stray record is an extra tick of algo-1


def test_trace_problems_follow_system_problems(tmp_path):
    lines = [l for k in range(3) for l in instant(T + 0.5 * k)]
    lines[4] = "{not json"
    write_sys(tmp_path, T, lines)
    ev = {"name": "op", "ph": "X", "pid": 1, "ts": 10, "dur": 5, "args": {}}
    write_trace(tmp_path, "1700000040000000_27-algo-1_pythontimeline.json", None,
                raw=json.dumps(HEAD + [ev]).replace('"ph": "X"', '"ph": "Q"', 1))
    _, problems = load_data(tmp_path)
    reasons = [p.reason for p in problems.items]
    assert reasons == ["malformed JSON line", "unknown event phase 'Q'"]



def test_rules_in_threads_equal_rules_one_by_one():
    from reportgen.engine import run_rules

    data, _ = load_data(REPO / "sample_data")
    one = run_rules(data, threads=1)
    two = run_rules(data, threads=2)
    assert list(two) == list(one) and json.dumps(two) == json.dumps(one)
    assert any(doc["RuleTriggered"] for doc in one.values())  # something to compare: rules fire here


def test_encode_columns_of_a_wide_matrix_equal_each_column_alone():
    """``encode_columns`` encodes a wide matrix by blocks of 32 columns (strided views of it): each column's
    encoding is the one it gets alone, negative zero and gaps included."""
    cols = [_column(COLUMNS[name], np.array([0, 2, 3, 6, 8]), 9) for name in sorted(COLUMNS)]
    cols += [COLUMNS[name][[0, 1, 2, 3, 4, 0, 1, 2, 3]] for name in sorted(COLUMNS)]
    wide = np.stack(cols * 5, axis=1)  # 80 columns: three blocks, two of them strided views
    got = tick_table.encode_columns(wide)
    assert len(got) == wide.shape[1]
    for j, (arr, scale) in enumerate(got):
        want, want_scale = tick_table.encode_block(np.ascontiguousarray(wide[:, j : j + 1]))[0]
        assert (scale, arr.dtype, arr.tobytes()) == (want_scale, want.dtype, want.tobytes()), j
    assert got[sorted(COLUMNS).index("negative zero")][1] == 0.0  # -0.0 keeps its sign: a float column, no codes
