"""trend's change points on many simulated histories (a few seconds of CPU: the integration lane). The rates on
real run-to-run noise are measured by benchmarks/trend/bench_trend_changepoints.py (docs/ci.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("ruptures")

from reportgen.compare.history import change_points  # noqa: E402
from tests.unit.compare.test_trend_history import _series  # noqa: E402


def test_false_alarms_on_noise_are_rare_and_a_planted_step_is_found():
    """100 noise-only histories of 20 runs (2 % lognormal noise): at most 5 false alarms (2 measured over 200);
    the same histories with a 10 % step at run 10: found at that run in at least 95 (all measured)."""
    alarms = sum(bool(change_points(_series(20, None, 0.0, seed=seed))) for seed in range(100))
    found = sum(change_points(_series(20, 10, 0.10, seed=seed)) == [10] for seed in range(100))
    assert alarms <= 5 and found >= 95, (alarms, found)
