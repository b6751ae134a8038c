"""Slow steps found robustly, and the period they recur with.

SageMaker's StepOutlier flags steps above mean + 3σ. The slow steps inflate σ themselves, so a job
that checkpoints every 20 steps hides most of its slow steps behind the very spread they cause. Here the
threshold is the median plus a multiple of the median absolute deviation (MAD), which a minority of slow
steps cannot move, and a period is looked for that most slow steps share, so that a few stray ones
(garbage collection, a noisy neighbour) do not hide "every 20 steps". The rule's own output keeps the
original algorithm; this is what the diagnosis reasons from (``timeline.json``'s ``steps``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

K_MAD = 5.0  # a step is slow above median + K_MAD × 1.4826 × MAD (about 5 σ of the normal steps) ...
MIN_EXCESS = 0.20  # ... and at least 20 % above the median step
MIN_STEPS = 20  # fewer steps say nothing about how often a step is slow
MAX_LISTED = 200
PERIODIC_SHARE = 0.6  # of the slow steps on the period's beat, for "they recur every N steps"
BEAT_HIT = 0.6  # of the beat's steps that are slow (the periodic work happens on most of its beats)


def find_period(positions: list[int], first: int, last: int, lost: list[float] | None = None
                ) -> tuple[int, int, int] | None:
    """(period, phase, slow steps on that beat) when the slow steps on one beat ``position ≡ phase (mod period)``
    are most of the slow steps, or hold most of the time they lost (``lost``, per position), and most of that
    beat's steps between ``first`` and ``last`` are slow. Seconds lost as well as counts: a few slow start-up steps
    must not hide an evaluation every 30 steps that costs far more."""
    weight = {}
    for i, p in enumerate(positions):
        weight[int(p)] = weight.get(int(p), 0.0) + (max(float(lost[i]), 0.0) if lost is not None else 1.0)
    slow = sorted(weight)
    if len(slow) < 3:
        return None
    total = sum(weight.values()) or float(len(slow))
    gaps = Counter(b - a for a, b in zip(slow, slow[1:]) if b - a > 1)
    best = None
    for period in sorted({g for g, n in gaps.items() if n >= 2}):
        on_beat: dict[int, list[int]] = {}
        for p in slow:
            on_beat.setdefault(p % period, []).append(p)
        phase, beat = max(on_beat.items(), key=lambda kv: (sum(weight[p] for p in kv[1]), len(kv[1])))
        hits, held = len(beat), sum(weight[p] for p in beat)
        beats = len(range(first + (phase - first) % period, last + 1, period))
        most = hits >= PERIODIC_SHARE * len(slow) or held >= PERIODIC_SHARE * total
        if hits >= 3 and most and beats and hits >= BEAT_HIT * beats:
            if best is None or held > best[3]:
                best = (period, phase, hits, held)
    return best[:3] if best else None


def slow_steps(positions, numbers, starts_s, durations_s) -> dict | None:
    """The slow steps of one worker's sequence of steps (``positions``: their index in the sequence, used for
    the period; ``numbers``: the step numbers as the framework wrote them; ``starts_s`` None where the steps'
    starts are not kept, as in a SageMaker process's step-time account). None below MIN_STEPS steps."""
    d = np.asarray(durations_s, dtype=np.float64)
    ok = np.isfinite(d) & (d >= 0)
    if int(ok.sum()) < MIN_STEPS:
        return None
    idx = np.flatnonzero(ok)
    d = d[idx]
    median = float(np.median(d))
    mad = float(np.median(np.abs(d - median)))
    threshold = median + max(K_MAD * 1.4826 * mad, MIN_EXCESS * median)
    slow = np.flatnonzero(d > threshold)
    pos = [int(positions[idx[i]]) for i in slow]
    period = find_period(pos, int(positions[idx[0]]), int(positions[idx[-1]]), [float(d[i] - median) for i in slow])
    order = slow[np.argsort(-d[slow], kind="stable")][:MAX_LISTED]
    return {
        "steps": int(d.size), "median_s": median, "mad_s": mad, "threshold_s": threshold,
        "count": int(slow.size), "seconds_lost": float((d[slow] - median).sum()), "total_s": float(d.sum()),
        "period": period[0] if period else None, "periodic_count": period[2] if period else 0,
        "slowest": [{"step": str(numbers[idx[i]]), "start_s": None if starts_s is None else float(starts_s[idx[i]]), "duration_s": float(d[i])}
                    for i in order],
    }


def workers_slow_steps(events) -> dict:
    """Per worker, the slow steps of its most frequent step kind (TRAIN steps, as StepOutlier's details),
    from the framework's step events (``node_id``, ``name``, ``start_us``, ``end_us``, ``step_num``)."""
    out: dict = {}
    if len(events) == 0:
        return out
    for node, g in events.groupby("node_id", observed=True, sort=True):
        if len(g) == 0:
            continue
        best = g["name"].value_counts().index[0]
        g = g[g["name"] == best].sort_values("start_us", kind="stable")
        s, e = g["start_us"].to_numpy(np.float64), g["end_us"].to_numpy(np.float64)
        found = slow_steps(np.arange(len(g)), g["step_num"].astype(str).to_numpy(), s / 1e6, (e - s) / 1e6)
        if found is not None:
            out[str(node)] = found
    return out
