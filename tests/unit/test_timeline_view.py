"""The typed view of timeline.json (``timeline_view.Timeline``), read by the utilization-over-time section, the
report's choice of sections and the diagnosis: built from the engine's timeline of the sample job, from the slow
steps the engine finds, and from documents with missing and garbage values, which read as empty or None, never
raise."""

from __future__ import annotations

import json

import pytest

from reportgen.engine.slow_steps import slow_steps
from reportgen.timeline_view import (DEFAULT_BUDGET, SlowStep, SlowSteps, Timeline, TimelineHeatmap, TimelineNode,
                                     TimelineSeries)

HUGE = 10**400


def test_the_engines_timeline_of_the_sample_job(sample_rule_outputs):
    doc = json.loads((sample_rule_outputs.parent / "timeline.json").read_text())
    view = Timeline.of(doc)
    assert list(view.nodes) == ["algo-1", "algo-2"] and view.listed_nodes
    assert view.buckets_per_series == 600  # as written: the section keeps it in report.json
    node = view.nodes["algo-1"]
    raw = doc["nodes"]["algo-1"]
    assert node.t is raw["t"] and len(node.t) == 600  # the list as written, not a copy
    assert node.bucket_s == raw["bucket_s"] and node.interval_s == raw["interval_s"]
    assert list(node.series) == list(raw["series"]) and "cpu_total" in node.series
    cpu = node.series["cpu_total"]
    assert (cpu.mean, cpu.min, cpu.max) == (raw["series"]["cpu_total"]["mean"], raw["series"]["cpu_total"]["min"],
                                            raw["series"]["cpu_total"]["max"])
    assert node.cpu_heatmap.rows == raw["cpu_heatmap"]["rows"] and len(node.cpu_heatmap.rows) == 4
    assert node.gpu_heatmap.rows == raw["gpu_heatmap"]["rows"]
    # the phases: per worker and kind the [start, end] spans; the slow steps per worker, typed
    assert set(view.phases) == set(doc["phases"])
    worker = next(iter(doc["phases"]))
    assert view.phases[worker]["train"] == doc["phases"][worker]["train"]
    assert set(view.slow_steps) == set(doc["steps"])
    slow = next(iter(view.slow_steps.values()))
    raw_slow = next(iter(doc["steps"].values()))
    assert (slow.steps, slow.count, slow.median_s, slow.seconds_lost) == (
        raw_slow["steps"], raw_slow["count"], raw_slow["median_s"], raw_slow["seconds_lost"])
    assert [s.step for s in slow.slowest] == [s["step"] for s in raw_slow["slowest"]]


def test_the_slow_steps_the_engine_finds_read_the_same():
    durations = [1.0] * 40
    for i in (9, 19, 29, 39):
        durations[i] = 3.0
    found = slow_steps(list(range(40)), [str(i) for i in range(40)], [float(i) for i in range(40)], durations)
    view = SlowSteps.of(found)
    assert view is not None and (view.steps, view.count, view.period, view.periodic_count) == (40, 4, 10, 4)
    assert view.median_s == 1.0 and view.seconds_lost == 8.0 and view.total_s == 48.0 and view.mad_s == 0.0
    assert view.slowest[0] == SlowStep("9", 9.0, 3.0) and len(view.slowest) == 4


def test_garbage_reads_as_empty_never_an_error():
    assert Timeline.of(None) == Timeline() and Timeline.of([1, 2]) == Timeline()
    assert Timeline().buckets_per_series == DEFAULT_BUDGET and not Timeline().listed_nodes
    odd = Timeline.of({"nodes": {"a": [1], "b": {"t": "abc", "bucket_s": HUGE, "interval_s": float("nan"),
                                                   "series": {"x": [1], "y": {"mean": 5, "min": [1], "max": None}},
                                                   "cpu_heatmap": {"rows": "r", "mean": [[1.0]]}}},
                       "budget": {"buckets_per_series": "many"},
                       "phases": {"w": {"train": [[1, 2], [3], "x"], "eval": [], "load": "x"}, "v": 3}})
    assert odd.listed_nodes and odd.nodes["a"] == TimelineNode()  # a node that is no object: no buckets
    b = odd.nodes["b"]
    assert b.t == [] and b.bucket_s is None and b.interval_s is None
    assert b.series == {"x": TimelineSeries(), "y": TimelineSeries([], [1], [])}
    assert b.cpu_heatmap == TimelineHeatmap([], [[1.0]]) and b.gpu_heatmap == TimelineHeatmap()
    assert odd.buckets_per_series == "many"  # as written
    assert odd.phases == {"w": {"train": [[1, 2]]}, "v": {}}  # kinds with a non-empty list of spans, spans of two
    # "nodes" given but not an object: listed (the report says raw data was read), no nodes to draw
    assert Timeline.of({"nodes": [1]}) == Timeline({}, True)


@pytest.mark.parametrize("entry", [
    None, [], {}, {"steps": 0, "count": 0, "seconds_lost": 0, "total_s": 0, "median_s": 0, "threshold_s": 0},
    {"steps": 30, "count": -1, "seconds_lost": 0, "total_s": 1, "median_s": 1, "threshold_s": 1},
    {"steps": 30, "count": 1, "seconds_lost": HUGE, "total_s": 1, "median_s": 1, "threshold_s": 1},
    {"steps": 30, "count": 1, "seconds_lost": 1, "total_s": 1, "median_s": "1", "threshold_s": 1},
])
def test_slow_steps_without_every_number_are_none(entry):
    assert SlowSteps.of(entry) is None
    assert Timeline.of({"steps": {"w": entry}}).slow_steps == {}


def test_slow_steps_keep_the_listed_steps_with_a_duration():
    entry = {"steps": 30.0, "count": 2.0, "seconds_lost": 1.5, "total_s": 31.5, "median_s": 1.0, "threshold_s": 1.2,
             "period": 1, "periodic_count": "x", "mad_s": None,
             "slowest": [{"step": 7, "start_s": "t", "duration_s": 2.0}, {"step": 8}, "x", {"duration_s": 1.5}]}
    view = SlowSteps.of(entry)
    assert view is not None and (view.steps, view.count) == (30, 2) and isinstance(view.steps, int)
    assert view.period is None and view.periodic_count == 0 and view.mad_s is None  # a period of 1 is none
    assert view.slowest == [SlowStep("7", None, 2.0), SlowStep("None", None, 1.5)]
