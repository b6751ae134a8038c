"""Series sized for the screen (issue 32): every time series of the page is a fixed number of buckets
with min / max / mean envelopes, encoded compactly; the exact figures stay in the tables and report.json.

The reduction itself is the engine's (``engine.timeline``: at most 600 buckets per series whatever the
job's length); these tests check it on known data, one-sample spikes included, and that the charts'
compact encoding (a regular grid as ``x0``/``dx``, plotly.js typed arrays) carries the same numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from reportgen.engine.timeline import node_timeline
from reportgen.report import charts
from reportgen.timeline_view import TimelineSeries
from testdata.long_timeline import node_samples


def _line(series: dict, kind: str) -> charts.Line:
    """An engine-written series (``node_timeline``) as the timeline section draws it."""
    return charts.Line(series["mean"], series["min"], series["max"], kind)


def _raw_buckets(table, columns, how):
    """Per-bucket min / max / mean of a series computed here, from the raw ticks, with plain loops."""
    t = table.tick_ts
    values = table.take([table.columns.index(c) for c in columns])
    per_tick = np.nansum(values, axis=1) if how == "sum" else np.nanmean(values, axis=1)
    width = max(table.interval_s, (t[-1] - t[0]) / 600)
    buckets: dict[int, list[float]] = {}
    for ts, v in zip(t, per_tick):
        buckets.setdefault(min(int((ts - t[0]) // width), 599), []).append(float(v))
    return [(min(v), max(v), sum(v) / len(v)) for _, v in sorted(buckets.items())]


@pytest.fixture(scope="module")
def two_hours():
    """2 h at 0.5 s (14,400 samples, 24 per bucket), 4 cores, 2 GPUs, a one-sample spike in each series."""
    return node_samples("algo-1", cores=4, gpus=2, hours=2.0, seed=3)


def test_each_bucket_keeps_the_raw_series_min_max_and_mean(two_hours):
    table, _ = two_hours
    doc = node_timeline(table)
    assert len(doc["t"]) == 600 and doc["interval_s"] == 0.5 and doc["bucket_s"] == pytest.approx(12.0, abs=0.01)
    cases = {"gpu1/GPUUtilization": (["gpu1/GPUUtilization"], "mean"),
             "cpu_total": ([f"cpu{c}/CPUUtilization" for c in range(4)], "mean"),
             "network_algorithm": (["eth0/Algorithm"], "sum")}
    for key, (columns, how) in cases.items():
        raw = _raw_buckets(table, columns, how)
        series = doc["series"][key]
        nd = 0 if key.startswith("network") else 2
        assert len(raw) == len(series["mean"]) == 600, key
        # min and max exactly, rounded as the engine documents (numpy's rounding, to 2 decimals; bytes/s to 0)
        assert series["min"] == np.round([lo for lo, _, _ in raw], nd).tolist(), key
        assert series["max"] == np.round([hi for _, hi, _ in raw], nd).tolist(), key
        # the mean: the same to the last decimal kept (the engine adds in another order, so a mean that
        # falls on a rounding edge may round the other way)
        assert series["mean"] == pytest.approx([m for _, _, m in raw], abs=0.5001 * 10 ** -nd), key


def test_a_spike_of_one_sample_stays_visible_in_the_chart(two_hours):
    table, spikes = two_hours
    doc = node_timeline(table)
    at = spikes["gpu1/GPUUtilization"]
    bucket = int((table.tick_ts[at] - table.tick_ts[0]) // doc["bucket_s"])
    series = doc["series"]["gpu1/GPUUtilization"]
    assert series["max"][bucket] == 100.0 and series["mean"][bucket] < 90.0  # averaging alone would hide it
    figure = charts.time_lines(doc["t"], {"GPU": charts.Line(series["mean"], series["min"], series["max"], "gpu")}, "t", "%")
    top, bottom, mean = (charts.decode_array(trace["y"]) for trace in figure["data"])
    assert top[bucket] == 100.0 and max(top) == 100.0
    # utilization has two decimals: whole hundredths in u2, the same numbers exactly
    assert [trace["y"]["dtype"] for trace in figure["data"]] == ["u2"] * 3
    assert top == series["max"] and bottom == series["min"] and mean == series["mean"]


def test_the_bucket_instants_travel_as_a_regular_grid(two_hours):
    table, _ = two_hours
    doc = node_timeline(table)
    figure = charts.time_lines(doc["t"], {"CPU": _line(doc["series"]["cpu_total"], "cpu")}, "t", "%")
    step = doc["bucket_s"] * 1000.0
    for trace in figure["data"]:
        assert "x" not in trace and trace["dx"] == pytest.approx(step, abs=1.0)
        rebuilt = charts.x_values(trace)
        assert len(rebuilt) == 600
        assert max(abs(a - b * 1000.0) for a, b in zip(rebuilt, doc["t"])) <= charts.GRID_TOLERANCE * step
    heat = charts.heatmap(doc["t"], doc["cpu_heatmap"]["rows"], doc["cpu_heatmap"]["mean"], "t", columns=600)
    assert heat["data"][0]["x0"] == figure["data"][0]["x0"] and len(charts.x_values(heat["data"][0])) == 600


def test_a_series_with_missing_buckets_keeps_its_instants():
    """A node that stopped reporting for a while: its buckets are not one grid, so each keeps its instant."""
    t = [0.0, 10.0, 20.0, 50.0, 60.0]
    figure = charts.time_lines(t, {"s": charts.Line([1, 2, 3, 4, 5], [0] * 5, [9] * 5)}, "t", "%")
    assert [trace["x"] for trace in figure["data"]] == [[0.0, 10000.0, 20000.0, 50000.0, 60000.0]] * 3
    assert charts.regular_grid([0.0, 1000.0, 2000.0, 3000.4]) == (0.0, pytest.approx(1000.13, abs=0.01))
    assert charts.regular_grid([0.0, 1000.0, 2100.0, 3000.0]) is None  # 10 % of a step off the grid
    assert charts.regular_grid([0.0, 1000.0]) is None and charts.regular_grid([0.0, None, 2.0]) is None


def test_heatmap_cells_are_whole_percents_in_a_typed_array():
    spec = charts.percent_matrix([[0.0, 49.6, 100.0, 12.4], [3.5, 2.49, 99.5, 50.0]])
    assert spec["dtype"] == "u1" and spec["shape"] == "2,4"
    assert charts.decode_array(spec) == [0, 50, 100, 12, 4, 2, 100, 50]
    # a gap or a value outside 0-100 keeps the plain lists, rounded the same way
    assert charts.percent_matrix([[1.4, None], [float("nan"), 7.6]]) == [[1, None], [None, 8]]
    assert charts.percent_matrix([[101.2, 3.0]]) == [[101, 3]]


def test_line_values_are_float32_typed_arrays_unless_they_have_gaps():
    values = [0.01 * i for i in range(20)] + [123456789.0]  # 0.01 * 3 is 0.030000000000000002: not hundredths
    spec = charts.float_array(values)
    assert spec["dtype"] == "f4" and len(spec["bdata"]) == 4 * math.ceil(21 * 4 / 3)  # 84 bytes
    assert charts.decode_array(spec) == pytest.approx(values, rel=1e-7)
    assert charts.float_array([1.0, None] * 8) == [1.0, None] * 8
    assert charts.float_array([1.0, 2.0]) == [1.0, 2.0]  # too short to pay for the wrapper


def test_line_values_with_two_decimals_travel_exactly_as_whole_hundredths():
    """Utilization rounded by the engine to two decimals: u2 of hundredths (2 bytes a value, not float32's
    4), decoded by dividing (charts.js does the same) to the very numbers of timeline.json."""
    percents = [0.0, 12.34, 99.99, 100.0, 0.05, 55.5, 7.0, 42.42, 65.35]
    spec = charts.float_array(percents)
    assert spec["dtype"] == "u2" and spec["decimals"] == 2 and len(spec["bdata"]) == 4 * math.ceil(9 * 2 / 3)
    assert charts.decode_array(spec) == percents  # equal, not approximately
    # the fewest decimals that hold them: tenths, units (u1 up to 255, u2 above)
    tenths = charts.float_array([0.5, 12.3, 100.0] * 3)
    assert (tenths["dtype"], tenths["decimals"], charts.decode_array(tenths)) == ("u2", 1, [0.5, 12.3, 100.0] * 3)
    units = charts.float_array([0.0, 17.0, 255.0] * 3)
    assert units["dtype"] == "u1" and "decimals" not in units and charts.decode_array(units) == [0, 17, 255] * 3
    assert charts.float_array([0.0, 256.0] * 4)["dtype"] == "u2"
    # not held exactly by u1/u2: float32, as before
    assert charts.float_array([0.001 * i for i in range(1, 10)])["dtype"] == "f4"  # three decimals
    assert charts.float_array([-1.5] + percents)["dtype"] == "f4"  # negative
    assert charts.float_array([655.36] + percents)["dtype"] == "f4"  # 65,536 hundredths
    assert charts.float_array([3e9] + [1.0] * 8)["dtype"] == "f4"  # bytes/s past u2


def test_the_gpu_panel_mean_is_rounded_to_its_inputs_two_decimals():
    """The GPU panel's line is the mean of the GPUs' means; rounded to the two decimals they have (0.005
    points at most), it travels as whole hundredths too. The band keeps every GPU's exact minimum and maximum."""
    from reportgen.report.sections.timeline import gpu_panel

    series = {f"gpu{g}/GPUUtilization": TimelineSeries([10.01 + g, 20.0], [g * 1.0, 3.33], [50.0 + g, 99.99])
              for g in range(3)}
    line = gpu_panel(series)["GPU utilization (mean of GPUs)"]
    assert line.mean == [11.01, 20.0] and line.min == [0.0, 3.33] and line.max == [52.0, 99.99] and line.kind == "gpu"
    series["gpu0/GPUUtilization"] = TimelineSeries([10.0, 20.0], [0.0, 3.33], [50.0, 99.99])  # (10 + 11.01 + 12.01) / 3
    assert gpu_panel(series)["GPU utilization (mean of GPUs)"].mean == [11.01, 20.0]


def test_heatmap_columns_merge_to_the_screen_and_keep_the_means():
    t = [1000.0 + 12.0 * i for i in range(600)]
    rows = [[float(i % 7) * 10 for i in range(600)], [None] * 3 + [50.0] * 597]
    trace = charts.heatmap(t, ["cpu0", "cpu1"], rows, "t")["data"][0]
    assert trace["z"] == [[round((a + b + c) / 3) for a, b, c in zip(*[iter(rows[0])] * 3)], [None] + [50] * 199]
    # a merged cell is centred on its three buckets' cells: the first spans [x0 - step/2, x0 + 2.5 steps]
    assert trace["x0"] == pytest.approx(1_012_000.0) and trace["dx"] == pytest.approx(36_000.0)
    assert len(charts.x_values(trace)) == 200
    # few buckets, or instants off the grid: every bucket stays a column
    assert len(charts.heatmap(t[:150], ["cpu0"], [rows[0][:150]], "t")["data"][0]["z"]["bdata"]) == 200
    assert charts.merge_columns([[1.0, None, 3.0, None, None]], 2) == [[1.0, 3.0, None]]


def test_the_page_of_a_long_many_node_job_stays_under_two_megabytes(tmp_path, sample_rule_outputs):
    """8 nodes x 8 h, 96 cores and 8 GPUs each (the page of a 16-node job: benchmarks/README.md). The
    page's size does not depend on the sampling interval (600 buckets per series whatever it is), so
    the samples here are 2 s apart: the timeline is the engine's own bucketing of 14,400 samples a
    series instead of 57,600, four times quicker to make."""
    import json
    import shutil

    from reportgen.pipeline import generate
    from testdata.long_timeline import long_job_timeline

    outputs = tmp_path / "outputs"
    shutil.copytree(sample_rule_outputs.parent, outputs)  # the engine's outputs of sample_data, made once
    timeline = long_job_timeline(nodes=8, cores=96, gpus=8, hours=8.0, interval_s=2.0)
    (outputs / "timeline.json").write_text(json.dumps(timeline))
    page = tmp_path / "report.html"
    generate(str(outputs), page)
    html = page.read_text(encoding="utf-8")
    assert html.count('class="chart-spec"') >= 8 * 5  # every node's panels and heatmaps are there
    # said once: every node has the same buckets and sampling interval
    assert html.count("Each point of these charts summarises 48 s: about 24 samples, one every 2 s on every node.") == 1
    assert page.stat().st_size <= 2_000_000, page.stat().st_size


def test_every_chart_of_the_sample_report_uses_a_trace_type_of_the_bundle():
    """The page's plotly.js holds only ``PLOTLY_TRACES`` (scripts/build_plotly.sh): a chart of any other
    type would draw nothing. Every chart of the sample report, whichever builder made it."""
    from reportgen.notebook import open_report
    from reportgen.resources import PLOTLY_TRACES
    from tests.support.paths import ROOT

    report = open_report(str(ROOT / "sample_data")).report
    used = {trace.get("type", "scatter") for section in report.sections for chart in section.charts()
            for trace in chart.figure["data"]}
    assert {"scatter", "heatmap", "bar", "box"} <= used <= PLOTLY_TRACES


def test_even_histogram_bins_travel_as_a_grid_and_one_width():
    """StepOutlier's 100 even bins per node (numpy's linspace edges, float noise in the last digits) as
    ``x0``/``dx`` and one bar width: the bars plotly rebuilds sit where the edges say, to 1e-6 of a bin."""
    import numpy as np

    edges = np.linspace(0.33903628, 0.45929228, 101).tolist()
    counts = list(range(100))
    trace = charts.histograms({"algo-1": (counts, edges)}, "t", "s")["data"][0]
    assert "x" not in trace and trace["y"] == counts
    step = (edges[-1] - edges[0]) / 100
    assert trace["dx"] == pytest.approx(step, rel=1e-9) and trace["width"] == trace["dx"]
    assert trace["x0"] == pytest.approx((edges[0] + edges[1]) / 2, rel=1e-12)
    rebuilt = charts.x_values(trace)
    assert max(abs(x - (a + b) / 2) for x, a, b in zip(rebuilt, edges, edges[1:])) <= 1e-6 * step
    # uneven bins keep their centres and widths
    uneven = charts.histograms({"n": ([1, 2, 3], [0.0, 1.0, 3.0, 4.0])}, "t", "s")["data"][0]
    assert uneven["x"] == [0.5, 2.0, 3.5] and uneven["width"] == [1.0, 2.0, 1.0] and "x0" not in uneven
    assert "x0" not in charts.histograms({"n": ([1, 2, 3], [0.0, 1.0, 2.0, 3.3])}, "t", "s")["data"][0]


def test_merged_buckets_keep_the_raw_series_min_max_and_mean():
    """A page of many nodes merges timeline.json's buckets k at a time (``charts.merge_buckets``): each point's
    minimum and maximum are the raw samples' over its k buckets exactly, its mean their samples' mean where
    the buckets hold equally many samples. 14,401 samples at 0.5 s: 600 buckets of exactly 12 s, 24 samples
    each (the last 25); merged 4 at a time, 150 points of 96 samples."""
    table, spikes = node_samples("algo-1", cores=4, gpus=2, hours=14401.5 * 0.5 / 3600, seed=5)
    doc = node_timeline(table)
    assert doc["bucket_s"] == 12.0 and len(doc["t"]) == 600
    k = 4
    cores = [f"cpu{c}/CPUUtilization" for c in range(4)]
    per_tick = np.nanmean(table.take([table.columns.index(c) for c in cores]), axis=1)
    point = np.minimum(((table.tick_ts - table.tick_ts[0]) // 12.0).astype(int), 599) // k
    raw = [per_tick[point == j] for j in range(150)]
    merged = charts.merge_buckets(_line(doc["series"]["cpu_total"], "cpu"), k)
    assert len(merged.mean) == len(merged.min) == len(merged.max) == 150
    assert merged.min == np.round([r.min() for r in raw], 2).tolist()  # rounded as the engine rounds
    assert merged.max == np.round([r.max() for r in raw], 2).tolist()
    # the mean: the raw samples' to 0.01 (the engine's rounding of each bucket mean to two decimals, 0.005,
    # and the merged mean's own, 0.005); the last point's buckets hold 24, 24, 24 and 25 samples
    assert merged.mean[:-1] == pytest.approx([float(r.mean()) for r in raw[:-1]], abs=0.0101)
    assert merged.mean == [round(v, 2) for v in merged.mean]  # rounded to the means' own decimals
    # the one-sample spike: still at full height in its merged point, far above the point's mean
    at = spikes["gpu1/GPUUtilization"]
    gpu = charts.merge_buckets(_line(doc["series"]["gpu1/GPUUtilization"], "gpu"), k)
    assert gpu.max[point[at]] == 100.0 and gpu.mean[point[at]] < 90.0
    # drawn: 150 points a trace, four buckets apart, u2 hundredths
    figure = charts.time_lines(doc["t"], {"CPU": _line(doc["series"]["cpu_total"], "cpu")}, "t", "%", merge=k)
    top, bottom, mean = (charts.decode_array(trace["y"]) for trace in figure["data"])
    assert (top, bottom, mean) == (merged.max, merged.min, merged.mean)
    assert figure["data"][0]["dx"] == pytest.approx(4 * 12_000.0, abs=1.0) and figure["data"][0]["x0"] == doc["t"][0] * 1000


def test_merging_skips_gaps_and_keeps_a_run_of_gaps_a_gap():
    agg = charts.Line([1.0, None, 3.0, None, None, None, 5.25], [0.5, None, 2.0, None, None, None, 5.0],
                      [2.0, None, 9.0, None, None, None, 6.0], "cpu")
    assert charts.merge_buckets(agg, 3) == charts.Line([2.0, None, 5.25], [0.5, None, 5.0], [9.0, None, 6.0], "cpu")
    # bytes/s, whole numbers: the merged mean keeps none of a float's tail
    assert charts.merge_buckets(charts.Line([1.0, 2.0, 2.0, 2.0]), 3) == charts.Line([2.0, 2.0])
    assert charts.merge_buckets(charts.Line([0.001, 0.002]), 2).mean == [pytest.approx(0.0015)]


def _nodes_timeline(nodes: int) -> dict:
    t = [1_700_000_000.0 + 12.0 * i for i in range(600)]
    line = {"mean": [50.25] * 600, "min": [10.0] * 600, "max": [90.5] * 600}
    node = {"t0": t[0], "bucket_s": 12.0, "interval_s": 0.5, "t": t,
            "series": {"cpu_total": line, "network_algorithm": {"mean": [2e8] * 600, "min": [1e8] * 600,
                                                                "max": [3e8] * 600}},
            "cpu_heatmap": {"rows": ["cpu0", "cpu1"], "mean": [[40.0] * 600, [60.0] * 600]}}
    return {"budget": {"buckets_per_series": 600}, "nodes": {f"algo-{i + 1}": node for i in range(nodes)}}


@pytest.mark.parametrize("nodes, points, columns", [(2, 600, 200), (16, 600, 200), (17, 300, 100), (32, 300, 100),
                                                    (64, 150, 50), (96, 100, 34), (500, 100, 34)])
def test_a_page_of_many_nodes_shares_one_budget_of_points(nodes, points, columns):
    """Up to 16 nodes every series has all of timeline.json's 600 buckets (the page unchanged); past that, the
    buckets are merged ceil(nodes / 16) at a time (at most 6: 100 points a line) and the heatmaps have as many
    times fewer columns, so the node charts of 64 nodes weigh about what 16 nodes' do. The page says so."""
    from pathlib import Path

    from reportgen.report.sections.timeline import build
    from reportgen.rule_outputs import RuleOutputs

    section = build(RuleOutputs(folder=Path("job"), timeline=_nodes_timeline(nodes)))
    lines = [c.figure for c in section.charts() if c.id.startswith(("timeline-util-", "timeline-net-"))]
    heat = [c.figure for c in section.charts() if c.id.startswith("timeline-cpu_heatmap-")]
    assert len(lines) == 2 * nodes and len(heat) == nodes
    assert {len(charts.decode_array(trace["y"])) for f in lines for trace in f["data"]} == {points}
    assert {charts.decode_array(f["data"][0]["z"]).__len__() for f in heat} == {2 * columns}
    text = " ".join(block.text for block in section.blocks if hasattr(block, "text"))
    merge = 600 // points
    seconds = f"{12 * merge:.3g} s" if 12 * merge < 120 else f"{12 * merge / 60:.3g} min"
    assert f"Each point of these charts summarises {seconds}: about {24 * merge} samples, one every 0.5 s on every node." in text
    if merge == 1:
        assert "in at most 600 time buckets per series:" in text
    else:
        assert (f"in at most {points} points per series (timeline.json's 600 time buckets, {merge} to a point: "
                f"the page's {nodes} nodes share one budget of points)") in text


def test_jupyter_gets_the_numbers_themselves_not_hundredths(sample_rule_outputs):
    """Whole hundredths are divided back by the page's chart loader only: the live charts of a notebook
    (Jupyter's plotly renderer) and ``report.figures`` get plain numbers, timeline.json's, exactly."""
    import json

    import plotly.graph_objects as go

    from reportgen.notebook import open_report

    node = json.loads((sample_rule_outputs.parent / "timeline.json").read_text())["nodes"]["algo-1"]
    session = open_report(str(sample_rule_outputs.parent))
    page = next(c.figure for c in session.report.section("utilization-over-time").charts()
                if c.id == "timeline-util-algo-1")
    assert page["data"][2]["y"]["decimals"] == 2  # the page's spec: u2 hundredths
    figure = next(f for f in session.figures("utilization-over-time") if f.layout.title.text.startswith("CPU, memory"))
    assert isinstance(figure, go.Figure)
    assert list(figure.data[2].y) == node["series"]["cpu_total"]["mean"]
    assert list(figure.data[0].y) == node["series"]["cpu_total"]["max"]
    assert page["data"][2]["y"]["decimals"] == 2  # the report's own figure is left as it was
    # float32 arrays, which plotly decodes itself, are passed on as they are
    spec = {"data": [{"y": {"dtype": "f4", "bdata": "AACAPw=="}}, {"y": [1, 2]}], "layout": {}}
    assert charts.for_plotly(spec) == spec
