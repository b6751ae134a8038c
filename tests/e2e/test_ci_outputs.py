"""CI outputs: JUnit XML, Markdown summary, $GITHUB_STEP_SUMMARY, --fail-on exit codes, report.json schema.

The Markdown snapshot is ``tests/snapshots/sample_summary.md``. After an intended change of the summary,
regenerate it and review the diff:

    REPORTGEN_UPDATE_SNAPSHOTS=1 PYTHONPATH=. python -m pytest -q tests/e2e/test_ci_outputs.py -k snapshot
"""

from __future__ import annotations

import copy
import json
import os
import re
import xml.etree.ElementTree as ET

import pytest

from reportgen.ci_outputs import junit_xml, markdown_summary
from reportgen.report.build import build_report
from reportgen.report.json_output import report_data
from reportgen.rule_outputs import find_rule_output_dir, load_rule_outputs
from tests.support.cli import main_in_process, run_cli
from tests.support.paths import REAL, ROOT, need

SNAPSHOT = ROOT / "tests" / "snapshots" / "sample_summary.md"
SCHEMA = ROOT / "reportgen" / "schemas" / "report.schema.json"
HOSTILE = 'Evil<script>alert("x")</script> ]]> & \'q\' *b* [l](http://e.invalid) | #1'


run = run_cli


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """One real run on sample_data with every CI output and --fail-on any."""
    out = tmp_path_factory.mktemp("ci")
    step = out / "step_summary.md"
    step.write_text("## An earlier step\n\n", encoding="utf-8")
    result = run("generate", str(ROOT / "sample_data"), "-o", str(out / "report.html"), "-q",
                 "--junit", str(out / "rules.xml"), "--markdown", str(out / "summary.md"), "--fail-on", "any",
                 env={"GITHUB_STEP_SUMMARY": str(step)})
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return out, result, data


def rows(data):
    return data["sections"]["rules-summary-section"]["rows"]


def fired(data):
    return [r["rule"] for r in rows(data) if r["times_triggered"] > 0]


# ----------------------------------------------------------------------------------------- generate


def test_generate_writes_every_output_then_exits_1(sample):
    out, result, data = sample
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"reportgen: --fail-on tripped: rules fired: {', '.join(fired(data))} (exit code 1)"]
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "rules.xml",
                                                     "step_summary.md", "summary.md"]
    assert data["schema_version"] == "1.2"
    assert data["job"]["name"] == "sample_data"  # the folder given, not reportgen's work folder


def test_junit_counts_equal_the_rules(sample):
    out, _, data = sample
    root = ET.parse(out / "rules.xml").getroot()
    assert root.tag == "testsuites"
    suite, _causes = root.findall("testsuite")
    cases = suite.findall("testcase")
    # expected, computed from report.json's rows independently of reportgen.ci_outputs
    expected_fail = {r["rule"] for r in rows(data) if r["times_triggered"] > 0}
    expected_skip = {r["rule"] for r in rows(data) if r["times_triggered"] == 0 and r["datapoints"] == 0}
    for element in (suite,):
        assert int(element.get("tests")) == len(rows(data)) == len(cases)
        assert int(element.get("failures")) == len(expected_fail)
        assert int(element.get("skipped")) == len(expected_skip)
        assert element.get("errors") == "0"
    assert {c.get("name") for c in cases if c.find("failure") is not None} == expected_fail
    assert {c.get("name") for c in cases if c.find("skipped") is not None} == expected_skip
    # the sample job's real values
    assert (len(cases), len(expected_fail), len(expected_skip)) == (9, 6, 0)
    assert [c.get("name") for c in cases] == [r["rule"] for r in rows(data)]


def test_junit_testcase_carries_parameters_datapoints_finding_and_recommendation(sample):
    out, _, data = sample
    suite = ET.parse(out / "rules.xml").getroot().find("testsuite")
    by_rule = {r["rule"]: r for r in rows(data)}
    for case in suite.findall("testcase"):
        row = by_rule[case.get("name")]
        assert case.get("classname") == "reportgen.rules"
        props = [(p.get("name"), p.get("value")) for p in case.find("properties")]
        assert ("datapoints", str(row["datapoints"])) in props
        assert ("times_triggered", str(row["times_triggered"])) in props
        params = [(k[len("parameter."):], v) for k, v in props if k.startswith("parameter.")]
        assert params == [tuple(s.strip() for s in line.split(":", 1)) for line in row["parameters"].splitlines()]
        failure = case.find("failure")
        cause = next((f for f in data["diagnosis"]["findings"] if row["rule"] in f["rules"]), None)
        if row["times_triggered"] and cause:  # the diagnosed cause and its fix lead; the rule's finding follows
            assert failure.get("message").startswith(f"{cause['cause']}: {cause['title']}, ")
            assert failure.get("message").endswith(f"Fix: {cause['fix']}")
            assert failure.text.startswith(failure.get("message") + f"\nFix: {cause['fix']}\nEvidence: ")
            assert failure.text.endswith(f"\nRule: {row['finding']}")
        elif row["times_triggered"]:
            assert failure.get("message") == row["finding"]
            assert failure.text == f"{row['finding']}\nRecommendation: {row['recommendation']}"
        else:
            assert failure is None
    loader = suite.find("testcase[@name='Dataloader']").find("failure")
    assert loader.get("message").startswith("input-pipeline: The input pipeline starves the GPUs, about 6 min 7 s (47 % of the job). Fix: ")
    assert "The cores are the limit: 4 cores per node leave 1 data-loading worker to each of 2 training processes" in loader.get("message")
    step = suite.find("testcase[@name='StepOutlier']")
    assert step.find("failure").text.endswith(
        "Rule: StepOutlier fired 9 times (30 violations in 1147 datapoints): some steps took much longer than usual.")
    assert ("parameter.stddev", "3") in [(p.get("name"), p.get("value")) for p in step.find("properties")]


def test_markdown_snapshot(sample):
    out, _, _ = sample
    text = (out / "summary.md").read_text(encoding="utf-8")
    if os.environ.get("REPORTGEN_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert text == SNAPSHOT.read_text(encoding="utf-8")
    assert "http" not in text and "](" not in text  # link-free


def test_step_summary_is_appended(sample):
    out, _, _ = sample
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert (out / "step_summary.md").read_text(encoding="utf-8") == "## An earlier step\n\n" + summary + "\n"


# ----------------------------------------------------------------------------------------- check + --fail-on


@pytest.mark.parametrize("fail_on, code", [
    ("none", 0),
    ("any", 1),
    ("LowGPUUtilization", 1),        # fired 20 times in the sample
    ("IOBottleneck", 0),             # did not fire
    ("IOBottleneck,stepoutlier", 1),  # names are case-insensitive; one listed rule fired
    ("BatchSize, MaxInitializationTime", 0),
])
def test_fail_on_exit_codes(sample, tmp_path, fail_on, code, capsys, monkeypatch):
    """Each gate in this process (``check`` as a child process: test_generate_writes_every_output_then_exits_1,
    test_check_without_outputs_prints_the_summary, test_check_reads_a_1_0_report_json_without_findings)."""
    out, _, data = sample
    listed = {"none": set(), "any": set(fired(data))}.get(fail_on)
    if listed is None:
        listed = {name.strip().lower() for name in fail_on.split(",")}
        assert listed <= {r["rule"].lower() for r in rows(data)}
        listed = {r for r in fired(data) if r.lower() in listed}
    assert code == (1 if listed else 0)  # the table above agrees with report.json
    result = main_in_process("check", out / "report.json", "--fail-on", fail_on, "--junit", tmp_path / "r.xml", "-q",
                             capsys=capsys, monkeypatch=monkeypatch)
    assert result.returncode == code, result.stderr
    assert (tmp_path / "r.xml").is_file()  # written whatever the verdict
    if code:
        named = [r for r in fired(data) if r in listed]
        assert result.stderr == f"reportgen: --fail-on tripped: {'rule' if len(named) == 1 else 'rules'} fired: {', '.join(named)} (exit code 1)\n"
    else:
        assert result.stderr == ""


@pytest.mark.parametrize("fail_on, bad", [("NoSuchRule", "NoSuchRule"), ("StepOutlier,Nope", "Nope"),
                                          ("any,StepOutlier", "any"), ("OverallSystemUsage", "OverallSystemUsage")])
def test_unknown_rule_in_fail_on_is_a_usage_error(sample, tmp_path, fail_on, bad, capsys, monkeypatch):
    """In this process (as a child process: test_unknown_rule_stops_generate_before_any_work)."""
    out, _, _ = sample
    result = main_in_process("check", out / "report.json", "--fail-on", fail_on, "--junit", tmp_path / "r.xml",
                             capsys=capsys, monkeypatch=monkeypatch)
    assert result.returncode == 2
    assert result.stderr.startswith(f"reportgen: error: --fail-on: unknown name {bad}")
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r.xml").exists()


def test_unknown_rule_stops_generate_before_any_work(tmp_path):
    result = run("generate", str(ROOT / "sample_data"), "-o", str(tmp_path / "r.html"), "--fail-on", "Typo")
    assert result.returncode == 2 and "unknown name Typo;" in result.stderr
    assert "analysing" not in result.stderr  # validated before the source is read
    assert list(tmp_path.iterdir()) == []


def test_check_without_outputs_prints_the_summary(sample):
    out, _, _ = sample
    result = run("check", str(out / "report.json"))
    assert result.returncode == 0
    assert result.stdout == (out / "summary.md").read_text(encoding="utf-8")


def test_step_summary_append_and_opt_out(sample, tmp_path):
    out, _, _ = sample
    step = tmp_path / "step.md"
    env = {"GITHUB_STEP_SUMMARY": str(step)}
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert run("check", str(out / "report.json"), "-q", env=env).returncode == 0
    assert run("check", str(out / "report.json"), "-q", env=env).returncode == 0
    assert step.read_text(encoding="utf-8") == (summary + "\n") * 2  # appended, never overwritten
    result = run("check", str(out / "report.json"), "--no-step-summary", "--junit", str(tmp_path / "r.xml"),
                 env=env)
    assert result.returncode == 0 and result.stdout == ""
    assert step.read_text(encoding="utf-8") == (summary + "\n") * 2
    # without the variable nothing is written anywhere but the named files
    result = run("check", str(out / "report.json"), "--markdown", str(tmp_path / "s.md"), "-q")
    assert result.returncode == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["r.xml", "s.md", "step.md"]


@pytest.mark.parametrize("content, message", [
    ('{"schema_version": "1.1", "sections": ', "malformed JSON at line 1"),
    ('[1, 2]', "not a reportgen report.json"),
    ('{"schema_version": "2.0", "sections": {}}', "schema_version 2.0 is not supported"),
])
def test_check_rejects_bad_report_json(tmp_path, content, message):
    path = tmp_path / "report.json"
    path.write_text(content)
    result = run("check", str(path), "--junit", str(tmp_path / "r.xml"))
    assert result.returncode == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "r.xml").exists()


def test_check_reads_a_1_0_report_json_without_findings(sample, tmp_path):
    out, _, data = sample
    old = copy.deepcopy(data)
    old["schema_version"] = "1.0"
    for row in rows(old):
        del row["status"], row["finding"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    result = run("check", str(tmp_path / "old.json"), "--junit", str(tmp_path / "old.xml"), "--fail-on", "any", "-q")
    assert result.returncode == 1
    new = junit_xml(data).decode().replace('value="1.2"', 'value="1.0"')
    assert (tmp_path / "old.xml").read_text(encoding="utf-8") == new


# ----------------------------------------------------------------------------------------- hostile strings


@pytest.fixture()
def hostile(sample):
    _, _, data = sample
    data = copy.deepcopy(data)
    data["job"]["name"] = HOSTILE
    row = rows(data)[0]  # fired
    row.update(rule=HOSTILE, finding=HOSTILE + "\x01", recommendation=HOSTILE,
               parameters=f"threshold:{HOSTILE}\n<b k=\"v\">&]]>:1")
    rows(data).append({"rule": "Quiet&<x>", "description": "", "recommendation": HOSTILE, "times_triggered": 0,
                       "violations": 0, "datapoints": 0, "parameters": "", "status": "no_data",
                       "finding": "Quiet&<x> had no data to analyse (0 datapoints)."})
    cpu = next(r for r in data["sections"]["system-usage-statistics"]["rows"] if r["metric"] == "CPU")
    cpu["node"] = HOSTILE  # a node of its own, with CPU but no GPU numbers
    return data


def test_hostile_strings_are_escaped_in_junit(hostile, tmp_path):
    raw = junit_xml(hostile)
    assert b"<script" not in raw and b"]]>" not in raw and b"\x01" not in raw
    root = ET.fromstring(raw)  # still well-formed
    suite = root.find("testsuite")
    case = suite.findall("testcase")[0]
    assert case.get("name") == HOSTILE  # the parser gives back exactly what was in the data
    failure = case.find("failure")
    # XML 1.0 cannot carry U+0001: shown as an escape (terminal_text, the one sanitiser of text outputs)
    assert failure.get("message") == HOSTILE + "\\x01"
    assert failure.text == f"{HOSTILE}\\x01\nRecommendation: {HOSTILE}"
    props = {(p.get("name"), p.get("value")) for p in case.find("properties")}
    assert {("parameter.threshold", HOSTILE), ('parameter.<b k="v">&]]>', "1")} <= props
    assert ("job", HOSTILE) in {(p.get("name"), p.get("value")) for p in suite.find("properties")}
    skipped = suite.findall("testcase")[-1]
    assert skipped.get("name") == "Quiet&<x>" and skipped.find("skipped") is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("10", "6", "1")
    # and through the command line, from a report.json on disk
    (tmp_path / "h.json").write_text(json.dumps(hostile))
    result = run("check", str(tmp_path / "h.json"), "--junit", str(tmp_path / "h.xml"), "-q")
    assert result.returncode == 0
    assert (tmp_path / "h.xml").read_bytes() == raw


def test_hostile_strings_are_escaped_in_markdown(hostile):
    text = markdown_summary(hostile)
    assert "<" not in text and ">" not in text and "http:" not in text
    assert re.search(r"(?<!\\)\]\(", text) is None  # no link syntax left: every ] is escaped
    escaped = ("Evil&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; \\]\\]&gt; &amp; 'q' \\*b\\* "
               "\\[l\\](http&#58;//e.invalid) \\| \\#1")
    assert f"## Profiling report: {escaped}\n" in text
    assert f"| {escaped} | 20 | {escaped} |" in text  # a fired rule with its recommendation
    assert f"| {escaped} | 45.32 | 58.81 | 61.69 | – | – | – |" in text  # node column
    assert "Not evaluated: Quiet&amp;&lt;x&gt; (no datapoints: the data it needs was not recorded)." in text
    # the only raw '|' are the table's own separators: every row keeps 7 or 3 cells
    for line in text.splitlines():
        if line.startswith("|"):
            cells = line.replace("\\|", "").count("|") - 1
            assert cells in (3, 7), line


def test_markdown_cuts_huge_job_and_node_names_regression(sample):
    """A 10,000-character job or node name was copied whole into the step summary's heading and table."""
    data = copy.deepcopy(sample[2])
    data["job"]["name"] = "J" * 10_000
    for row in data["sections"]["system-usage-statistics"]["rows"]:
        row["node"] = "<" + "N" * 9_999
    text = markdown_summary(data)
    assert f"## Profiling report: {'J' * 119}…\n" in text
    row = next(line for line in text.splitlines() if line.startswith("| &lt;NNN"))
    assert row.startswith(f"| &lt;{'N' * 118}… | ")  # cut before escaping: no entity is split
    assert max(len(line) for line in text.splitlines() if "JJJ" in line or "NNN" in line) < 400


# ----------------------------------------------------------------------------------------- JSON Schema


@pytest.fixture(scope="module")
def validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(validator, data):
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(data)]


def test_sample_report_json_matches_the_schema(sample, validator):
    _, _, data = sample
    assert errors(validator, data) == []


def test_schema_rejects_what_it_should(sample, validator):
    _, _, data = sample
    bad = copy.deepcopy(data)
    rows(bad)[0]["status"] = "maybe"
    del rows(bad)[1]["finding"]
    bad["sections"]["system-usage-statistics"]["rows"][0]["p50"] = "46"
    bad["schema_version"] = "2.0"
    found = errors(validator, bad)
    assert len(found) == 4, found


@pytest.mark.fixtures
def test_every_real_job_report_data_matches_the_schema(validator):
    """The same data the notebook writes (report_data), for every real job, without running the notebook."""
    need(REAL)
    checked = 0
    for job in sorted(REAL.iterdir()):
        folder = find_rule_output_dir(job)
        if folder is None:
            continue
        data = report_data(build_report(load_rule_outputs(folder), job_name=job.name), "2026-01-01 00:00 UTC")
        data = json.loads(json.dumps(data, allow_nan=False))
        assert errors(validator, data) == [], job.name
        checked += 1
    assert checked >= 10
