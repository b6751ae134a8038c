"""docs/ci.md's workflows run: every `reportgen` command in its YAML blocks, on sample_data/.

The commands are read out of the document, so the test runs whatever the document tells users to run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from tests.conftest import ROOT

DOC = ROOT / "docs" / "ci.md"


def yaml_blocks() -> list[dict]:
    text = DOC.read_text(encoding="utf-8")
    return [yaml.safe_load(block) for block in re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M)]


def github_workflow() -> dict:
    (workflow,) = [b for b in yaml_blocks() if "jobs" in b]
    return workflow


def gitlab_pipeline() -> dict:
    (pipeline,) = [b for b in yaml_blocks() if "jobs" not in b]
    return pipeline


def github_commands(workflow) -> list[str]:
    return [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]


def gitlab_commands(pipeline) -> list[str]:
    return [line for job in pipeline.values() if isinstance(job, dict) for line in job.get("script", [])]


def reportgen_commands(lines: list[str]) -> list[list[str]]:
    commands = [shlex.split(line) for line in lines]
    return [c for c in commands if c and c[0] == "reportgen"]


def expected_exit_code(argv: list[str], report_json: Path) -> int:
    """1 when a rule named in --fail-on (or any, for 'any') fired in the produced report.json, else 0."""
    fail_on = argv[argv.index("--fail-on") + 1] if "--fail-on" in argv else "none"
    rows = json.loads(report_json.read_text(encoding="utf-8"))["sections"]["rules-summary-section"]["rows"]
    fired = {r["rule"].lower() for r in rows if r["times_triggered"] > 0}
    if fail_on == "none":
        return 0
    listed = fired if fail_on == "any" else {name.strip().lower() for name in fail_on.split(",")}
    return 1 if fired & listed else 0


def run_in(workdir: Path, argv: list[str], env: dict) -> subprocess.CompletedProcess:
    (workdir / "sample_data").symlink_to(ROOT / "sample_data", target_is_directory=True)
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    environ.update(env, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "reportgen", *argv[1:]], cwd=workdir, env=environ,
                          capture_output=True, text=True)


def output_of(argv: list[str], option: str, workdir: Path) -> Path:
    return workdir / argv[argv.index(option) + 1]


def test_github_workflow_commands(tmp_path):
    workflow = github_workflow()
    commands = reportgen_commands(github_commands(workflow))
    assert len(commands) == 1 and commands[0][1] == "generate"
    argv = commands[0]
    step_summary = tmp_path / "step-summary.md"
    result = run_in(tmp_path, argv, {"GITHUB_STEP_SUMMARY": str(step_summary)})
    html = output_of(argv, "-o", tmp_path)
    report_json = html.with_suffix(".json")
    assert report_json.is_file(), result.stderr
    code = expected_exit_code(argv, report_json)
    assert code == 1  # sample_data: LowGPUUtilization and StepOutlier both fire, so the example fails the step
    assert result.returncode == code, result.stderr
    # the Markdown went to the file and to the step summary page
    summary = output_of(argv, "--markdown", tmp_path).read_text(encoding="utf-8")
    assert step_summary.read_text(encoding="utf-8") == summary + "\n"
    # every path the later steps read exists
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    (upload,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    (junit,) = [s for s in steps if s.get("uses", "").startswith("mikepenz/action-junit-report")]
    for path in upload["with"]["path"].split():
        assert (tmp_path / path).is_file(), path
    assert {"profile/report.html", "profile/report.json"} <= set(upload["with"]["path"].split())
    junit_path = tmp_path / junit["with"]["report_paths"]
    assert junit_path == output_of(argv, "--junit", tmp_path)
    assert ET.parse(junit_path).getroot().find("testsuite").get("tests") == "9"
    # the steps after the failing one still run
    assert upload["if"] == junit["if"] == "${{ !cancelled() }}"


def test_gitlab_job_commands(tmp_path):
    pipeline = gitlab_pipeline()
    commands = reportgen_commands(gitlab_commands(pipeline))
    assert len(commands) == 1 and commands[0][1] == "generate"
    argv = commands[0]
    result = run_in(tmp_path, argv, {})
    report_json = output_of(argv, "-o", tmp_path).with_suffix(".json")
    assert report_json.is_file(), result.stderr
    assert result.returncode == expected_exit_code(argv, report_json) == 1, result.stderr
    (job,) = [j for j in pipeline.values() if isinstance(j, dict) and "artifacts" in j]
    artifacts = job["artifacts"]
    assert artifacts["when"] == "always"
    for path in artifacts["paths"]:
        assert (tmp_path / path).is_file(), path
    junit_path = tmp_path / artifacts["reports"]["junit"]
    assert junit_path == output_of(argv, "--junit", tmp_path)
    root = ET.parse(junit_path).getroot()
    assert root.find("testsuite").get("failures") == "6"
    # no $GITHUB_STEP_SUMMARY on GitLab: only the named files were written
    assert sorted(p.name for p in (tmp_path / "profile").iterdir()) == [
        "report.html", "report.json", "rules.xml", "summary.md"]
    # the merge-request note posts the file the command wrote
    note = " ".join(job["after_script"])
    assert "body@" + str(output_of(argv, "--markdown", tmp_path).relative_to(tmp_path)) in note


def test_check_examples_in_the_doc_are_valid_commands():
    """The `reportgen check` examples parse and name only known --fail-on names (their report.json is the
    one the workflows write)."""
    from reportgen.ci_outputs import parse_fail_on
    from reportgen.cli import _parser

    text = DOC.read_text(encoding="utf-8")
    lines = [line for b in re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M) for line in b.splitlines()]
    commands = reportgen_commands(lines)
    assert len(commands) >= 4 and all(argv[1] == "check" for argv in commands)
    parsed = [_parser().parse_args(argv[1:]) for argv in commands]
    assert all(args.report_json == Path("profile/report.json") for args in parsed)
    gates = [parse_fail_on(args.fail_on) for args in parsed]  # an unknown name raises
    assert gates[0].rules == ("LowGPUUtilization",)
    assert any(g.statuses for g in gates) and any(g.causes for g in gates)
