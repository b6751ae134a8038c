"""``trend``'s memory: a rolling baseline and the change points of the runs' step times.

Judging each run against the one before is either blind or noisy: CI runs of one build differ by 5-15 %.
A history finds where the *level* moved instead: the runs' median step times are split into segments by PELT
(``ruptures``) with its rank cost: the runs' ranks, not their values, so the penalty needs no noise estimate
and one run slowed by a busy neighbour weighs no more than any other slow run (the least-squares cost, tried
first, raised 4-9 % false alarms on the measured heavy-tailed noise where the rank cost raises 1-2.5 % and
finds more planted steps: docs/ci.md). A level must hold for ``MIN_SEGMENT`` runs to count (one slow run is an
outlier, not a change). Each change is reported
at the first run after it, with its size (median after / median before, up to ``WINDOW`` runs each side) and
a 95 % interval from resampling those runs. The rolling baseline of a run is the median of up to ``WINDOW``
runs before it, never reaching back across a change.

ruptures is an optional dependency (the ``trend`` extra): without it the history says so, and
``--fail-on-change`` cannot judge (it fails closed).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

MIN_RUNS = 5  # fewer runs with step times: no history to judge
MIN_SEGMENT = 2  # runs a level must hold to count as a change
WINDOW = 5  # runs on each side of a change for its size, and before a run for its baseline
PENALTY = 3.0  # × ln(runs), PELT's rank cost: calibrated on noise-only histories (benchmarks/trend, docs/ci.md)
REPLICATES = 2000
SEED = 20261207
CONFIDENCE = 0.95


@dataclass
class Change:
    """A change point: the level moved at run ``index`` (its first run after the change)."""

    index: int
    label: str
    before_s: float  # median step time before (up to WINDOW runs), seconds
    after_s: float
    ratio: float  # after / before
    low: float
    high: float

    def text(self) -> str:
        return (f"{_pct(self.ratio)} from {self.label} on ({_ms(self.before_s)} → {_ms(self.after_s)}, "
                f"95 % interval {_pct(self.low)} to {_pct(self.high)})")


@dataclass
class History:
    values: list[float | None]  # each run's median step time (None: no step times)
    baseline: list[float | None]  # each run's rolling baseline (None for the first run with step times)
    changes: list[Change] = field(default_factory=list)
    noise: float | None = None  # the run-to-run noise, relative (robust sd of the log step time)
    unjudged: str = ""  # why the history cannot be judged ("" when it was)

    def to_data(self) -> dict:
        return asdict(self)

    def latest_slowdown(self, threshold: float) -> Change | None:
        """The most recent change, when it is a slowdown by more than ``threshold`` beyond its interval."""
        if not self.changes:
            return None
        last = self.changes[-1]
        return last if last.ratio > 1 + threshold and last.low > 1 else None


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.3f} s"


def _pct(ratio: float) -> str:
    change = (ratio - 1) * 100
    return f"{'+' if change >= 0 else '−'}{abs(change):.1f} %"


def noise_of(logs) -> float:
    """Robust run-to-run sd of log step times: the median absolute successive difference / 0.6745 / √2 (a single
    level change moves one difference only)."""
    import numpy as np

    diffs = np.abs(np.diff(np.asarray(logs, dtype=float)))
    return float(np.median(diffs) / 0.6745 / math.sqrt(2)) if len(diffs) else 0.0


def change_points(values: list[float], penalty: float = PENALTY) -> list[int]:
    """Indexes (into ``values``, all > 0) where a new level starts."""
    import numpy as np
    import ruptures

    series = np.asarray(values, dtype=float).reshape(-1, 1)
    if np.ptp(series) <= 1e-6 * np.max(series):  # a flat history (ranks of ties): no change
        return []
    algo = ruptures.Pelt(model="rank", min_size=MIN_SEGMENT, jump=1).fit(series)
    return [int(b) for b in algo.predict(pen=penalty * math.log(len(series)))[:-1]]


def _interval(before: list[float], after: list[float], rng) -> tuple[float, float]:
    import numpy as np

    b, a = np.asarray(before), np.asarray(after)
    rb = np.median(rng.choice(b, size=(REPLICATES, len(b))), axis=1)
    ra = np.median(rng.choice(a, size=(REPLICATES, len(a))), axis=1)
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(ra / rb, [tail, 1 - tail])
    return float(low), float(high)


def build_history(values: list[float | None], labels: list[str], penalty: float = PENALTY) -> History:
    """The history of runs whose median step times are ``values`` (None: a run without step times, skipped)."""
    import numpy as np

    where = [i for i, v in enumerate(values) if v is not None and v > 0]
    series = [values[i] for i in where]
    history = History(values=list(values), baseline=[None] * len(values))
    if len(series) < MIN_RUNS:
        history.unjudged = (f"{len(series)} runs with step times (fewer than {MIN_RUNS}): no history to find a "
                            "change in")
        return history
    try:
        points = change_points(series, penalty)
    except ImportError:
        history.unjudged = "change points need the ruptures package (pip install 'reportgen[trend]')"
        points = []
    history.noise = noise_of(np.log(series))
    rng = np.random.default_rng(SEED)
    bounds = [0, *points, len(series)]
    for k, start in enumerate(points):
        before = series[max(bounds[k], start - WINDOW):start]
        after = series[start:min(bounds[k + 2], start + WINDOW)]
        mb, ma = float(np.median(before)), float(np.median(after))
        low, high = _interval(before, after, rng)
        history.changes.append(Change(where[start], labels[where[start]], mb, ma, ma / mb, low, high))
    for j in range(1, len(series)):
        segment_start = max([0, *[p for p in points if p <= j - 1]])
        window = series[max(segment_start, j - WINDOW):j]
        history.baseline[where[j]] = float(np.median(window))
    return history
