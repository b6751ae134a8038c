"""The trace analyses' fast paths give, element for element, what they replace: the nesting order of events
(``reportgen.trace_analysis.event_order``) and kernel_mix's distinct pairs what numpy's full sorts give (ties and
unsorted input included), the coverage of points in order what a search gives, ``columns.ends_of`` the model's
``end_us``, ``analysis``' totals by name those through ``np.unique``."""

from __future__ import annotations

import numpy as np
import pytest

from reportgen.trace_analysis.event_order import nesting_order
from reportgen.trace_analysis.kernel_mix import distinct_pairs


def _events(seed: int, n: int, sorted_starts: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    start = rng.integers(0, n // 3 + 1, n).astype(np.float64)  # many rows share a start
    if sorted_starts:
        start = np.sort(start)
    tid = rng.choice(np.array([7, 3, 12, 3_000_000_001], np.int64), n)
    dur = rng.integers(0, 5, n).astype(np.float64)  # and a duration: full ties keep their input order
    return tid, start, dur


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("sorted_starts", [True, False])
def test_nesting_order_is_lexsorts(seed, sorted_starts):
    tid, start, dur = _events(seed, 2_000, sorted_starts)
    want = np.lexsort((-dur, start, tid))
    got = nesting_order(tid, start, dur)
    assert got.tolist() == want.tolist()
    ties = ((tid[want][1:] == tid[want][:-1]) & (start[want][1:] == start[want][:-1])).sum()
    assert ties > 100  # the case the fast path sorts apart is exercised


def test_nesting_order_small_and_nan():
    assert nesting_order(np.zeros(0, np.int64), np.zeros(0), np.zeros(0)).tolist() == []
    assert nesting_order(np.array([4]), np.array([1.0]), np.array([2.0])).tolist() == [0]
    tid, start, dur = np.array([1, 1, 2, 1]), np.array([0.0, np.nan, 1.0, 2.0]), np.array([1.0, 2.0, 3.0, 4.0])
    assert nesting_order(tid, start, dur).tolist() == np.lexsort((-dur, start, tid)).tolist()
    tid, start, dur = np.array([5, 5, 5]), np.array([1.0, 1.0, 1.0]), np.array([1.0, 3.0, 2.0])
    assert nesting_order(tid, start, dur).tolist() == [1, 2, 0]


@pytest.mark.parametrize("seed", range(4))
def test_pairs_is_rowwise_unique(seed):
    rng = np.random.default_rng(seed)
    first = rng.integers(0, 40, 3_000).astype(np.int32)
    second = rng.integers(-1, 25, 3_000)
    want, want_inverse = np.unique(np.c_[first, second], axis=0, return_inverse=True)
    got, got_inverse = distinct_pairs(first, second)
    assert got.tolist() == want.tolist()
    assert got_inverse.tolist() == want_inverse.ravel().tolist()
    assert distinct_pairs(np.zeros(0, np.int32), np.zeros(0, np.int64))[0].shape == (0, 2)


def _searched(intervals, points):
    s, e = intervals
    at = np.searchsorted(s, points, "right") - 1
    out = np.zeros(points.size, bool)
    out[at >= 0] = points[at >= 0] < e[at[at >= 0]]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_covered_points_in_order_counted_as_searched(seed):
    """gpu_analyses' coverage of points in order (counted) against the search it replaces: epoch-µs times 0.25 µs
    apart, points on the intervals' bounds, empty intervals, points past both ends."""
    from reportgen.intervals import merged
    from reportgen.trace_analysis.gpu_analyses import covered_points

    rng = np.random.default_rng(seed)
    base = 1.7e15
    starts = base + rng.integers(0, 4_000, 600) * 0.25
    iv = merged(starts, starts + rng.integers(0, 40, 600) * 0.25)
    points = np.sort(np.r_[iv[0], iv[1], base + rng.integers(-50, 4_100, 3_000) * 0.25])
    mid = points[:-1] + np.diff(points) / 2  # the pieces' midpoints, as the analyses take them
    for pts in (points, mid, points[:1], points[::-1]):
        assert covered_points(iv, pts).tolist() == _searched(iv, pts).tolist()
    assert covered_points(iv, points).any() and not covered_points(iv, points).all()


def test_ends_of_is_end_us():
    from pathlib import Path

    from reportgen.readers.trace_model import TraceColumns
    from reportgen.trace_analysis.columns import ends_of

    rng = np.random.default_rng(3)
    trace = TraceColumns(Path("t.json"), "t", 0, start_us=1.7e15 + np.sort(rng.random(500)) * 1e6,
                         dur_us=rng.random(500) * 1e3)
    mask = rng.random(500) < 0.3
    for rows in (mask, np.nonzero(mask)[0][::-1], slice(10, 90), 7):
        assert np.array_equal(ends_of(trace, rows), trace.end_us[rows])
    assert ends_of(trace, mask).tobytes() == trace.end_us[mask].tobytes()


def test_totals_by_name_counted_as_through_unique():
    from pathlib import Path

    from reportgen.readers.trace_model import KERNEL, TraceColumns
    from reportgen.trace_analysis.analysis import totals_by_name

    rng = np.random.default_rng(5)
    n = 4_000
    names = [f"k{i}" for i in range(60)]
    trace = TraceColumns(Path("t.json"), "t", 0, names=names, cat=np.full(n, KERNEL, np.int8),
                         name=rng.integers(0, 60, n).astype(np.int32), start_us=np.arange(n, dtype=np.float64),
                         dur_us=rng.random(n) * 1e3 + 1e12)  # large: the order of the additions shows in the bits
    got = totals_by_name(trace)["kernels"]
    uniq, inverse = np.unique(trace.name, return_inverse=True)
    totals, counts = np.bincount(inverse, weights=trace.dur_us), np.bincount(inverse)
    assert got == {names[int(u)]: (float(t), int(c)) for u, t, c in zip(uniq, totals, counts)}
    assert len(got) == 60


@pytest.mark.parametrize("count", [0, 1, 3, 12, 13, 40])
def test_with_names_is_isin(count):
    from pathlib import Path

    from reportgen.readers.trace_model import TraceColumns
    from reportgen.trace_analysis.columns import with_names

    rng = np.random.default_rng(count)
    names = [f"n{i}" for i in range(80)]
    trace = TraceColumns(Path("t.json"), "t", 0, names=names, name=rng.integers(0, 80, 5_000).astype(np.int32))
    ids = rng.choice(80, count, replace=False).astype(np.int32)
    assert with_names(trace, ids).tolist() == np.isin(trace.name, ids).tolist()
    assert with_names(trace, ids.tolist()).tolist() == np.isin(trace.name, ids).tolist()
    odd = trace.name.copy()
    odd[:50] = 200  # name ids past the names, and negative ones: what np.isin says of them
    odd[50:60] = -3
    trace.name = odd
    for probe in (ids, np.r_[ids, 200].astype(np.int32), np.r_[ids, -3, 200, 7, 9, 11, 13, 15, 17, 19, 21, 23]):
        assert with_names(trace, probe).tolist() == np.isin(trace.name, probe).tolist()


@pytest.mark.parametrize("overlap", [False, True])
def test_merge_cycles_in_order_or_not(overlap):
    """Files one after another are concatenated as they are; files that overlap in time (or a file out of order)
    are sorted by start, stable: either way the rows a stable sort of the concatenation gives."""
    from pathlib import Path

    from reportgen.readers.trace_model import KERNEL, TraceColumns
    from reportgen.trace_analysis.ranks import merge_cycles

    rng = np.random.default_rng(11)
    files = []
    for i in range(3):
        n = 300
        start = np.sort(rng.integers(0, 1_000, n)).astype(np.float64) + (0 if overlap else i * 2_000)
        files.append(TraceColumns(Path(f"w.{i}.pt.trace.json"), "w", 0, names=["a", "b"],
                                  cat=np.full(n, KERNEL, np.int8), name=rng.integers(0, 2, n).astype(np.int32),
                                  start_us=start, dur_us=rng.random(n), device=np.zeros(n, np.int32),
                                  nbytes=np.zeros(n), tid=np.full(n, i, np.int64), corr=np.arange(n) + 1000 * i))
    rank = merge_cycles(files)
    start = np.concatenate([f.start_us for f in files])
    order = np.argsort(start, kind="stable")
    assert rank.start_us.tolist() == start[order].tolist()
    for key in ("name", "dur_us", "tid", "corr"):
        assert getattr(rank, key).tolist() == np.concatenate([getattr(f, key) for f in files])[order].tolist()
    assert (order == np.arange(order.size)).all() != overlap  # both paths taken


@pytest.mark.parametrize("seed", range(20))
def test_commonest_is_counters(seed):
    from collections import Counter

    from reportgen.trace_analysis.kernel_mix import commonest

    values = np.random.default_rng(seed).integers(0, 4, 9)  # small: ties for the most common are frequent
    assert commonest(values) == Counter(values.tolist()).most_common(1)[0][0]
