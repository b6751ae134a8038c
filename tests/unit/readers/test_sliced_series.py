"""Issue 32 (memory bounded by nodes x series): a node's records held slice by slice in a compact
encoding (``tick_build.SlicedSeries``) give the tick table the joined records give, bit for bit:
the same ticks, the same column encodings, whatever each slice chose; series out of order across
slices, or twice in a tick, go to the joined records' placement; the reader keeps 2-byte values, not
16 bytes a record."""

import numpy as np
import pytest

from reportgen.problems import ProblemLog
from reportgen.readers import system as sr
from reportgen.readers import tick_build
from reportgen.readers.system import read_system
from reportgen.readers.tick_build import SeriesChunk, SlicedSeries, build_table

from .test_readers import T, instant, rec, write_sys

KEYS = [("n", "cpu", f"cpu{i}", "CPUUtilization") for i in range(4)] + [("n", "gpu", "gpu0", "GPUUtilization")]


def _table_bytes(table):
    return (table.tick_ts.tobytes(), table.columns, table.interval_s, table.first_ts, table.last_ts,
            [(a.dtype.str, a.tobytes(), s) for a, s in table._store])


def _both(slices, sids):
    """The table of ``slices`` (each: hashes, ts list, values list) held sliced, and joined as before."""
    sliced = SlicedSeries()
    for h, ts_l, v_l in slices:
        sliced.add(np.array(h, dtype=np.uint64), ts_l, v_l)
    sliced.sids = np.array(sids, dtype=np.int32)
    joined = sliced.joined()
    # the joined records are exactly the slices' own, series by series
    for j, hh in enumerate(sliced.hashes):
        want_t = np.concatenate([t for h, ts_l, _ in slices for x, t in zip(h, ts_l) if x == hh])
        want_v = np.concatenate([v for h, _, v_l in slices for x, v in zip(h, v_l) if x == hh])
        assert joined.ts[j].tobytes() == want_t.tobytes() and joined.vals[j].tobytes() == want_v.tobytes()
    p1, p2 = ProblemLog(), ProblemLog()
    got = build_table("n", [sliced], KEYS, p1)
    want = build_table("n", [SeriesChunk(joined.sids, joined.ts, joined.vals)], KEYS, p2)
    return _table_bytes(got), _table_bytes(want), p1.to_json(), p2.to_json()


def _instants(t0, n, offsets=(0.0, 0.001, 0.002, 0.003, 0.004)):
    return [t0 + 0.5 * np.arange(n) + o for o in offsets]


VALUE_KINDS = {
    "two decimals": lambda rng, n: np.round(rng.random(n) * 100, 2),
    "integers beyond int16 at scale 100": lambda rng, n: np.round(rng.random(n) * 60000),
    "float32-exact": lambda rng, n: np.round(rng.random(n) * 8) / 8 + 0.125,
    "float64 only": lambda rng, n: rng.random(n) / 3,
    "negative zero": lambda rng, n: np.where(np.arange(n) == 1, -0.0, 5.0),
    "beyond int32": lambda rng, n: 3e9 + np.arange(n, dtype=np.float64),
}


@pytest.mark.parametrize("first", sorted(VALUE_KINDS))
@pytest.mark.parametrize("second", sorted(VALUE_KINDS))
def test_slices_of_any_encoding_give_the_joined_table(first, second):
    rng = np.random.default_rng(5)
    slices = []
    for k, kind in enumerate((first, second, first)):
        ts = _instants(T + 30.0 * k, 60)
        vals = [VALUE_KINDS[kind](rng, 60) if j == 2 else np.round(rng.random(60) * 100, 1) for j in range(5)]
        slices.append(([10, 11, 12, 13, 14], ts, vals))
    got, want, dq1, dq2 = _both(slices, [0, 1, 2, 3, 4])
    assert got == want and dq1 == dq2
    assert len(got[0]) == 180 * 8 and len(got[5]) == 5


def test_shared_timestamps_are_kept_once_per_slice():
    ts = T + 0.5 * np.arange(100)
    sliced = SlicedSeries()
    sliced.add(np.array([1, 2, 3], dtype=np.uint64), [ts, ts.copy(), ts + 0.002], [np.ones(100)] * 3)
    times, pos, rep, values = sliced.slices[0]
    assert len(times) == 2 and rep == [0, 0, 1] and pos == [0, 1, 2]
    assert [(a.dtype, a.nbytes, s) for a, s in values] == [(np.dtype(np.int16), 200, 100.0)] * 3


def test_series_missing_from_a_slice_and_late_series():
    rng = np.random.default_rng(9)
    a = ([1, 2], _instants(T, 40)[:2], [np.round(rng.random(40) * 90, 2) for _ in range(2)])
    b = ([2, 3], _instants(T + 20, 40)[1:3], [np.round(rng.random(40) * 90, 2) for _ in range(2)])
    c = ([3, 1, 2], _instants(T + 40, 40)[2:5], [np.round(rng.random(40) * 90, 2) for _ in range(3)])
    got, want, _, _ = _both([a, b, c], [0, 4, 2])
    assert got == want
    assert got[1] == ["cpu0/CPUUtilization", "cpu2/CPUUtilization", "gpu0/GPUUtilization"]


@pytest.mark.parametrize("case", ["slices out of order", "unsorted inside a slice", "two samples in a tick",
                                  "overlapping slices"])
def test_disorder_goes_to_the_joined_placement(case, monkeypatch):
    rng = np.random.default_rng(2)
    t1, t2 = T + 0.5 * np.arange(30), T + 15 + 0.5 * np.arange(30)
    if case == "slices out of order":
        t1, t2 = t2, t1
    elif case == "unsorted inside a slice":
        t1 = t1[::-1].copy()
    elif case == "two samples in a tick":
        t2 = t2.copy()
        t2[5] = t2[4] + 0.001
    else:
        t2 = t2 - 1.0
    slices = [([1, 2], [t1, t1 + 0.003], [np.round(rng.random(30) * 50, 2) for _ in range(2)]),
              ([1, 2], [t2, t2 + 0.003], [np.round(rng.random(30) * 50, 2) for _ in range(2)])]
    calls = []
    real = tick_build._by_slices
    monkeypatch.setattr(tick_build, "_by_slices", lambda *a: calls.append(real(*a)) or calls[-1])
    got, want, dq1, dq2 = _both(slices, [0, 1])
    assert calls == [None]  # refused: the joined records were placed
    assert got == want and dq1 == dq2
    if case == "two samples in a tick":
        assert dq1["total"] == 2  # one duplicate in each of the two series


def test_non_finite_or_negative_values_are_flagged_and_not_kept():
    s = SlicedSeries()
    s.add(np.array([1], dtype=np.uint64), [T + np.arange(3.0)], [np.array([1.0, 2.0, 3.0])])
    assert s.finite and len(s.slices) == 1 and s.vmax == [3.0]
    s.add(np.array([1, 2], dtype=np.uint64), [T + np.arange(3.0)] * 2, [np.array([1.0, -2.0, 3.0]), np.ones(3)])
    assert not s.finite and s.slices == [] and s.hashes == [1, 2]


def _profile(root, minutes=4):
    rng = np.random.default_rng(4)
    for node in ("algo-1", "algo-2"):
        for minute in range(minutes):
            t0 = T + 60 * minute
            lines = [l for k in range(60) for l in instant(t0 + 0.5 * k, cpu=float(rng.integers(0, 100)),
                                                            gpu=round(float(rng.random()) * 100, 2), node=node)]
            lines += [rec("i/o", "ReadThroughputInBytesPerSecond", "", round(float(rng.random()) * 3e4, 4),
                          t0 + 0.5 * k + 0.003, node) for k in range(60)]
            write_sys(root, t0, lines, node=node)


@pytest.mark.parametrize("slice_bytes", [1, 20_000, 10**9])
def test_reader_over_slices_equals_the_record_placement(tmp_path, monkeypatch, slice_bytes):
    _profile(tmp_path)
    monkeypatch.setattr(sr, "GROUPED_QUERY_BYTES", slice_bytes)
    fast = {n: _table_bytes(t) for n, t in read_system(tmp_path, ProblemLog()).nodes.items()}
    monkeypatch.setattr(tick_build, "_by_slices", lambda *a: None)
    monkeypatch.setattr(tick_build, "_by_series", lambda *a: None)
    slow = {n: _table_bytes(t) for n, t in read_system(tmp_path, ProblemLog()).nodes.items()}
    assert sorted(fast) == ["algo-1", "algo-2"] and fast == slow
    assert len(fast["algo-1"][1]) == 7  # instant()'s six series and the read throughput


def test_reader_holds_a_slice_as_compact_values(tmp_path, monkeypatch):
    _profile(tmp_path, minutes=2)
    monkeypatch.setattr(sr, "GROUPED_QUERY_BYTES", 1)  # one query per file
    held = []
    real = tick_build._by_slices
    monkeypatch.setattr(tick_build, "_by_slices", lambda s, *a: held.append(list(s.slices)) or real(s, *a))
    read_system(tmp_path, ProblemLog())
    assert [len(slices) for slices in held] == [2, 2]
    times, pos, rep, values = held[0][0]
    assert len(pos) == 7 and len(times) == 6  # the two cores share their timestamps
    # whole-percent CPU and 2-decimal GPU values: int16 codes; the read throughput (4 decimals): float64
    assert sorted({(a.dtype.str, s) for a, s in values}) == [("<f8", 0.0), ("<i2", 100.0)]


def _held(s):
    return (s.hashes, s.vmax if s.finite else None, s.finite,  # the largest values matter only while finite
            [([t.tobytes() for t in times], pos, rep, [(a.dtype.str, a.tobytes(), sc) for a, sc in values])
             for times, pos, rep, values in s.slices])


@pytest.mark.parametrize("kind", sorted(VALUE_KINDS) + ["non-finite", "negative", "timestamps differing in -0.0"])
def test_a_periodic_slice_held_as_a_matrix_equals_series_by_series(kind):
    """``add_matrix`` (the reader's periodic slices) keeps what ``add`` keeps from the same columns."""
    rng = np.random.default_rng(8)
    n, k = 50, 6
    ts = np.stack([T + 0.5 * np.arange(n) + (0.001 if j >= 4 else 0.0) for j in range(k)], axis=1)
    vals = np.stack([VALUE_KINDS[kind](rng, n) if kind in VALUE_KINDS and j in (1, 4)
                     else np.round(rng.random(n) * 100, 2) for j in range(k)], axis=1)
    if kind == "non-finite":
        vals[7, 3] = np.inf
    elif kind == "negative":
        vals[9, 2] = -1.0
    elif kind == "timestamps differing in -0.0":
        ts[:, 0], ts[:, 1] = 0.0, 0.0
        ts[3, 1] = -0.0
    hashes = np.array([5, 3, 9, 1, 7, 2], dtype=np.uint64)
    by_series, by_matrix = SlicedSeries(), SlicedSeries()
    for s, add in ((by_series, lambda h, t, v: by_series.add(h, list(t.T), list(v.T))),
                   (by_matrix, by_matrix.add)):
        add(hashes[:4], ts[:, :4].copy(), vals[:, :4].copy())  # a first slice with 4 of the series
        add(hashes, ts + 30.0, vals)
    assert _held(by_matrix) == _held(by_series)
    assert by_matrix.finite == (kind not in ("non-finite", "negative"))
    if kind == "timestamps differing in -0.0":
        assert len(by_matrix.slices[0][0]) == 3  # columns 0 and 1 are not one timestamp array
