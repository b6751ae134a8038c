"""MaxInitializationTime (spec B.7): long wait before the first training step; also records the
job / training-loop boundaries the report's summary uses.

A window whose start is more than ``threshold`` minutes after T0 while no Step event has started
yet (in it or before) is one violation. (The original compared a timestamp frozen at T0, so it
could never fire.)
"""

from __future__ import annotations

import numpy as np

from reportgen.engine.params import MaxInitializationTimeParams
from reportgen.engine.rules._common import result, text_match


# What the step readers (this rule, StepOutlier, the timeline's slow steps) read of a step event: a
# copy of these columns only, not of whole rows (a third of a long job's key rows: 1 M steps on
# 16 nodes x 8 h, ~60 MB as whole rows, ~25 MB as these).
STEP_COLUMNS = ["name", "node_id", "step_num", "start_us", "end_us"]


def step_events(events):
    if len(events) == 0:
        return events
    return events.loc[text_match(events["name"], lambda s: "Step:ModeKeys" in s), STEP_COLUMNS]


def evaluate(data, params: MaxInitializationTimeParams | None = None) -> dict:
    p = params or MaxInitializationTimeParams()
    steps = step_events(data.events)
    details: dict = {"step_num": {}}
    starts = steps["start_us"].to_numpy() if len(steps) else np.zeros(0, np.int64)
    if len(starts):
        details["step_num"]["first"] = int(starts.min())
        if len(starts) > 1:
            details["step_num"]["last"] = int(starts.max())
    if data.nodes:
        details["job_start"] = float(min(ns.first_ts for ns in data.nodes.values()))
        details["job_end"] = float(max(ns.last_ts for ns in data.nodes.values()))
    first_step_window = int(data.window_of_us(starts.min())) if len(starts) else None
    limit_us = p.threshold * 60e6
    violations = 0
    for k in range(data.n_windows):
        if first_step_window is not None and k >= first_step_window:
            break
        if data.window_start(k) - data.t0_us > limit_us:
            violations += 1
    return result(violations, violations, details, len(starts), p)
