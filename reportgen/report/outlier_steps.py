"""The outlier steps themselves: which step, on which node or rank, how long against the median.

StepOutlier's details carry them (``outliers``: step, start_s, duration_s; reportgen's addition to
SageMaker's schema, written by our engine and the trace analysis). The step-duration section lists
the slowest and the timeline marks each on its worker's training lane.
"""

from __future__ import annotations

from reportgen.formatting import utc
from reportgen.report.model import Table
from reportgen.rule_outputs import RuleOutputs, outlier_steps_of
from reportgen.rulebook import RuleName

LISTED = 20


def outlier_steps(outputs: RuleOutputs) -> list[dict]:
    """Every listed outlier step: worker, step, start_s (epoch s or None), duration_s, median_s, ratio;
    slowest first."""
    rule = outputs.get(RuleName.STEP_OUTLIER)
    found = [{"worker": o.worker, "step": o.step, "start_s": o.start_s, "duration_s": o.duration_s,
              "median_s": o.median_s, "ratio": o.duration_s / o.median_s if o.median_s else None}
             for o in outlier_steps_of(rule.details if rule else None)]
    return sorted(found, key=lambda o: -o["duration_s"])


def per_worker(found: list[dict], most: int = 4) -> str:
    """How the outlier steps split over the workers, so that a total is never read as one worker's count:
    "15 on algo-1-27, 15 on algo-2-27"; past ``most`` workers "on 16 workers, at most 5 on one"."""
    counts: dict[str, int] = {}
    for o in found:
        counts[str(o["worker"])] = counts.get(str(o["worker"]), 0) + 1
    if len(counts) > most:
        return f"on {len(counts)} workers, at most {max(counts.values())} on one"
    return ", ".join(f"{n} on {worker}" for worker, n in sorted(counts.items()))


def outlier_table(found: list[dict]) -> Table:
    rows = []
    for o in found[:LISTED]:
        start = utc(o["start_s"]).strftime("%Y-%m-%d %H:%M:%S UTC") if o["start_s"] else ""
        rows.append([o["worker"], o["step"], start, o["duration_s"], o["median_s"],
                     f"{o['ratio']:.1f}×" if o["ratio"] else ""])
    caption = (f"The {min(len(found), LISTED)} slowest of {len(found)} outlier steps" if len(found) > LISTED
               else f"{len(found)} outlier step(s), slowest first")
    return Table("outlier-steps", ["Node or rank", "Step", "Start", "Duration (s)", "Median step (s)", "× median"],
                 rows, ["text", "text", "text", "num2", "num2", "text"], caption=caption)
