"""Real raw smdebug traces (../shared/fixtures/raw) go through the engine into a report whose
numbers match an independent reading of the same files."""

from __future__ import annotations

import glob
import gzip
import json
from collections import Counter

import pytest

from reportgen.pipeline import generate
from tests.support.paths import RAW, need


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    made = {}

    def make(name):
        if name not in made:
            out = tmp_path_factory.mktemp(name) / "report.html"
            result = generate(str(need(RAW / name)), out)
            assert result.used == "raw data"
            made[name] = json.loads(result.json_path.read_text())["sections"]
        return made[name]
    return make


@pytest.mark.fixtures
def test_system_metrics_snapshots(reports):
    sections = reports("smdebug-sysmetrics")
    means = []
    for path in sorted(glob.glob(str(RAW / "smdebug-sysmetrics/system/incremental/*.json"))):
        values = [json.loads(line)["Value"] for line in open(path) if line.strip()]
        means.append(sum(values) / len(values))
    (cpu,) = [r for r in sections["system-usage-statistics"]["rows"] if r["metric"] == "CPU"]
    assert (cpu["node"], cpu["max"], cpu["min"]) == ("algo-1", round(max(means), 2), round(min(means), 2))
    assert sections["data-quality"]["problems"] == 0


@pytest.mark.fixtures
def test_tf_timeline_steps(reports):
    sections = reports("smdebug-tf-timeline")
    steps = 0
    for path in glob.glob(str(RAW / "smdebug-tf-timeline/framework/**/*_pythontimeline.json"), recursive=True):
        steps += sum(1 for e in json.load(open(path)) if e.get("ph") == "X" and "Step:ModeKeys" in e.get("name", ""))
    assert steps > 0
    rows = {r["rule"]: r for r in sections["rules-summary-section"]["rows"]}
    assert rows["StepOutlier"]["datapoints"] == steps
    assert set(sections["framework-metrics-summary"]["phase"]) >= {"Step:ModeKeys.TRAIN", "others"}


@pytest.mark.fixtures
def test_tf_profiler_trace_operators(reports):
    sections = reports("smdebug-tf-profiler-trace")
    (path,) = glob.glob(str(RAW / "smdebug-tf-profiler-trace/**/*.trace.json.gz"), recursive=True)
    events = json.load(gzip.open(path))["traceEvents"]
    process = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    totals = Counter()
    for e in events:
        if e.get("ph") == "X" and "cpu" in process.get(e.get("pid"), "").lower():
            totals[e["name"]] += e.get("dur", 0)
    grand = sum(totals.values())
    kept = {name: t for name, t in totals.items() if t / grand * 100 > 2}
    expected = sorted(((round(t / sum(kept.values()) * 100, 2), int(t), name) for name, t in kept.items()),
                      reverse=True)
    rows = sections["cpu-operators-overview"]["rows"]
    assert [(r["percentage"], r["time"], r["operator"]) for r in rows] == expected


@pytest.mark.fixtures
def test_horovod_timeline_unmatched_events_are_reported_not_fatal(reports):
    sections = reports("smdebug-horovod-timeline")
    assert sections["framework-metrics-summary"]["horovod"]
    quality = sections["data-quality"]["raw_data"]
    assert quality["total"] == sum(quality["by_reason"].values()) > 0
    assert all(p["file"].endswith("_horovod_timeline.json") for p in quality["problems"])
