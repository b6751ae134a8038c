"""--fail-on on the diagnosis: statuses, causes (from the cause registry), rules, mixed; JUnit cause cases.

Run as a user would: the CLI in a subprocess, on sample_data/, a short recording and real jobs.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

import pytest

from reportgen.ci_outputs import FailOn, known_causes, parse_fail_on
from reportgen.errors import InputError
from tests.support.paths import REAL, ROOT, need
from tests.support.cli import main_in_process, run_cli


run = run_cli


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """sample_data's report: status problems; input-pipeline, step-outliers and a serious GPU-memory risk."""
    out = tmp_path_factory.mktemp("gates")
    result = run("generate", str(ROOT / "sample_data"), "-o", str(out / "report.html"), "-q",
                 "--junit", str(out / "rules.xml"), "--fail-on", "problems")
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return out, result, data


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    """A recording of one second: too little data to judge anything (status insufficient-data)."""
    out = tmp_path_factory.mktemp("short")
    rec = run("record", "-q", "--interval", "200ms", "--out", str(out / "rec"), "--", sys.executable, "-c",
              "import time; time.sleep(1)")
    assert rec.returncode == 0, rec.stderr
    result = run("generate", str(out / "rec"), "-o", str(out / "report.html"), "-q", "--junit", str(out / "rules.xml"),
                 "--fail-on", "insufficient-data")
    return out, result, json.loads((out / "report.json").read_text(encoding="utf-8"))


def serious_causes(data):
    return [f["cause"] for f in data["diagnosis"]["findings"] if f["serious"]]


def fired(data):
    return [r["rule"] for r in data["sections"]["rules-summary-section"]["rows"] if r["status"] == "fired"]


def check(out, fail_on):
    return run("check", str(out / "report.json"), "--fail-on", fail_on, "--markdown", str(out / "s.md"), "-q")


def test_generate_fails_on_the_status_after_writing_everything(sample):
    out, result, data = sample
    assert data["diagnosis"]["status"] == "problems"
    assert result.returncode == 1
    assert result.stderr == "reportgen: --fail-on tripped: status problems (exit code 1)\n"
    assert {"report.html", "report.json", "rules.xml"} <= {p.name for p in out.iterdir()}


@pytest.mark.parametrize("fail_on, code, message", [
    ("insufficient-data", 0, ""),
    ("input-pipeline", 1, "cause found: input-pipeline"),
    ("straggler", 0, ""),                      # not found in the sample
    ("io-bound,cpu-bound,gpu-underused", 0, ""),
    ("Input-Pipeline,STEP-OUTLIERS", 1, "causes found: input-pipeline, step-outliers"),  # case-insensitive
    ("input-pipeline,straggler,LowGPUUtilization", 1, "cause found: input-pipeline; rule fired: LowGPUUtilization"),
    ("problems,IOBottleneck,step-outliers", 1, "status problems; cause found: step-outliers"),
    ("IOBottleneck,BatchSize", 0, ""),
])
def test_check_gates_on_statuses_causes_and_rules(sample, fail_on, code, message, capsys, monkeypatch):
    """Each gate in this process (``check`` as a child process: test_minor_findings_do_not_trip_a_healthy_job_
    but_show_in_junit, test_insufficient_data_gate_and_skipped_causes)."""
    out, _, data = sample
    # the expectation, from report.json itself
    names = {n.strip().lower() for n in fail_on.split(",")}
    expected = ({data["diagnosis"]["status"]} & names) | {c for c in serious_causes(data) if c in names} | {
        r for r in fired(data) if r.lower() in names}
    assert bool(expected) == bool(code)
    result = main_in_process("check", out / "report.json", "--fail-on", fail_on, "--markdown", out / "s.md", "-q",
                             capsys=capsys, monkeypatch=monkeypatch)
    assert result.returncode == code, result.stderr
    assert result.stderr == (f"reportgen: --fail-on tripped: {message} (exit code 1)\n" if code else "")
    assert (out / "s.md").is_file()


def test_minor_findings_do_not_trip_a_healthy_job_but_show_in_junit(sample, tmp_path):
    """A healthy report that lists minor findings (serious: false): no cause gate fails on them, JUnit shows
    them as passed with what was found; `any` still fails on the rules that fired. The sample's report.json
    with its verdict made healthy and its findings minor, as the diagnosis writes such a report."""
    out, _, data = sample
    data = json.loads(json.dumps(data))
    data["diagnosis"]["status"] = "healthy"
    for finding in data["diagnosis"]["findings"]:
        finding["serious"] = False
    (tmp_path / "report.json").write_text(json.dumps(data), encoding="utf-8")
    minor = [f["cause"] for f in data["diagnosis"]["findings"]]
    result = run("check", str(tmp_path / "report.json"), "--junit", str(tmp_path / "r.xml"), "-q",
                 "--fail-on", ",".join([*minor, "problems"]))
    assert result.returncode == 0, result.stderr
    causes = ET.parse(tmp_path / "r.xml").getroot().find("testsuite[@name='reportgen.causes']")
    assert causes.get("failures") == "0" and len(minor) == 3
    for cause in minor:
        case = causes.find(f"testcase[@name='{cause}']")
        assert case.find("failure") is None and case.find("skipped") is None
        assert case.find("system-out").text.startswith(f"Minor (under 5 % of the job, does not make it unhealthy):\n{cause}: ")
    assert check(tmp_path, "any").returncode == 1  # its rules fired all the same


def test_junit_has_one_case_per_cause_of_the_registry(sample):
    out, _, data = sample
    root = ET.parse(out / "rules.xml").getroot()
    rules, causes = root.findall("testsuite")
    assert (rules.get("name"), causes.get("name")) == ("reportgen.rules", "reportgen.causes")
    from reportgen.diagnosis import causes as registry

    assert [c.get("name") for c in causes.findall("testcase")] == list(registry.CAUSES)
    failed = [c.get("name") for c in causes.findall("testcase") if c.find("failure") is not None]
    # the input pipeline and the slow steps; sample_data's GPU memory peak is memory-controller activity, never
    # how full the memory was, so no serious risk (issue 48)
    assert failed == [c for c in registry.CAUSES if c in serious_causes(data)] == ["input-pipeline", "step-outliers"]
    loader = causes.find("testcase[@name='input-pipeline']/failure")
    assert loader.get("type") == "CauseFound"
    finding = next(f for f in data["diagnosis"]["findings"] if f["cause"] == "input-pipeline")
    assert loader.get("message").startswith(f"input-pipeline: {finding['title']}, ")
    assert loader.get("message").endswith(f"Fix: {finding['fix']}") and "(47 % of the job)" in loader.get("message")
    assert "Rules: " in loader.text and "Dataloader" in loader.text
    assert causes.get("tests") == str(len(registry.CAUSES)) and causes.get("failures") == "2"
    assert root.get("tests") == str(9 + len(registry.CAUSES)) and root.get("failures") == str(6 + 2)


def test_insufficient_data_gate_and_skipped_causes(short):
    out, result, data = short
    assert data["diagnosis"]["status"] == "insufficient-data"
    assert result.returncode == 1
    assert result.stderr == "reportgen: --fail-on tripped: status insufficient-data (exit code 1)\n"
    causes = ET.parse(out / "rules.xml").getroot().find("testsuite[@name='reportgen.causes']")
    assert all(c.find("skipped") is not None for c in causes.findall("testcase"))
    assert causes.get("skipped") == causes.get("tests") != "0"
    assert check(out, "problems").returncode == 0


@pytest.mark.fixtures
def test_any_fails_a_healthy_job_where_problems_does_not(tmp_path):
    """masinde70-e2d00f50: Dataloader fired, the diagnosis explains it away (healthy, no finding)."""
    job = need(REAL / "masinde70-e2d00f50")
    result = run("generate", str(job), "-o", str(tmp_path / "r.html"), "-q", "--fail-on", "problems")
    assert result.returncode == 0, result.stderr
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert data["diagnosis"]["status"] == "healthy" and data["diagnosis"]["findings"] == []
    assert fired(data) == ["Dataloader"]
    result = run("check", str(tmp_path / "r.json"), "--fail-on", "any", "--markdown", str(tmp_path / "s.md"), "-q")
    assert result.returncode == 1
    assert result.stderr == "reportgen: --fail-on tripped: rule fired: Dataloader (exit code 1)\n"


@pytest.mark.parametrize("fail_on, bad", [("input-pipelines", "input-pipelines"), ("problem", "problem"),
                                          ("healthy", "healthy"), ("any,problems", "any")])
def test_unknown_names_are_refused_before_any_work(tmp_path, fail_on, bad, capsys, monkeypatch):
    """In this process (as a child process: test_ci_outputs.py's test_unknown_rule_stops_generate_before_any_work)."""
    result = main_in_process("generate", ROOT / "sample_data", "-o", tmp_path / "r.html", "--fail-on", fail_on,
                             capsys=capsys, monkeypatch=monkeypatch)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"reportgen: error: --fail-on: unknown name {bad}")
    for name in (*known_causes(), "problems", "insufficient-data", "LowGPUUtilization"):
        assert name in line  # the vocabulary is listed
    assert list(tmp_path.iterdir()) == []


def test_causes_come_from_the_registry(monkeypatch):
    """A cause added to the registry (as #27 and the GPU detectors do) is a valid --fail-on name at once."""
    from reportgen.diagnosis import causes as registry

    with pytest.raises(InputError):
        parse_fail_on("planted-cause")
    monkeypatch.setattr(registry, "CAUSES", (*registry.CAUSES, "planted-cause"))
    assert parse_fail_on("planted-cause,problems") == FailOn(statuses=("problems",), causes=("planted-cause",))
    monkeypatch.setattr(registry, "REGISTRY", (*registry.REGISTRY, registry.Cause("planted-gpu-cause", "Planted")))
    assert parse_fail_on("planted-gpu-cause").causes == ("planted-gpu-cause",)
    assert set(registry.CAUSES) <= set(known_causes())
    assert parse_fail_on("none") == FailOn() and not parse_fail_on("none")
    assert parse_fail_on("ANY") == FailOn(any_rule=True)
