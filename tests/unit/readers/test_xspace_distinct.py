"""The XSpace reader numbers a chunk's metadata ids without sorting them when they are small and non-negative
(``xspace_trace._distinct``, a table indexed by id); it must give what ``np.unique`` gives for every input,
the ids of a damaged file (negative, huge) included."""

from __future__ import annotations

import numpy as np
import pytest

from reportgen.readers import xspace_trace


@pytest.mark.parametrize("meta", [
    [5, 3, 5, 9, 3, 3, 0], [7], [], [2**40, 1, 2**40], [-4, 2, -4, 7], [300_000, 2, 300_000],
    list(np.random.default_rng(3).integers(0, 400, 5000)),
])
def test_the_table_gives_what_unique_gives(meta):
    meta = np.array(meta, np.int64)
    ids, first, inverse = xspace_trace._distinct(meta)
    want = np.unique(meta, return_index=True, return_inverse=True)
    for got, expected in zip((ids, first, inverse), want):
        assert np.array_equal(got, expected.reshape(-1))
    assert ids.size == len(set(meta.tolist()))
