"""Issue 3 (engine speed): the fast paths must give exactly what the general paths give.

- ``_encode_placed`` (a column encoded straight from its series) = ``_encode_block`` on the full column;
- the series-by-series tick table (``_by_series``) = the record-by-record one (``_by_record``), also
  when DuckDB hands a series' records back out of order;
- the framework traces, read in a thread beside the system metrics, keep their problems after the
  system ones;
- importing the engine does not import pandas (it is imported while DuckDB parses).
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reportgen.engine import load_data
from reportgen.engine import system_reader as sr
from reportgen.engine.problems import ProblemLog
from reportgen.engine.system_reader import read_system

from .test_readers import HEAD, T, instant, rec, write_sys, write_trace

REPO = Path(__file__).resolve().parents[2]


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
    want = sr._encode_block(_column(v, tick, n)[:, None])[0]
    got = sr._encode_placed(v, tick, n)
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
        want = sr._encode_block(_column(v, tick, n)[:, None])[0]
        got = sr._encode_placed(v, tick, n)
        assert (got[1], got[0].dtype, got[0].tobytes()) == (want[1], want[0].dtype, want[0].tobytes()), k


def _tables(root, monkeypatch=None, force_records=False):
    if force_records:
        monkeypatch.setattr(sr, "_by_series", lambda *a, **k: None)
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
    real = sr._by_series
    monkeypatch.setattr(sr, "_by_series", lambda *a: calls.append(1) or real(*a))
    read_system(tmp_path, ProblemLog())
    assert len(calls) == 3


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


def test_engine_import_leaves_pandas_for_later():
    code = "import sys, reportgen.engine; print('pandas' in sys.modules, 'duckdb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_rules_in_threads_equal_rules_one_by_one():
    from reportgen.engine import run_rules

    data, _ = load_data(REPO / "sample_data")
    one = run_rules(data, threads=1)
    two = run_rules(data, threads=2)
    assert list(two) == list(one) and json.dumps(two) == json.dumps(one)
    assert any(doc["RuleTriggered"] for doc in one.values())  # something to compare: rules fire here
