"""The one interval-merging algorithm (reportgen/intervals.py) and the engine's and trace analysis' names for it."""

import numpy as np

from reportgen.engine.stats import merged_segments, union_length
from reportgen.intervals import merged
from reportgen.trace_analysis.regions import length


def test_overlapping_touching_and_nested_intervals_merge_once():
    s, e = merged(np.array([5.0, 0.0, 2.0, 10.0, 11.0]), np.array([7.0, 3.0, 4.0, 12.0, 11.5]))
    assert s.tolist() == [0.0, 5.0, 10.0] and e.tolist() == [4.0, 7.0, 12.0]
    s, e = merged(np.array([0, 3]), np.array([3, 6]))  # [0, 3) and [3, 6) touch: one segment
    assert s.tolist() == [0] and e.tolist() == [6]
    empty = np.array([], dtype=np.int64)
    assert merged(empty, empty)[0].size == 0


def test_the_engines_ints_and_the_traces_floats_count_the_same_union():
    starts, ends = [100, 0, 50, 400], [200, 60, 120, 450]
    assert union_length(np.array(starts), np.array(ends)) == 250 and isinstance(union_length(np.array(starts),
                                                                                              np.array(ends)), int)
    assert union_length(np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == 0
    seg_s, seg_e = merged_segments(starts, ends)
    assert seg_s.dtype == np.int64 and seg_s.tolist() == [0, 400] and seg_e.tolist() == [200, 450]
    assert length(np.array(starts, dtype=np.float64), np.array(ends, dtype=np.float64)) == 250.0
