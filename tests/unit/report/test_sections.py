"""Section builders on hand-made rule outputs: exact numbers, absent data, odd data."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.render.blocks import render_section
from reportgen.report.build import build_report
from reportgen.report.sections import BUILDERS
from reportgen.report.model import Chart, Table, Text, leaves
from reportgen.report.sections import bottlenecks, framework, operators, rules_summary, steps, summary, system_usage
from reportgen.rule_outputs import RuleOutput, RuleOutputs


def outputs(**rules) -> RuleOutputs:
    made = RuleOutputs(folder=Path("job"))
    for name, spec in rules.items():
        made.rules[name] = RuleOutput(name=name, triggered=spec.get("triggered", 0),
                                      violations=spec.get("violations", 0), details=spec.get("details", {}),
                                      datapoints=spec.get("datapoints", 0), parameters_text=spec.get("params", ""))
    return made


def texts(section) -> list[str]:
    return [b.text for b in leaves(section.blocks) if isinstance(b, Text)]


def tables(section) -> dict[str, Table]:
    return {b.id: b for b in section.tables()}


def test_summary_numbers_truncate_like_the_original():
    details = {"job_start": 1000.9, "job_end": 2001.0,
               "step_num": {"first": 1_300_500_000, "last": 1_999_000_000}}
    got = summary.compute(details)
    assert got["job_duration_s"] == 1000          # int(1000.1)
    assert got["initialization_s"] == 299         # int(1300.5 - 1000.9)
    assert got["finalization_s"] == 2             # int(|2001.0 - 1999.0|)
    assert got["training_loop_duration_s"] == 698  # int(698.5)
    assert (got["initialization_pct"], got["training_loop_pct"], got["finalization_pct"]) == (29, 69, 0)


def test_summary_zero_length_job_does_not_divide_by_zero():
    got = summary.compute({"job_start": 5.0, "job_end": 5.0, "step_num": {"first": 5_000_000, "last": 5_000_000}})
    assert got["job_duration_s"] == 0 and got["training_loop_pct"] == 0


def test_summary_without_steps_shows_three_rows_and_says_why():
    section = summary.build(outputs(MaxInitializationTime={"details": {"job_start": 0.0, "job_end": 60.0,
                                                                        "step_num": {}}}))
    assert [row[0] for row in tables(section)["job-summary"].rows] == ["Start time", "End time", "Job duration"]
    assert any("No step information" in t for t in texts(section))
    assert texts(section)[0].count("ran for 1 min 0 s") == 1  # the original printed this sentence twice


def test_summary_missing_rule_says_so_in_one_line():
    section = summary.build(outputs())
    assert len(section.blocks) == 1 and section.blocks[0].tone == "missing"


def test_system_usage_rows_are_metric_major_and_p90_appears_when_present():
    details = {"CPU": {"algo-1": {"max": 90, "p99": 80, "p95": 75, "p90": 71, "p50": 40, "min": 0},
                       "algo-2": {"max": 50, "p99": 45, "p95": 41, "p90": 40, "p50": 20, "min": 0}},
               "GPU": {}, "I/O": {"algo-1": {"max": 1, "p99": 1, "p95": 1, "p90": 1, "p50": 0, "min": 0}}}
    section = system_usage.build(outputs(OverallSystemUsage={"details": details}))
    table = tables(section)["system-usage"]
    assert table.columns == ["node", "metric", "unit", "max", "p99", "p95", "p90", "p50", "min"]
    assert [(r[0], r[1]) for r in table.rows] == [("algo-1", "CPU"), ("algo-2", "CPU"), ("algo-1", "I/O")]
    # CPU-only nodes get a sentence too (the original printed none for them)
    sentences = texts(section)
    assert any("Node algo-1 has no GPU metrics" in t and "75 %" in t and "well utilized" in t for t in sentences)
    assert any("Node algo-2 has no GPU metrics" in t and "only 41 %" in t for t in sentences)


def test_system_usage_sentence_branches():
    from reportgen.rule_outputs import NodeUsage

    def usage(metric, p95, p50):
        return NodeUsage(metric, "n", p95=p95, p50=p50)

    assert "starved" in system_usage.node_sentence("n", usage("GPU", 50, 10), usage("CPU", 80, 50))
    assert "well utilized" in system_usage.node_sentence("n", usage("GPU", 99, 90), usage("CPU", 70, 50))
    assert "median GPU utilization is 40 % and the median CPU utilization 50 %" in \
        system_usage.node_sentence("n", usage("GPU", 99, 40), usage("CPU", 70, 50))
    assert "only 41 %" in system_usage.node_sentence("n", None, usage("CPU", 41, 20))
    assert system_usage.node_sentence("n", usage("GPU", None, 40), None) is None


def test_operator_rows_sorted_and_empty_breakdown_is_not_a_crash():
    details = {"CPU": {"a": 30.0, "b": 70.0}, "CPU_total": {"a": 300, "b": 700}, "GPU": {}, "GPU_total": {}}
    made = outputs(OverallFrameworkMetrics={"details": details})
    assert operators.operator_rows(details, "CPU") == [
        {"percentage": 70.0, "time": 700, "operator": "b"}, {"percentage": 30.0, "time": 300, "operator": "a"}]
    gpu = operators.build_gpu(made)
    assert gpu.blocks[0].tone == "missing"


def test_rules_summary_ties_follow_profiler_report_order_and_none_fired_is_said():
    made = outputs(StepOutlier={"datapoints": 5}, BatchSize={"datapoints": 7}, CPUBottleneck={"datapoints": 9},
                   OverallSystemUsage={})
    rows = rules_summary.summary_rows(made)
    assert [r["rule"] for r in rows] == ["CPUBottleneck", "StepOutlier", "BatchSize"]
    # StepOutlier's 5 steps are too few for it to judge a node: not evaluated, so no all-clear for it
    assert texts(rules_summary.build(made))[0] == (
        "None of the 2 evaluated rules fired. 1 could not be evaluated with this data (StepOutlier): "
        "see the Status column.")


def test_framework_ratio_text_names_the_largest_share():
    details = {"ratio": {"cpu_functions": 20.0, "gpu_functions-dev:0": 80.0}}
    section = framework.build(outputs(OverallFrameworkMetrics={"details": details}))
    assert any("80.0 % was spent in \u201cgpu_functions-dev:0\u201d" in t for t in texts(section))
    # two shares of the whole job alone: the sentence above says it, no chart
    assert section.charts() == [] and len(texts(section)) == 1


def test_framework_breakdowns_drawn_once_with_a_bar_per_context_and_one_slice_as_a_sentence():
    """The TRAIN/EVAL and general-operations pies appeared three times (summary, outlier steps, CPU
    bottlenecks) with the same titles; now one chart per breakdown compares the contexts, the deep
    dives refer back to it, and a breakdown with one slice is a sentence."""
    general = {"Forward": 40.0, "Backward": 60.0}
    made = outputs(OverallFrameworkMetrics={"details": {"general": general, "phase": {"Step:ModeKeys.TRAIN": 100.0}}},
                   StepOutlier={"triggered": 3, "details": {"general": {"Forward": 10.0, "Backward": 90.0},
                                                            "step_details": {"algo-1": {"step_stats": {"mean": 1.0}}}}},
                   CPUBottleneck={"triggered": 0, "details": {"general": {"Forward": 1.0, "Backward": 99.0}}})
    section = framework.build(made)
    chart, = section.charts()
    assert [(t["name"], t["y"], t["x"]) for t in chart.figure["data"]] == [
        ("Forward", ["Outlier steps", "Whole job"], [10.0, 40.0]),
        ("Backward", ["Outlier steps", "Whole job"], [90.0, 60.0])]
    assert chart.numbers.rows == [["Forward", "40.0 %", "10.0 %"], ["Backward", "60.0 %", "90.0 %"]]
    assert ("TRAIN/EVAL phases and others, whole job: all of it (100.0 %) was \u201cStep:ModeKeys.TRAIN\u201d."
            in texts(section))
    dive = steps.build(made)
    assert not [c for c in dive.charts() if c.id.startswith("steps-")]
    refer = [b for b in dive.blocks if isinstance(b, Text) and b.link == "#sec-framework-metrics-summary"]
    assert refer and "\u201cBackward\u201d took the largest share, 90.0 %" in refer[0].text


def test_cpu_bottleneck_pie_uses_the_bottleneck_count():
    details = {"low_gpu_utilization": 600, "bottlenecks": {str(i): {"GPUs": 1, "CPUs": 1} for i in range(550)}}
    made = outputs(CPUBottleneck={"triggered": 2, "violations": 550, "datapoints": 1000, "details": details,
                                  "params": "threshold:50\ncpu_threshold:90\ngpu_threshold:10\npatience:1000"})
    section = bottlenecks.build_cpu(made)
    bar = next(b for b in section.blocks if isinstance(b, Chart))
    assert [t["x"] for t in bar.figure["data"]] == [[40.0], [5.0], [pytest.approx(55.0)]]
    assert [row[1] for row in bar.numbers.rows] == [400, 50, 550]
    assert section.data["percent_of_datapoints"] == 55
    assert any("55 % of all datapoints, above the threshold of 50 %" in t for t in texts(section))


def test_garbage_details_still_give_a_whole_report():
    junk = {"details": {"algo-1": "not a dict", "step_details": [1, 2], "ratio": "x", "CPU": None,
                        "job_start": "yesterday", "bottlenecks": 5, "workloads": {"gpu0": "x"}},
            "datapoints": 3}
    made = outputs(**{name: junk for name in ("OverallSystemUsage", "OverallFrameworkMetrics", "StepOutlier",
                                               "LowGPUUtilization", "LoadBalancing", "Dataloader", "BatchSize",
                                               "CPUBottleneck", "IOBottleneck", "GPUMemoryIncrease",
                                               "MaxInitializationTime")})
    made.timeline = {"nodes": {"algo-1": {"t": "x", "series": [1]}, "algo-2": 7}, "phases": {"w": {"train": [5]}}}
    made.data_quality = {"total": "many", "problems": "x"}
    report = build_report(made)
    assert report.notes == []  # every builder coped without failing
    assert len(report.sections) == len(BUILDERS) + 2  # plus the training-loop heading and data quality
    for section in report.sections:
        render_section(section)


def test_hostile_strings_are_escaped_in_tables_and_charts():
    evil = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    details = {"CPU": {evil: {"max": 1, "p99": 1, "p95": 1, "p50": 1, "min": 1}}}
    html = render_section(system_usage.build(outputs(OverallSystemUsage={"details": details})))
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    op = {"CPU": {evil: 100.0}, "CPU_total": {evil: 10}}
    html = render_section(operators.build_cpu(outputs(OverallFrameworkMetrics={"details": op})))
    assert "<script>alert" not in html and "</script>\"" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # a chart label is HTML-escaped for plotly, then JSON-escaped inside the spec element
    html = render_section(framework.build(outputs(OverallFrameworkMetrics={"details": {"general": {evil: 1.0, "b": 2.0, "c": 3.0}}})))
    assert "<script>alert" not in html and "\\u0026lt;script\\u0026gt;alert(1)" in html


def test_every_chart_uses_a_trace_type_of_the_vendored_plotly_bundle(tmp_path):
    from reportgen.report.charts import Line, boxes, heatmap, hbar, histograms, intervals, pie, time_lines
    from reportgen.resources import PLOTLY_TRACES, plotly_js

    figures = [pie({"a": 1}, "t"), boxes({"g": {"p25": 1, "p50": 2, "p75": 3}}, "t"),
               histograms({"n": ([1], [0, 1])}, "t", "x"), hbar(["a"], [1], "t", "x"),
               time_lines([0.0], {"s": Line([1], [0], [2])}, "t", "%"),
               heatmap([0.0], ["cpu0"], [[5]], "t"), intervals({"w": [[0, 1]]}, "t")]
    used = {trace["type"] for figure in figures for trace in figure["data"]}
    assert used <= PLOTLY_TRACES
    assert plotly_js().lstrip().startswith("/**\n* plotly.js (reportgen: scatter, bar, box, heatmap, pie - minified) v4.1.1")


def test_header_shows_the_incomplete_banner_and_the_source_description():
    from reportgen.render.blocks import render_header

    made = outputs(MaxInitializationTime={"details": {"job_start": 0.0, "job_end": 60.0}})
    report = build_report(made, job_name="job-1")
    report.description = "training job job-1: rule outputs in s3://b/p — report made from the rule outputs"
    assert "still running" not in render_header(report, "now", "0")
    report.incomplete = True
    html = render_header(report, "now", "0")
    assert 'class="banner-incomplete" role="alert">The training job was still running' in html
    assert "Source: training job job-1: rule outputs in s3://b/p" in html


def test_box_plot_marks_a_maximum_beyond_the_upper_whisker():
    """Known gap (GPU memory on sample_data: max 93 % over a 34 % whisker): the maximum gets its own
    marker when, and only when, it lies beyond the whisker."""
    from reportgen.report.charts import boxes

    stats = {"gpu0": {"p25": 29.0, "p50": 30.0, "p75": 31.0, "lower": 26.0, "upper": 34.0, "gpu_max": 93.0},
             "gpu1": {"p25": 2.0, "p50": 83.0, "p75": 86.0, "lower": 0.0, "upper": 99.0, "gpu_max": 99.0},
             "gpu<2>": {"p25": 1.0, "p50": 2.0, "p75": 3.0, "upper": 6.0, "max": 40.0}}
    fig = boxes(stats, "t")
    kinds = [(t["type"], t["x"][0]) for t in fig["data"]]
    assert kinds == [("box", "gpu0"), ("scatter", "gpu0"), ("box", "gpu1"), ("box", "gpu&lt;2&gt;"),
                     ("scatter", "gpu&lt;2&gt;")]
    assert [t["y"] for t in fig["data"] if t["type"] == "scatter"] == [[93.0], [40.0]]
    assert fig["data"][1]["marker"]["color"] == fig["data"][0]["marker"]["color"]


def test_axis_titles_use_the_object_form_plotly_4_draws():
    """plotly.js 3+ ignores ``"title": "text"`` on an axis: every axis title must be ``{"text": ...}``."""
    from reportgen.report.charts import Line, boxes, histograms, hbar, time_lines

    figures = [boxes({"g": {"p25": 1, "p50": 2, "p75": 3}}, "t", "Memory in %"),
               histograms({"n": ([1], [0, 1])}, "t", "Step <s>"), hbar(["a"], [1], "t", "Time in µs"),
               time_lines([0.0], {"s": Line([1], [0], [2])}, "t", "%")]
    titles = [fig["layout"][ax]["title"] for fig in figures for ax in ("xaxis", "yaxis")
              if "title" in fig["layout"].get(ax, {})]
    assert titles == [{"text": "Memory in %"}, {"text": "Step &lt;s&gt;"}, {"text": "Occurrences"},
                      {"text": "Time in µs"}, {"text": "%"}]


KINETO = {"ranks": {"0": {"file": "rank0.pt.trace.json.gz", "span_ms": 10.0, "steps": {}, "kernels": {}}}, "files": ["rank0.pt.trace.json.gz"]}


def _shown(report) -> list[str]:
    return [s.id for s in report.sections if not s.hidden]


def test_pytorch_traces_alone_hide_the_sagemaker_only_sections():
    made = outputs(StepOutlier={"details": {}})
    made.traces = KINETO
    report = build_report(made)
    hidden = [s.id for s in report.sections if s.hidden]
    assert hidden == ["training-job-summary", "system-usage-statistics", "utilization-over-time",
                      "framework-metrics-summary", "cpu-operators-overview", "gpu-operators-overview",
                      "gpu-utilization-analysis", "workload-balancing", "dataloading-analysis", "batch-size",
                      "cpu-bottlenecks", "io-bottlenecks", "gpu-memory", "initialization-time"]
    assert _shown(report) == ["gpu-kernels-operators", "rules-summary-section", "training-loop-analysis",
                              "step-duration-analysis", "data-quality"]
    note = texts(report.section("gpu-kernels-operators"))[0]
    assert note.startswith("This report was made from PyTorch profiler traces only. The 14 sections")
    assert "Training job summary, System usage statistics" in note and note.endswith("Initialization time.")
    assert all(report.section(i).data["available"] is False for i in hidden)  # still in report.json
    assert report.intro.startswith("This report summarises PyTorch profiler traces, one per rank")


def test_pytorch_traces_beside_sagemaker_outputs_hide_nothing():
    made = outputs(StepOutlier={"details": {}}, LowGPUUtilization={"details": {}})
    made.traces = KINETO
    report = build_report(made)
    assert report.intro == "" and not report.section("gpu-kernels-operators").hidden
    plain = outputs(StepOutlier={"details": {}})
    report = build_report(plain)  # no PyTorch traces: each section without data is one line of a list
    assert report.intro == ""
    assert report.section("batch-size").hidden
    assert texts(report.section("batch-size")) == ["No BatchSize output was found."]
    missing = report.section("data-quality").data["not_in_this_data"]
    assert "Batch size: No BatchSize output was found." in missing
    assert all(s.id != "step-duration-analysis" for s in report.sections if s.hidden)
