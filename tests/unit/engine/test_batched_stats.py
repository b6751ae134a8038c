"""The batched helpers the rules use must give the bit-identical results of the per-call numpy
functions they replace (rule JSONs are compared byte for byte before and after)."""

import numpy as np

from reportgen.engine.rules.load_balancing import js_distance, js_distances
from reportgen.engine.stats import pairwise_sum_rows, percentile_windows


def test_pairwise_sum_rows_matches_np_sum_bit_for_bit():
    rng = np.random.default_rng(7)
    terms = rng.standard_normal((400, 60)) * np.exp(rng.uniform(-30, 30, (400, 60)))
    counts = rng.integers(0, 61, 400)
    got = pairwise_sum_rows(terms, counts)
    want = np.array([np.sum(terms[i, :counts[i]].copy()) for i in range(400)])
    assert got.view(np.int64).tolist() == want.view(np.int64).tolist()
    # a naive left-to-right sum differs somewhere: the order is what is being reproduced
    naive = np.array([sum(terms[i, :counts[i]].tolist(), 0.0) for i in range(400)])
    assert (naive != want).any()


def test_percentile_windows_matches_per_window_calls():
    rng = np.random.default_rng(3)
    v = np.round(rng.uniform(0, 100, 3000), 2)
    ends = np.array([1, 5, 17, 499, 500, 501, 1200, 2999, 3000])
    got = percentile_windows(v, ends, 500, [95, 5])
    for row, m in zip(got, ends):
        want = np.percentile(v[max(0, m - 500):m], [95, 5])
        assert row.tolist() == want.tolist()


def test_js_distances_equal_the_scalar_function():
    rng = np.random.default_rng(11)
    h1 = rng.integers(0, 50, (300, 49)) * (rng.random((300, 49)) < 0.4)
    h2 = rng.integers(0, 50, (300, 49)) * (rng.random((300, 49)) < 0.6)
    h1[:, 0] += 1
    h2[:, 1] += 1
    got = js_distances(h1, h2)
    want = [js_distance(a, b) for a, b in zip(h1, h2)]
    assert got.tolist() == want
    assert 0 < min(want) and max(want) < 1
