"""Typed views of the section data compare, trend and the CI outputs read (report.views.UsageRow /
usage_rows_of, StepNode / step_nodes_of): built from a real job's sections, and from report.json data of
another version (missing keys, garbage values), which must give None, never a KeyError."""

from __future__ import annotations

import pytest

from reportgen.report.sections import steps, system_usage
from reportgen.report.views import RuleRow, StepNode, UsageRow, rule_rows_of, step_nodes_of, usage_rows_of
from reportgen.rule_outputs import load_rule_outputs
from tests.support.paths import REAL, need

HUGE = 10**400


@pytest.fixture(scope="module")
def real():
    return load_rule_outputs(need(REAL / "suinaowawa-b3deafcd" / "profiler-reports"))


@pytest.mark.fixtures
def test_usage_rows_of_a_real_jobs_section(real):
    data = system_usage.build(real).data
    rows = usage_rows_of(data)
    assert len(rows) == len(data["rows"]) == 12
    cpu = next(r for r in rows if (r.metric, r.node) == ("CPU", "algo-2"))
    assert cpu == UsageRow("algo-2", "CPU", "percentage", max=100.0, p99=66.5, p95=46.6, p50=40.4, min=0.0)
    assert rows[0].unit == "bytes" and rows[0].max == 97139519.97 and rows[0].stat("p90") is None


@pytest.mark.fixtures
def test_step_nodes_of_a_real_jobs_section(real):
    nodes = step_nodes_of(steps.build(real).data)
    first = nodes[0]
    assert first.node == "algo-1-28" and first.phase == "Step:ModeKeys.EVAL" and first.outliers == 47
    assert (first.mean, first.max, first.p50, first.min) == (0.021117606039325842, 0.029498, 0.020354, 0.01907)


def test_usage_rows_of_an_old_or_damaged_report_json():
    data = {"rows": [{"node": "n1", "metric": "GPU", "p50": "12", "p95": HUGE, "max": float("nan"), "min": True},
                     {"metric": ["CPU"], "unit": 5, "p50": 30}, "not a row", {"node": 7}]}
    assert usage_rows_of(data) == [UsageRow("n1", "GPU"), UsageRow("", None, None, p50=30), UsageRow("7")]
    assert usage_rows_of({}) == usage_rows_of(None) == usage_rows_of({"rows": {"a": 1}}) == []


def test_step_nodes_of_an_old_or_damaged_report_json():
    data = {"nodes": {"w1": {"stats": {"p50": 0.5, "mean": "slow"}, "histogram": {"counts": [1, 2], "edges": "x"}},
                      "w2": {"phase": 3, "number_of_outliers": "many", "stats": [1]},
                      "w3": "not a node"}}
    assert step_nodes_of(data) == [StepNode("w1", p50=0.5, counts=[1, 2]), StepNode("w2")]
    assert step_nodes_of({"nodes": []}) == step_nodes_of(None) == []


@pytest.mark.fixtures
def test_rule_rows_of_a_real_jobs_section(real):
    from reportgen.report.sections import rules_summary

    data = rules_summary.build(real).data
    rows = rule_rows_of(data)
    assert [r.rule for r in rows] == [r["rule"] for r in data["rows"]] and len(rows) == 9  # usage summaries aside
    assert (rows[0].rule, rows[0].times_triggered, rows[0].violations, rows[0].datapoints, rows[0].status) == (
        "GPUMemoryIncrease", 11467, 11467, 28766, "fired")
    for row, raw in zip(rows, data["rows"]):
        assert (row.times_triggered, row.datapoints, row.status, row.parameters) == (
            raw["times_triggered"], raw["datapoints"], raw["status"], raw["parameters"])
    assert sum(r.times_triggered > 0 for r in rows) == sum(r.status == "fired" for r in rows)


def test_rule_rows_of_an_old_or_damaged_report_json():
    data = {"rows": [{"rule": "GPUMemoryIncrease", "times_triggered": "3", "datapoints": HUGE, "violations": 2,
                      "status": "no_data", "finding": 7},
                     {"rule": "", "times_triggered": 1}, None, {"rule": ["odd"], "parameters": None}]}
    assert rule_rows_of(data) == [RuleRow("GPUMemoryIncrease", None, 2, None, "no_data", finding="7"),
                                  RuleRow(None, 1), RuleRow("['odd']")]
    assert rule_rows_of({"rows": "x"}) == rule_rows_of(None) == []
