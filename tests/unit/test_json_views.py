"""The typed views of report.json's own parts (``report/json_views.py``): what the CI outputs, ``check --base``,
``trend`` and the comparison read from a report.json, each value as written when it has the right type, and
nothing else (issue 47: the dict reads these views replaced took anything and sometimes raised on it)."""

from __future__ import annotations

import json

import pytest

from reportgen.ci_outputs import cause_line, junit_xml, markdown_summary, serious
from reportgen.errors import InputError
from reportgen.report.json_views import (Finding, Impact, JobCpu, OperatorRow, OperatorTable, ReportJson, Risk,
                                         load_report_json, problems_of)
from reportgen.section_ids import SectionId

FINDING = {"cause": "input-pipeline", "title": "The input pipeline starves the GPUs", "fix": "More workers",
           "evidence": ["DataLoader 58 %", 3], "rules": ["Dataloader", "LowGPUUtilization"], "serious": True,
           "impact": {"share": 0.58, "seconds": 452.7, "cost": 1.25, "loop_share": 0.61, "share_of": "job"}}


def _report(**parts) -> dict:
    sections = {SectionId.RULES_SUMMARY_SECTION: {"rows": [{"rule": "Dataloader", "times_triggered": 2,
                                                            "violations": 2, "datapoints": 10, "status": "fired"}]},
                SectionId.TRAINING_JOB_SUMMARY: {"job_duration_s": 780, "initialization_s": 12.5},
                SectionId.COST: {"cost": 3.5, "prices": {"currency": "EUR"}},
                SectionId.DATA_QUALITY: {"problems": 2},
                SectionId.SYSTEM_USAGE_STATISTICS: {"rows": [], "recorded_command": {
                    "host_shared": True, "job_cpu_pct_of_host_p50": 41.5, "job_cpu_pct_of_host_p95": 77}}}
    return {"schema_version": "1.3", "job": {"name": "resnet", "incomplete": True},
            "generator": {"version": "9.9", "generated_at": "2026-12-07T08:00:00Z"},
            "diagnosis": {"status": "problems", "findings": [FINDING]}, "sections": sections, **parts}


def test_a_report_json_is_read_into_its_typed_parts():
    report = ReportJson.of(_report())
    assert (report.schema_version, report.job_name, report.incomplete) == ("1.3", "resnet", True)
    assert (report.reportgen_version, report.generated_at) == ("9.9", "2026-12-07T08:00:00Z")
    assert (report.currency, report.cost, report.data_quality_problems) == ("EUR", 3.5, 2)
    assert report.duration_listed is True and report.duration_given == 780
    assert report.status == "problems"
    (finding,) = report.findings
    assert finding == Finding("input-pipeline", "The input pipeline starves the GPUs", "More workers",
                              ("DataLoader 58 %", "3"), ("Dataloader", "LowGPUUtilization"), True,
                              Impact(0.58, 452.7, 1.25, 0.61, "job", None))
    assert ReportJson.of(report) is report  # built once: a view passed on is not read again


def test_a_foreign_or_damaged_value_is_none_never_an_exception():
    damaged = {"cause": "memory-growth", "title": None, "evidence": "a text, not a list", "rules": {"a": 1},
               "serious": "yes", "impact": {"share": 10**400, "seconds": float("nan"), "cost": True, "share_of": 5,
                                            "risk": {"per_step_bytes": "x", "time_to_full_s": "soon"}}}
    report = ReportJson.of({"job": ["x"], "generator": None, "diagnosis": {
        "status": 3, "findings": [damaged, "text", {"title": "no cause"}, {"cause": ""}]}, "sections": []})
    assert (report.sections, report.job_name, report.currency, report.cost) == ({}, "", "USD", None)
    assert report.duration_listed is False and report.data_quality_problems == 0
    assert (report.status, report.diagnosis.status_given) == ("3", 3)
    (finding,) = report.findings  # the text and the findings without a cause are skipped
    assert (finding.headline, finding.evidence, finding.rules, finding.serious) == ("memory-growth", (), (), None)
    assert finding.impact == Impact(risk=Risk(per_step_bytes_listed=True))
    assert ReportJson.of("not an object") == ReportJson({})
    assert ReportJson.of({"sections": {}}).diagnosis is None  # a report.json written before the diagnosis


def test_a_finding_without_serious_is_judged_by_its_impact_as_before():
    minor = Finding.of({"cause": "c", "impact": {"share": 0.01}})
    big = Finding.of({"cause": "c", "impact": {"share": 0.2}})
    risk = Finding.of({"cause": "c", "impact": {"risk": {}}})
    assert [serious(f) for f in (minor, big, risk)] == [False, True, True]
    assert serious(Finding.of({"cause": "c", "serious": False, "impact": {"share": 0.9}})) is False


def test_the_ci_outputs_read_the_view_as_they_read_the_dict():
    data = _report()
    assert junit_xml(data) == junit_xml(ReportJson.of(data))
    text = markdown_summary(data)
    assert text == markdown_summary(ReportJson.of(data))
    assert "## Profiling report: resnet" in text and "The job was still running" in text
    assert "Job duration: 780 s (13 min 0 s); initialization 12 s." in text
    assert "Data quality: 2 problem(s)" in text
    line = cause_line(ReportJson.of(data).findings[0], "EUR")
    assert line == ("input-pipeline: The input pipeline starves the GPUs, about 7 min 32 s (61 % of the training "
                    "loop, 58 % of the job), about 1.25 EUR. Fix: More workers")


def test_a_risk_reads_its_growth():
    finding = Finding.of({"cause": "memory-growth", "impact": {"risk": {
        "per_step_bytes": 4194304, "time_to_full_s": 3600, "peak_pct": 91.4}}})
    assert cause_line(finding) == ("memory-growth: memory-growth, risk, no time lost yet (grows 4.0 MiB per step, "
                                   "full in 3600 s (1 h 0 min) at this rate, peak 91 % of GPU memory). Fix: ")


def test_the_recorded_commands_cpu_only_on_a_shared_host():
    sections = _report()["sections"]
    assert JobCpu.of_sections(sections) == JobCpu(41.5, 77.0)
    command = sections[SectionId.SYSTEM_USAGE_STATISTICS]["recorded_command"]
    assert JobCpu.of_sections({SectionId.SYSTEM_USAGE_STATISTICS: {"recorded_command": {
        **command, "host_shared": False}}}) is None
    assert JobCpu.of_sections({SectionId.SYSTEM_USAGE_STATISTICS: {"recorded_command": {
        **command, "job_cpu_pct_of_host_p95": float("inf")}}}) is None
    assert JobCpu.of_sections(None) is None


def test_operator_rows_are_kept_as_written_and_viewed():
    rows = [{"operator": "aten::conv2d", "percentage": 22.12, "time": 7}, "junk", {"operator": 5, "percentage": "x"}]
    table = OperatorTable.of({"rows": rows})
    assert table.written is rows
    assert table.rows == (OperatorRow("aten::conv2d", 22.12), OperatorRow("5", None))
    assert OperatorTable.of({"rows": {"a": 1}}) == OperatorTable([])
    assert [problems_of(v) for v in ({"problems": 3}, {"problems": True}, {}, None)] == [3, 0, 0, 0]


@pytest.mark.parametrize("change, message", [
    ({"sections": []}, "not a reportgen report.json (no 'sections' object)"),
    ({"diagnosis": [1]}, "damaged report.json: 'diagnosis' is a list, not an object"),
    ({"schema_version": "2.0"}, "schema_version 2.0 is not supported (expected 1.x)"),
    ({"sections": {SectionId.RULES_SUMMARY_SECTION: {"rows": [{"rule": "R", "times_triggered": -1}]}}},
     "damaged report.json: rules summary row 1 (R): times_triggered is -1, not a count"),
])
def test_the_one_reader_refuses_what_no_view_can_use(tmp_path, change, message):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({**_report(), **change}))
    with pytest.raises(InputError) as err:
        load_report_json(path)
    assert str(err.value) == f"{path}: {message}"


def test_the_one_reader_returns_the_data_as_written(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(_report()))
    assert load_report_json(path) == _report()
