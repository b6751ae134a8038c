"""Acceptance: for every real SageMaker job in ../shared/fixtures/real, the generated HTML
shows exactly the numbers the original report printed (expected.json)."""

from __future__ import annotations

import json
from itertools import groupby

import pytest

from reportgen.report.util import slug
from tests.support.paths import ROOT

# Every test reads a real job's report: 70 jobs, one full generate each (real_report, once per session).
pytestmark = [pytest.mark.fixtures, pytest.mark.slow]


def two(value) -> str:
    return f"{float(value):.2f}"


@pytest.fixture
def job(real_report):
    """One real job's report (``real_report``: generated once per session, shared by every test here)."""
    return real_report


def test_training_job_summary(job):
    expected = job["expected"]["training_job_summary_table"]
    rows = job["tables"]["job-summary"][1:]
    assert {label: value for label, value in rows} == expected


def test_system_usage(job):
    header, *rows = job["tables"]["system-usage"]
    expected = job["expected"]["system_usage"]
    assert len(rows) == len(expected)
    for row, exp in zip(rows, expected):
        cells = dict(zip(header, row))
        assert (cells["node"], cells["metric"], cells["unit"]) == (exp["node"], exp["metric"], exp["unit"])
        for key in ("max", "p99", "p95", "p50", "min"):
            assert cells[key] == two(exp[key]), (exp["node"], exp["metric"], key)


def test_rules_summary_rows_and_order(job):
    header, *rows = job["tables"]["rules-summary"]
    ours = [dict(zip(header, row)) for row in rows]
    expected = job["expected"]["rules_summary"]
    assert [int(r["Number of times rule triggered"]) for r in ours] == [e["times_triggered"] for e in expected]
    # Ties were ordered by the original's directory listing, which cannot be reproduced:
    # within each group of equal counts we require the same rules, not the same order.
    position = 0
    for count, group in groupby(expected, key=lambda e: e["times_triggered"]):
        group = list(group)
        ours_group = ours[position:position + len(group)]
        assert {r["Rule"] for r in ours_group} == {e["rule"] for e in group}, count
        position += len(group)
    by_rule = {r["Rule"]: r for r in ours}
    for exp in expected:
        row = by_rule[exp["rule"]]
        assert int(row["Number of datapoints"]) == exp["datapoints"]
        assert row["Rule parameters"] == exp["parameters"]


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_operator_tables(job, kind):
    expected = job["expected"].get(f"{kind}_operators")
    table = job["tables"].get(f"{kind}-operators")
    if expected is None:
        assert table is None
        return
    rows = table[1:]
    assert [(float(p), int(t), op) for p, t, op in rows] == [
        (round(e["percentage"], 2), e["time"], e["operator"]) for e in expected]


def test_step_duration_tables(job):
    expected = job["expected"].get("step_duration_tables") or []
    step_details = json.loads((job["folder"] / "profiler-reports" / "StepOutlier.json").read_text())
    nodes = list(step_details["Details"].get("step_details", {}))
    assert len(nodes) == len(expected)
    for node, exp in zip(nodes, expected):
        header, row = job["tables"][f"step-durations-{slug(node)}"]
        want = exp["rows"][0]
        assert row[0] == want["label"]
        assert dict(zip(header[1:], row[1:])) == {k: want[k] for k in ("mean", "max", "p99", "p95", "p50", "min")}


def test_report_json_matches_tables(job):
    sections = job["json"]["sections"]
    rows = sections["system-usage-statistics"]["rows"]
    assert [(r["node"], r["metric"], two(r["max"])) for r in rows] == [
        (e["node"], e["metric"], two(e["max"])) for e in job["expected"]["system_usage"]]
    ours = {r["rule"]: (r["times_triggered"], r["datapoints"]) for r in sections["rules-summary-section"]["rows"]}
    assert ours == {e["rule"]: (e["times_triggered"], e["datapoints"]) for e in job["expected"]["rules_summary"]}


def test_at_a_glance_from_rule_outputs_alone(job):
    """Every real job gets the At a glance block: a status, findings in the vocabulary, ordered by impact,
    and what could not be judged without the raw data."""
    html, diagnosis = job["html"], job["json"]["diagnosis"]
    assert 'id="at-a-glance"' in html and html.index('id="at-a-glance"') < html.index('id="sec-')
    assert f'data-status="{diagnosis["status"]}"' in html
    assert diagnosis["status"] in ("healthy", "problems", "insufficient-data")
    assert any("need the raw system metrics" in n for n in diagnosis["not_judged"])
    assert "Not judged: per-core load" in html
    counted = [f["impact"]["share"] for f in diagnosis["findings"] if "risk" not in f["impact"]
               and f["impact"]["share"] >= 0.05]
    assert counted == sorted(counted, reverse=True)
    rows = job["json"]["sections"]["rules-summary-section"]["rows"]
    for row in rows:  # a rule with no datapoints is never presented as passed
        assert row["status"] == ("fired" if row["times_triggered"] else
                                 "not_evaluated" if row["datapoints"] == 0 else row["status"])
    if diagnosis["status"] == "problems":
        assert diagnosis["findings"][0]["fix"] and diagnosis["findings"][0]["evidence"]


def test_data_value_is_the_exact_value(job):
    """data-value holds the source's value in full precision (the original's printed text is in data-sagemaker):
    the summary's times in Unix seconds, its durations and shares before int truncation, network in bytes/s."""
    folder, exact = job["folder"], job["exact"]
    details = json.loads((folder / "profiler-reports" / "MaxInitializationTime.json").read_text())["Details"]
    start, end = details["job_start"], details["job_end"]
    summary = dict(exact["job-summary"][1:])
    assert float(summary["Start time"]) == start and float(summary["End time"]) == end
    assert float(summary["Job duration"]) == end - start
    step = details.get("step_num") or {}
    if "Training loop start" in summary:
        first, last = step["first"] / 1e6, step["last"] / 1e6
        assert float(summary["Training loop start"]) == first and float(summary["Training loop end"]) == last
        assert float(summary["Training loop duration"]) == last - first
        assert float(summary["Initialization time"]) == first - start
        assert float(summary["Finalization time"]) == abs(end - last)
        if end > start:
            loop_share = (step["last"] - step["first"]) / 1e6 / (end - start) * 100
            assert float(summary["Training loop"]) == pytest.approx(loop_share, rel=1e-12)
    header, *rows = exact["system-usage"]
    usage = json.loads((folder / "profiler-reports" / "OverallSystemUsage.json").read_text())["Details"]
    for row in rows:
        cells = dict(zip(header, row))
        source = usage[cells["metric"]][cells["node"]]
        assert cells["unit"] == ("bytes/s" if cells["metric"] == "Network" else "percentage")
        for key in ("max", "p99", "p95", "p50", "min"):
            assert float(cells[key]) == source[key], (cells["node"], cells["metric"], key)


@pytest.fixture(scope="module")
def schema_validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "reportgen" / "schemas" / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_report_json_matches_the_schema_and_its_junit_counts(job, schema_validator):
    """Every real job's report.json (fired rules, rules without data, no p90, ...) against the published schema,
    and the JUnit XML ``generate --junit`` writes from it (``ci_outputs.junit_xml`` of the same data): a rule
    without datapoints is never "passed", one that fired never skipped. Was tests/e2e/test_ci_outputs.py's
    test_real_generated_report_json_matches_the_schema, three of the jobs generated again in child processes
    (``generate --junit`` as a child process: test_ci_outputs.py's ``sample``)."""
    import xml.etree.ElementTree as ET

    from reportgen.ci_outputs import junit_xml

    data = job["json"]
    assert [f"{list(e.path)}: {e.message}" for e in schema_validator.iter_errors(data)] == []
    rows = data["sections"]["rules-summary-section"]["rows"]
    suite = ET.fromstring(junit_xml(data)).find("testsuite")
    assert int(suite.get("skipped")) == sum(r["status"] == "not_evaluated" for r in rows)
    assert all(r["status"] == "not_evaluated" for r in rows if r["datapoints"] == 0 and not r["times_triggered"])
    assert all(r["status"] == "fired" for r in rows if r["times_triggered"])
    assert int(suite.get("failures")) == sum(r["times_triggered"] > 0 for r in rows)
