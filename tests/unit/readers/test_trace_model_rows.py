"""``TraceColumns.rows``: the category mask every analysis asks for (~36 times a rank) is ``np.isin``'s,
without its per-call checks (a one-step rank's analysis was mostly those: 20,000 rank files ran past 120 s)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reportgen.readers.trace_model import CATEGORY_CODES, OTHER, TraceColumns


@pytest.mark.parametrize("seed", range(5))
def test_rows_is_isin(seed):
    rng = np.random.default_rng(seed)
    codes = sorted({*CATEGORY_CODES.values(), OTHER})
    trace = TraceColumns(Path("r.json"), "r", None)
    trace.cat = rng.choice(np.asarray(codes, np.int8), size=int(rng.integers(0, 50)))
    for k in range(len(codes) + 1):
        cats = tuple(int(c) for c in rng.choice(codes, size=k, replace=False))
        got = trace.rows(*cats)
        assert got.dtype == bool and got.shape == trace.cat.shape
        assert np.array_equal(got, np.isin(trace.cat, np.asarray(cats, dtype=np.int8)))
