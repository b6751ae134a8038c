"""StepOutlier (spec B.10): step durations above mean + stddev * std.

Steps are events whose name contains ``Step:ModeKeys`` (only those matching ``mode`` when it is set).
Per worker and step phase, in each window where that phase got new steps and it has more
than 100 steps so far: outliers = durations > mean + stddev*std over the history; more than
``n_outliers`` of them is one trigger. Violations = outlier steps in the final evaluation (not
re-counted per window). Details report, per worker, the phase with the most steps.
"""

from __future__ import annotations

import numpy as np

from reportgen.engine.breakdown import breakdown_of_groups
from reportgen.engine.params import StepOutlierParams
from reportgen.engine.rules._common import result, text_match
from reportgen.engine.rules.max_initialization_time import step_events
from reportgen.engine.stats import hist100, merged_segments, window_ends

MIN_STEPS = 100


def _outliers(v, k):
    mean, std = float(v.mean()), float(v.std())
    thr = mean + std * k
    return thr, v > thr


MAX_LISTED = 200


def _outlier_list(steps, starts_us, durations) -> list[dict]:
    order = np.argsort(-durations, kind="stable")[:MAX_LISTED]
    return [{"step": str(steps[i]), "start_s": round(float(starts_us[i]) / 1e6, 6),
             "duration_s": round(float(durations[i]), 6)} for i in order]


def evaluate(data, params: StepOutlierParams | None = None) -> dict:
    p = params or StepOutlierParams()
    steps = step_events(data.events)
    if p.mode and len(steps):
        steps = steps[text_match(steps["name"], lambda s: p.mode in s)]
    details: dict = {"step_details": {}}
    triggered = 0
    violations = 0
    corr_s, corr_e = [], []
    nw = max(data.n_windows, 1)  # a job whose every time is unknown still has one window
    for node, g in steps.groupby("node_id", observed=True, sort=True):
        by_phase = {ph: gg for ph, gg in g.groupby("name", observed=True, sort=False)}
        best = max(by_phase, key=lambda ph: len(by_phase[ph]))
        for ph, gg in by_phase.items():
            s, e = gg["start_us"].to_numpy(), gg["end_us"].to_numpy()
            dur = (e - s) / 1e6
            win = data.window_of_us(s)
            ends = window_ends(win, nw)
            # only the windows where this phase got new steps: another phase's new steps leave its
            # history as it was, and re-evaluating it would count the same trigger again
            for k in np.unique(win):
                n = ends[k]
                if n <= MIN_STEPS:
                    continue
                _, out = _outliers(dur[:n], p.stddev)
                if out.sum() > p.n_outliers:
                    triggered += 1
                    now = out & (win[:n] == k)
                    corr_s.append(s[:n][now])
                    corr_e.append(e[:n][now])
            if ph != best or len(dur) <= MIN_STEPS:
                continue
            thr, out = _outliers(dur, p.stddev)
            violations += int(out.sum()) if out.sum() > p.n_outliers else 0
            probs, edges = hist100(dur[dur < thr])
            p99, p95, p50 = np.percentile(dur, [99, 95, 50])
            details["step_details"][str(node)] = {
                "step_stats": {"mean": float(dur.mean()), "max": float(dur.max()), "p99": float(p99),
                               "p95": float(p95), "p50": float(p50), "min": float(dur.min())},
                "number_of_outliers": int(out.sum()),
                "phase": str(ph),
                "stddev": round(float(dur.std()), 2),
                "probs": probs,
                "binedges": edges,
                "step_numbers": [str(x) for x in gg["step_num"].astype(str).to_numpy()[out]],
                # reportgen's addition (not in SageMaker's output): each outlier step's start (epoch s) and
                # duration (s), the slowest first, for the report's list and the timeline's markers
                "outliers": _outlier_list(gg["step_num"].astype(str).to_numpy()[out], s[out], dur[out]),
            }
    if triggered and corr_s:
        seg_s, seg_e = merged_segments(np.concatenate(corr_s), np.concatenate(corr_e))
        details.update(breakdown_of_groups(data.framework.groups_in_intervals(seg_s, seg_e)))
    return result(triggered, violations, details, len(steps), p)
