"""Framework-time breakdown shared by OverallFrameworkMetrics (B.12) and the correlations of
CPUBottleneck / IOBottleneck / StepOutlier (B.13).

Each event is classified by the first matching branch: CPU operator (phase contains "cpu"), GPU
operator ("gpu"), training step ("Step"), forward / backward sub-module, other framework phase
(``general``), or Horovod (empty file_type). Percentages are computed from totals that are known to
be positive, so empty or all-zero groups give empty dicts instead of a division by zero.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.engine.rules._common import text_match
from reportgen.engine.stats import merged_segments, union_length

CPU, GPU, STEP, FWD, BWD, GENERAL, HOROVOD = range(7)


def classify(events: pd.DataFrame) -> np.ndarray:
    """Class code per event (vectorised over the categorical phase column)."""
    if len(events) == 0:
        return np.zeros(0, np.int8)
    phase = events["phase"].cat
    cats = [str(c) for c in phase.categories]
    base = np.full(len(cats) + 1, GENERAL, np.int8)
    for i, p in enumerate(cats):
        low = p.lower()
        if "cpu" in low:
            base[i] = CPU
        elif "gpu" in low:
            base[i] = GPU
        elif "Step" in p:
            base[i] = STEP
        elif p == "Forward-SubModuleInternal":
            base[i] = FWD
        elif p == "Backward-SubModuleInternal":
            base[i] = BWD
    cls = base[phase.codes]
    horovod = text_match(events["file_type"], lambda s: s == "") & (cls == GENERAL)
    cls[horovod] = HOROVOD
    return cls


def _sums(df: pd.DataFrame, key: str) -> pd.Series:
    """Duration sums per ``key`` in order of first appearance."""
    if len(df) == 0:
        return pd.Series(dtype=np.int64)
    s = df.groupby(key, observed=True, sort=False)["dur_us"].sum()
    return s


def _normalise(s: pd.Series) -> dict:
    total = float(s.sum())
    if total <= 0:
        return {}
    return {str(k): float(v) / total * 100 for k, v in s.items()}


def _filter(s: pd.Series, threshold: float = 2.0) -> tuple[dict, dict]:
    """Operators above ``threshold`` % of the total, re-normalised to 100; plus their raw µs sums."""
    total = float(s.sum())
    if total <= 0:
        return {}, {}
    kept = s[s / total * 100 > threshold].sort_values(ascending=False, kind="stable")
    kept_total = float(kept.sum())
    if kept_total <= 0:
        return {}, {}
    return ({str(k): float(v) / kept_total * 100 for k, v in kept.items()},
            {str(k): int(v) for k, v in kept.items()})


def others_time(steps: pd.DataFrame) -> int:
    """Per worker: time between its first step start and last step end not covered by any step."""
    total = 0
    for _, g in steps.groupby("node_id", observed=True, sort=False):
        s, e = g["start_us"].to_numpy(), g["end_us"].to_numpy()
        total += int(e.max() - s.min()) - union_length(s, e)
    return total


def breakdown(events: pd.DataFrame, with_others: bool) -> dict:
    """Details keys ratio, phase, phase_time, CPU, CPU_total, GPU, GPU_total, general,
    forward_backward, horovod (the optional ones only when there is data)."""
    cls = classify(events)
    out: dict = {}
    cpu, gpu = events[cls == CPU], events[cls == GPU]
    cpu_phase, gpu_phase = _sums(cpu, "phase"), _sums(gpu, "phase")
    # GPU phases first, then CPU phases; each label carries its own share (correctly paired).
    out["ratio"] = _normalise(pd.concat([gpu_phase, cpu_phase]))
    steps = events[cls == STEP]
    step_sums = _sums(steps, "phase")
    if with_others and len(steps):
        with_num = steps[text_match(steps["step_num"], lambda s: s != "")]
        if len(with_num):
            step_sums = pd.concat([step_sums, pd.Series({"others": others_time(with_num)})])
    out["phase"] = _normalise(step_sums)
    out["phase_time"] = {}
    if len(cpu):
        out["CPU"], out["CPU_total"] = _filter(_sums(cpu, "name"))
    if len(gpu):
        out["GPU"], out["GPU_total"] = _filter(_sums(gpu, "name"))
    general = _sums(events[cls == GENERAL], "phase")
    if len(general):
        out["general"] = _normalise(general)
    fwd = int(events["dur_us"].to_numpy()[cls == FWD].sum())
    bwd = int(events["dur_us"].to_numpy()[cls == BWD].sum())
    if (cls == FWD).any() and (cls == BWD).any() and fwd + bwd > 0:
        out["forward_backward"] = {"Forward pass": fwd / (fwd + bwd) * 100, "Backward pass": bwd / (fwd + bwd) * 100}
    hvd = _sums(events[cls == HOROVOD], "name")
    if len(hvd):
        hvd = hvd[hvd > 0]
        out["horovod"] = _filter(hvd)[0] if len(hvd) else {}
    return out


def events_at_instants(events: pd.DataFrame, instants_us: np.ndarray) -> pd.DataFrame:
    """Events active at any of the instants (strict: start < t < end), each event once."""
    t = np.sort(np.asarray(instants_us, dtype=np.int64))
    if len(events) == 0 or len(t) == 0:
        return events.iloc[:0]
    s, e = events["start_us"].to_numpy(), events["end_us"].to_numpy()
    i = np.searchsorted(t, s, side="right")
    ok = i < len(t)
    hit = np.zeros(len(events), bool)
    hit[ok] = t[i[ok]] < e[ok]
    return events[hit]


def events_in_intervals(events: pd.DataFrame, starts_us, ends_us) -> pd.DataFrame:
    """Events overlapping any closed interval (end >= a and start <= b), each event once."""
    seg_s, seg_e = merged_segments(starts_us, ends_us)
    if len(events) == 0 or len(seg_s) == 0:
        return events.iloc[:0]
    s, e = events["start_us"].to_numpy(), events["end_us"].to_numpy()
    i = np.searchsorted(seg_s, e, side="right") - 1
    ok = i >= 0
    hit = np.zeros(len(events), bool)
    hit[ok] = seg_e[i[ok]] >= s[ok]
    return events[hit]
