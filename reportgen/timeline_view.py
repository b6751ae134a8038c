"""The typed view of ``timeline.json`` (``engine.timeline``), read by the utilization-over-time section, the
report's choice of sections and the diagnosis (the series inside the loop, the slow steps).

timeline.json stays the plain document our engine writes and ``rule_outputs`` loads; this module is its one
reader: a node's bucket instants, series, heatmaps and bucket lengths, the framework phases and each worker's
slow steps, read leniently (a folder of rule outputs is input too: a value of the wrong type reads as empty or
None, never an error). Lists are kept as written (their items are checked where they are drawn or averaged);
numbers are finite floats or None. ``SlowSteps`` is also the type of the slow steps the diagnosis finds in a
trace rank (``engine.slow_steps``), so both sources are read alike. A light module beside ``rule_outputs`` and
``trace_ranks``: the page's process imports it without the engine. docs/architecture.md ("Typed contracts").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reportgen.json_values import as_items, as_object, finite

DEFAULT_BUDGET = "a fixed number of"  # said when timeline.json does not give its buckets per series


@dataclass(frozen=True)
class TimelineSeries:
    """One bucketed series of a node (``series[key]``): each bucket's mean, minimum and maximum, as written
    (empty when not a list)."""

    mean: list[Any] = field(default_factory=list)
    min: list[Any] = field(default_factory=list)
    max: list[Any] = field(default_factory=list)

    @classmethod
    def of(cls, value: object) -> TimelineSeries:
        found = as_object(value)
        return cls(as_items(found.get("mean")), as_items(found.get("min")), as_items(found.get("max")))


@dataclass(frozen=True)
class TimelineHeatmap:
    """A node's per-device heatmap (``gpu_heatmap`` / ``cpu_heatmap``): the row names and each row's bucket
    means, as written (empty when not a list)."""

    rows: list[Any] = field(default_factory=list)
    mean: list[Any] = field(default_factory=list)

    @classmethod
    def of(cls, value: object) -> TimelineHeatmap:
        found = as_object(value)
        return cls(as_items(found.get("rows")), as_items(found.get("mean")))


@dataclass(frozen=True)
class TimelineNode:
    """One node's time series (``nodes[node]``); a node that is not an object reads as one without buckets."""

    t: list[Any] = field(default_factory=list)  # each bucket's start, epoch seconds, as written
    bucket_s: float | None = None
    interval_s: float | None = None  # the sampling interval (timelines our engine wrote since it records it)
    series: dict[str, TimelineSeries] = field(default_factory=dict)
    gpu_heatmap: TimelineHeatmap = field(default_factory=TimelineHeatmap)
    cpu_heatmap: TimelineHeatmap = field(default_factory=TimelineHeatmap)

    @classmethod
    def of(cls, value: object) -> TimelineNode:
        found = as_object(value)
        return cls(as_items(found.get("t")), finite(found.get("bucket_s")), finite(found.get("interval_s")),
                   {str(key): TimelineSeries.of(s) for key, s in as_object(found.get("series")).items()},
                   TimelineHeatmap.of(found.get("gpu_heatmap")), TimelineHeatmap.of(found.get("cpu_heatmap")))


@dataclass(frozen=True)
class SlowStep:
    """One of a worker's listed slowest steps."""

    step: str
    start_s: float | None
    duration_s: float


@dataclass(frozen=True)
class SlowSteps:
    """One worker's slow steps (median + k·MAD, ``engine.slow_steps``): every number a finite float, the counts
    whole; ``slowest`` holds the listed ones with a duration, the slowest first."""

    steps: int
    count: int
    seconds_lost: float
    total_s: float
    median_s: float
    threshold_s: float
    slowest: list[SlowStep]
    period: int | None  # the slow steps' period in steps, when they come at one (2 or more)
    periodic_count: int
    mad_s: float | None

    @classmethod
    def of(cls, value: object) -> SlowSteps | None:
        """None unless every number the detectors read is a finite number, none negative, and some steps."""
        found = as_object(value)
        steps, count, lost, total, median, threshold = (
            finite(found.get("steps")), finite(found.get("count")), finite(found.get("seconds_lost")),
            finite(found.get("total_s")), finite(found.get("median_s")), finite(found.get("threshold_s")))
        if (steps is None or count is None or lost is None or total is None or median is None or threshold is None
                or min(steps, count, lost, total, median, threshold) < 0 or not steps):
            return None
        slowest = []
        for item in as_items(found.get("slowest")):
            duration = finite(item.get("duration_s")) if isinstance(item, dict) else None
            if duration is not None:
                slowest.append(SlowStep(str(item.get("step")), finite(item.get("start_s")), duration))
        period = finite(found.get("period"))
        return cls(int(steps), int(count), lost, total, median, threshold, slowest,
                   int(period) if period and period >= 2 else None, int(finite(found.get("periodic_count")) or 0),
                   finite(found.get("mad_s")))


@dataclass(frozen=True)
class Timeline:
    """The whole timeline.json: its nodes, its budget, the framework phases and the slow steps per worker."""

    nodes: dict[str, TimelineNode] = field(default_factory=dict)
    listed_nodes: bool = False  # whether ``nodes`` is given and not empty (an object or not)
    buckets_per_series: object = DEFAULT_BUDGET  # as written (an int from our engine)
    # worker -> phase kind -> its [start, end] spans (the kinds whose spans are a non-empty list)
    phases: dict[str, dict[str, list[list[Any]]]] = field(default_factory=dict)
    slow_steps: dict[str, SlowSteps] = field(default_factory=dict)  # worker -> its slow steps, when readable

    @classmethod
    def of(cls, document: object) -> Timeline:
        """The view of a loaded timeline.json (``RuleOutputs.timeline``; anything but an object: empty)."""
        found = as_object(document)
        raw_nodes = found.get("nodes")
        phases = {str(worker): {str(kind): [s for s in spans if isinstance(s, list) and len(s) == 2]
                                for kind, spans in as_object(kinds).items() if isinstance(spans, list) and spans}
                  for worker, kinds in as_object(found.get("phases")).items()}
        slow = {str(worker): steps for worker, entry in as_object(found.get("steps")).items()
                if (steps := SlowSteps.of(entry)) is not None}
        return cls({str(node): TimelineNode.of(data) for node, data in as_object(raw_nodes).items()},
                   bool(raw_nodes), as_object(found.get("budget")).get("buckets_per_series", DEFAULT_BUDGET),
                   phases, slow)
