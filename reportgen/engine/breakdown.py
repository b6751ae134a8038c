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
from reportgen.engine.stats import union_length

CPU, GPU, STEP, FWD, BWD, GENERAL, HOROVOD = range(7)


def _phase_class(p: str) -> int:
    low = p.lower()
    if "cpu" in low:
        return CPU
    if "gpu" in low:
        return GPU
    if "Step" in p:
        return STEP
    if p == "Forward-SubModuleInternal":
        return FWD
    if p == "Backward-SubModuleInternal":
        return BWD
    return GENERAL


def classify(events: pd.DataFrame) -> np.ndarray:
    """Class code per event (vectorised over the categorical phase column)."""
    if len(events) == 0:
        return np.zeros(0, np.int8)
    phase = events["phase"].cat
    base = np.array([_phase_class(str(c)) for c in phase.categories] + [GENERAL], np.int8)
    cls = base[phase.codes]
    horovod = text_match(events["file_type"], lambda s: s == "") & (cls == GENERAL)
    cls[horovod] = HOROVOD
    return cls


def classify_groups(groups: pd.DataFrame) -> np.ndarray:
    """Class code per (phase, file_type, name) group, as ``classify`` gives each of its events."""
    cls = np.array([_phase_class(str(p)) for p in groups["phase"]], np.int8)
    horovod = np.array([str(f) == "" for f in groups["file_type"]], bool) & (cls == GENERAL)
    cls[horovod] = HOROVOD
    return cls


def _sums(groups: pd.DataFrame, key: str) -> pd.Series:
    """Duration sums per ``key`` in order of first appearance (``groups`` are in that order)."""
    if len(groups) == 0:
        return pd.Series(dtype=np.int64)
    return groups.groupby(key, sort=False)["dur"].sum()


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
    """The breakdown of a whole event table (``breakdown_of_groups`` of its groups)."""
    from reportgen.engine.framework_events import groups_of_table

    return breakdown_of_groups(groups_of_table(events), events if with_others else None)


def breakdown_of_groups(groups: pd.DataFrame, step_rows: pd.DataFrame | None = None) -> dict:
    """Details keys ratio, phase, phase_time, CPU, CPU_total, GPU, GPU_total, general,
    forward_backward, horovod (the optional ones only when there is data), from the events' duration
    sums per (phase, file_type, name) in first-appearance order (``engine.framework_events``).
    ``step_rows``: events holding at least every training-step event with a step number, for the
    "others" time (OverallFrameworkMetrics); None leaves it out."""
    cls = classify_groups(groups)
    out: dict = {}
    cpu, gpu = groups[cls == CPU], groups[cls == GPU]
    cpu_phase, gpu_phase = _sums(cpu, "phase"), _sums(gpu, "phase")
    # GPU phases first, then CPU phases; each label carries its own share (correctly paired).
    out["ratio"] = _normalise(pd.concat([gpu_phase, cpu_phase]))
    steps = groups[cls == STEP]
    step_sums = _sums(steps, "phase")
    if step_rows is not None and len(steps) and len(step_rows):
        # the numbered training-step rows' three columns others_time reads, not a copy of whole rows
        with_num = (classify(step_rows) == STEP) & text_match(step_rows["step_num"], lambda s: s != "")
        if with_num.any():
            rows = step_rows.loc[with_num, ["node_id", "start_us", "end_us"]]
            step_sums = pd.concat([step_sums, pd.Series({"others": others_time(rows)})])
    out["phase"] = _normalise(step_sums)
    out["phase_time"] = {}
    if len(cpu):
        out["CPU"], out["CPU_total"] = _filter(_sums(cpu, "name"))
    if len(gpu):
        out["GPU"], out["GPU_total"] = _filter(_sums(gpu, "name"))
    general = _sums(groups[cls == GENERAL], "phase")
    if len(general):
        out["general"] = _normalise(general)
    dur = groups["dur"].to_numpy()
    fwd = int(dur[cls == FWD].sum())
    bwd = int(dur[cls == BWD].sum())
    if (cls == FWD).any() and (cls == BWD).any() and fwd + bwd > 0:
        out["forward_backward"] = {"Forward pass": fwd / (fwd + bwd) * 100, "Backward pass": bwd / (fwd + bwd) * 100}
    hvd = _sums(groups[cls == HOROVOD], "name")
    if len(hvd):
        hvd = hvd[hvd > 0]
        out["horovod"] = _filter(hvd)[0] if len(hvd) else {}
    return out

