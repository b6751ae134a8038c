"""The report's sentences about a rule, from the rulebook's wording (``reportgen.rulebook``)."""

from __future__ import annotations

from reportgen.diagnosis.evaluation import evaluate_rule
from reportgen.rulebook import BY_NAME


def rule_status(triggered, datapoints, parameters=(), details=None, rule: str = "", has_gpu=None) -> str:
    """``fired``, ``passed``, or ``not_evaluated`` (no datapoints, fewer than its patience/window, or data
    this job cannot have): see ``reportgen.diagnosis.evaluation``."""
    return evaluate_rule(rule, triggered or 0, datapoints or 0, parameters, details, has_gpu)[0]


def finding(rule: str, triggered, violations, datapoints, state: str | None = None, reason: str = "") -> str:
    """One line saying what the rule found, built from its counts (and why it was not evaluated)."""
    status = state or rule_status(triggered, datapoints)
    counts = f"{violations or 0} violations in {datapoints or 0} datapoints"
    if status == "fired":
        times = "once" if triggered == 1 else f"{triggered} times"
        symptom = BY_NAME[rule].symptom if rule in BY_NAME else None
        return f"{rule} fired {times} ({counts})" + (f": {symptom}." if symptom else ".")
    if status == "not_evaluated":
        return f"{rule} was not evaluated: {reason or 'it had no datapoints'}."
    return f"{rule} did not fire ({counts})."


def describe(rule: str) -> str:
    known = BY_NAME.get(rule)
    return known.description if known and known.description else "A rule this version of reportgen does not know."


def recommend(rule: str) -> str:
    known = BY_NAME.get(rule)
    return known.recommendation if known and known.recommendation else ""
