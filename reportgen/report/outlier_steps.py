"""The outlier steps themselves: which step, on which node or rank, how long against the median.

StepOutlier's details carry them (``outliers``: step, start_s, duration_s; reportgen's addition to
SageMaker's schema, written by our engine and the trace analysis). The step-duration section lists
the slowest and the timeline marks each on its worker's training lane.
"""

from __future__ import annotations

from reportgen.formatting import utc
from reportgen.report.model import Table
from reportgen.report.util import as_dict, number
from reportgen.rule_outputs import RuleOutputs

LISTED = 20


def outlier_steps(outputs: RuleOutputs) -> list[dict]:
    """Every listed outlier step: worker, step, start_s (epoch s or None), duration_s, median_s, ratio;
    slowest first."""
    rule = outputs.get("StepOutlier")
    details = as_dict(rule.details) if rule else {}
    found = []
    for worker, info in as_dict(details.get("step_details")).items():
        info = as_dict(info)
        median = number(as_dict(info.get("step_stats")).get("p50"))
        for item in info.get("outliers") or []:
            item = as_dict(item)
            duration = number(item.get("duration_s"))
            if duration is None:
                continue
            found.append({"worker": str(worker), "step": str(item.get("step", "")),
                          "start_s": number(item.get("start_s")), "duration_s": duration, "median_s": median,
                          "ratio": duration / median if median else None})
    return sorted(found, key=lambda o: -o["duration_s"])


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
