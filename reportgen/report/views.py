"""Typed views of the section data that other rooms read (compare, the report's own cost section).

A section's ``data`` stays the plain dict report.json is made of (its keys and numbers exactly as
SageMaker's rule outputs give them); a view is the frozen, typed reading of the fields that more than
one room uses, so a renamed key fails in one place instead of reading ``None`` everywhere. Numbers are
kept as given (an ``int`` stays an ``int``: outputs do not move); anything that is not a number is None.
docs/architecture.md ("Typed contracts") lists what is viewed and what is not yet.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from reportgen.json_values import given, text
from reportgen.rule_outputs import USAGE_STATS  # the same statistics as the rule output lists


@dataclass(frozen=True)
class JobSummary:
    """The training-job-summary section's data (``summary.build``): the job's length and its phases."""

    available: bool = False
    job_duration_s: float | None = None
    initialization_s: float | None = None
    initialization_pct: float | None = None
    training_loop_duration_s: float | None = None
    training_loop_pct: float | None = None
    finalization_s: float | None = None
    finalization_pct: float | None = None

    @classmethod
    def of(cls, data: object) -> JobSummary:
        """The view of a section's ``data`` (a dict from ``build_report`` or a report.json; anything else: empty)."""
        if not isinstance(data, dict):
            return cls()
        numbers = {f.name: given(data.get(f.name)) for f in fields(cls) if f.name != "available"}
        return cls(available=bool(data) and data.get("available") is not False, **numbers)


@dataclass(frozen=True)
class CostFigures:
    """The cost section's data (``sections.cost.build``: ``RunCost.to_data`` and the price table's provenance),
    read by the diagnosis (the job's price and cost) and the "At a glance" block (instance, cost, currency)."""

    instance_type: str | None = None
    instance_count: float | None = None
    price_per_hour: float | None = None
    cost: float | None = None
    cost_rounded: float | None = None  # to the cent, as printed
    currency: str = "USD"  # the price table's (a --prices file in euros)

    @classmethod
    def of(cls, data: object) -> CostFigures:
        """The view of the section's ``data`` (anything but an object, as when the cost is not asked for: empty)."""
        if not isinstance(data, dict):
            return cls()
        prices = data.get("prices")
        return cls(text(data.get("instance_type")), given(data.get("instance_count")),
                   given(data.get("price_per_hour")), given(data.get("cost")), given(data.get("cost_rounded")),
                   str(prices.get("currency") or "USD") if isinstance(prices, dict) else "USD")


@dataclass(frozen=True)
class UsageRow:
    """One row of the system usage section's data (``rows``: one metric on one node, ``system_usage.rows_of``),
    read by compare's utilization section, ``trend`` and the CI Markdown. ``node`` is the row's node as text
    ("" when absent), ``metric`` and ``unit`` only when they are text."""

    node: str = ""
    metric: str | None = None
    unit: str | None = None
    max: float | None = None
    p99: float | None = None
    p95: float | None = None
    p90: float | None = None
    p50: float | None = None
    min: float | None = None

    def stat(self, name: str) -> float | None:
        return getattr(self, name) if name in USAGE_STATS else None


def usage_rows_of(data: object) -> list[UsageRow]:
    """The rows of a system usage section's ``data`` (from ``build_report`` or a report.json of any version:
    rows that are not objects are skipped, missing keys are None)."""
    rows = data.get("rows") if isinstance(data, dict) else None
    return [UsageRow("" if r.get("node") is None else str(r.get("node")), text(r.get("metric")), text(r.get("unit")),
                     **{k: given(r.get(k)) for k in USAGE_STATS})
            for r in (rows if isinstance(rows, list) else []) if isinstance(r, dict)]


STEP_STATS = ("mean", "max", "p99", "p95", "p50", "min")


@dataclass(frozen=True)
class StepNode:
    """One node of the step duration section's data (``nodes``: StepOutlier's statistics of a worker's steps),
    read by compare's step durations and the regression gate."""

    node: str
    phase: str | None = None  # "ProfilerStep" for PyTorch profiler steps (milliseconds long)
    mean: float | None = None  # seconds
    max: float | None = None
    p99: float | None = None
    p95: float | None = None
    p50: float | None = None
    min: float | None = None
    outliers: float | None = None  # number_of_outliers
    counts: list[Any] | None = None  # the histogram as written (``histogram.counts`` / ``.edges``), when lists
    edges: list[Any] | None = None

    def stat(self, name: str) -> float | None:
        return getattr(self, name) if name in STEP_STATS else None


def step_nodes_of(data: object) -> list[StepNode]:
    """The nodes of a step duration section's ``data``, in order (a node that is not an object is skipped)."""
    nodes = data.get("nodes") if isinstance(data, dict) else None
    found = []
    for node, info in (nodes if isinstance(nodes, dict) else {}).items():
        if not isinstance(info, dict):
            continue
        stats = _object(info.get("stats"))
        hist = _object(info.get("histogram"))
        counts, edges = hist.get("counts"), hist.get("edges")
        found.append(StepNode(str(node), info.get("phase") if isinstance(info.get("phase"), str) else None,
                              **{k: given(stats.get(k)) for k in STEP_STATS}, outliers=given(info.get("number_of_outliers")),
                              counts=counts if isinstance(counts, list) else None,
                              edges=edges if isinstance(edges, list) else None))
    return found


@dataclass(frozen=True)
class RuleRow:
    """One row of the rules summary's data (``rows``: a rule's counts, status and texts), read by the CI
    outputs (JUnit, Markdown, ``--fail-on``) and compare's rules section. Counts are numbers as given; a text
    is the value as text (None when absent), as the CI outputs always printed it."""

    rule: str | None = None  # None when absent or empty: a row without a rule
    times_triggered: float | None = None
    violations: float | None = None
    datapoints: float | None = None
    status: str | None = None  # fired / not_fired / not_evaluated (1.1: no_data)
    not_evaluated_reason: str | None = None
    parameters: str | None = None  # RuleParameters' text, one "name: value" a line
    finding: str | None = None
    recommendation: str | None = None


RULE_ROW_TEXTS = ("status", "not_evaluated_reason", "parameters", "finding", "recommendation")


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_text(value: object) -> str | None:
    return None if value is None else str(value)


def rule_rows_of(data: object) -> list[RuleRow]:
    """The rows of a rules summary's ``data``, in order (a row that is not an object is skipped)."""
    rows = data.get("rows") if isinstance(data, dict) else None
    return [RuleRow(str(r["rule"]) if r.get("rule") else None, given(r.get("times_triggered")),
                    given(r.get("violations")), given(r.get("datapoints")),
                    **{k: _as_text(r.get(k)) for k in RULE_ROW_TEXTS})
            for r in (rows if isinstance(rows, list) else []) if isinstance(r, dict)]
