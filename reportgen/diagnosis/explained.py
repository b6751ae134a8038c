"""Every rule that fired is accounted for: tied to a finding, or one line saying why it needs no action.

A rule sees one symptom with a fixed threshold; many fire on jobs that are fine (SageMaker's Dataloader
rule fires whenever fewer loaders than cores run). Leaving such a rule unexplained under a verdict makes
the reader wonder which one to believe, so each gets the job's own numbers that answer it.
"""

from __future__ import annotations

from reportgen.diagnosis.causes import (GPU_IDLE, IMBALANCE, WELL_USED, Finding, gpu_busy_text, gpu_idle_share,
                                        trace_loader, plural)
from reportgen.diagnosis.evaluation import FIRED
from reportgen.diagnosis.evidence import Evidence


def _spread(ev: Evidence) -> float | None:
    values = [v for s in ev.series.values() for v in s.gpu_util.values()] if ev.timeline_ok else []
    return max(values) - min(values) if len(values) >= 2 else None


def _why(rule: str, ev: Evidence, times: str) -> str:
    idle = gpu_idle_share(ev)
    busy = gpu_busy_text(ev)
    busy_enough = idle is not None and idle < GPU_IDLE
    if rule in ("Dataloader", "CPUBottleneck", "IOBottleneck", "BatchSize", "LowGPUUtilization") and busy_enough:
        return (f"{rule} fired {times}, but the GPUs were kept busy ({busy}): no cause costing 5 % or more of the "
                "job follows from it")
    if rule == "Dataloader":
        share, _, _ = trace_loader(ev)
        if share is not None:
            return (f"Dataloader fired {times} (fewer data-loading processes than cores), but the DataLoader takes "
                    f"only {share * 100:.0f} % of the profiled step time: training does not wait for its data")
        return (f"Dataloader fired {times} (fewer data-loading processes than cores); nothing shows training waiting "
                "for its data, so more loaders are not needed")
    if rule == "LoadBalancing":
        spread = _spread(ev)
        if spread is not None and spread < IMBALANCE:
            return (f"LoadBalancing fired {times}, but the GPUs' loop means are within {spread:.0f} points (under "
                    f"{IMBALANCE:.0f}): none is short of work")
    if rule == "GPUMemoryIncrease":
        peak = ev.gpu_memory_peak()
        if peak is not None and peak < 90:
            return (f"GPUMemoryIncrease fired {times} (sudden jumps in GPU memory-controller activity), but its peak is "
                    f"{peak:.0f} % and no steady rise was found")
    if rule == "StepOutlier":
        return (f"StepOutlier fired {times} (steps above mean + {ev.rules[rule].param('stddev', 3)} σ), "
                "but no step is clearly slow against the median (median + 5 × MAD, or + 20 %)")
    if rule == "LowGPUUtilization" and idle is not None and idle < 1 - WELL_USED / 100:
        return f"LowGPUUtilization fired {times}, but {busy}"
    return (f"{rule} fired {times}, but no cause costing 5 % or more of the job follows from it; its section has the "
            "details")


def fired_without_finding(ev: Evidence, findings: list[Finding]) -> dict[str, str]:
    """Rule -> why it needs no action, for each rule that fired and that no finding lists."""
    tied = {rule for f in findings for rule in f.rules}
    out = {}
    for rule, (state, _) in ev.states.items():
        if state == FIRED and rule not in tied:
            out[rule] = _why(rule, ev, plural(ev.rules[rule].triggered, "time"))
    return out
