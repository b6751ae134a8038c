"""docs/ci.md's workflows run: every `reportgen` command in its YAML blocks, on sample_data/.

The commands are read out of the document, so the test runs whatever the document tells users to run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from tests.support.paths import ROOT

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
    """1 when a status, serious cause or fired rule named in --fail-on ('any': any fired rule) is in the
    produced report.json, else 0 (computed from report.json, independently of reportgen.ci_outputs). A
    regression gate against an unchanged base never trips."""
    fail_on = argv[argv.index("--fail-on") + 1] if "--fail-on" in argv else "none"
    data = json.loads(report_json.read_text(encoding="utf-8"))
    rows = data["sections"]["rules-summary-section"]["rows"]
    fired = {r["rule"].lower() for r in rows if r["times_triggered"] > 0}
    if fail_on == "none":
        return 0
    if fail_on == "any":
        return 1 if fired else 0
    listed = {name.strip().lower() for name in fail_on.split(",")}
    found = fired | {data["diagnosis"]["status"]} | {f["cause"] for f in data["diagnosis"]["findings"] if f["serious"]}
    return 1 if found & listed else 0


def run_in(workdir: Path, argv: list[str], env: dict) -> subprocess.CompletedProcess:
    if not (workdir / "sample_data").exists():
        (workdir / "sample_data").symlink_to(ROOT / "sample_data", target_is_directory=True)
    if "--base" in argv:  # the downloaded artifact: the base run's report.json (here, an unchanged re-run)
        base = workdir / argv[argv.index("--base") + 1]
        base.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(workdir / argv[argv.index("check") + 1], base)
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    environ.update(env, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "reportgen", *argv[1:]], cwd=workdir, env=environ,
                          capture_output=True, text=True)


def output_of(argv: list[str], option: str, workdir: Path) -> Path:
    return workdir / argv[argv.index(option) + 1]


def report_json_of(commands: list[list[str]], workdir: Path) -> Path:
    (generate,) = [c for c in commands if c[1] == "generate"]
    return output_of(generate, "-o", workdir).with_suffix(".json")


def test_github_workflow_commands(tmp_path):
    workflow = github_workflow()
    commands = reportgen_commands(github_commands(workflow))
    assert [c[1] for c in commands] == ["generate", "check"]
    step_summary = tmp_path / "step-summary.md"
    results = [run_in(tmp_path, argv, {"GITHUB_STEP_SUMMARY": str(step_summary)}) for argv in commands]
    report_json = report_json_of(commands, tmp_path)
    assert report_json.is_file(), results[0].stderr
    codes = [expected_exit_code(argv, report_json) for argv in commands]
    assert codes == [1, 0]  # sample_data: problems found, so the report step fails; no regression on a re-run
    assert [r.returncode for r in results] == codes, [r.stderr for r in results]
    assert "--fail-on-regression" in commands[1] and "--base" in commands[1]
    assert "**Regression gate: passed**" in output_of(commands[1], "--markdown", tmp_path).read_text(encoding="utf-8")
    # the Markdown went to the file and to the step summary page (the regression check opts out of it)
    summary = output_of(commands[0], "--markdown", tmp_path).read_text(encoding="utf-8")
    assert step_summary.read_text(encoding="utf-8") == summary + "\n"
    # every path the later steps read exists
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    (upload,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    (junit,) = [s for s in steps if s.get("uses", "").startswith("mikepenz/action-junit-report")]
    (download,) = [s for s in steps if s.get("uses", "").startswith("dawidd6/action-download-artifact")]
    for path in upload["with"]["path"].split():
        assert (tmp_path / path).is_file(), path
    assert {"profile/report.html", "profile/report.json"} <= set(upload["with"]["path"].split())
    # the artifact's root is the paths' common folder: the base's report.json is where the check reads it
    assert download["with"]["name"] == upload["with"]["name"]
    assert output_of(commands[1], "--base", tmp_path) == tmp_path / download["with"]["path"] / report_json.name
    junit_path = tmp_path / junit["with"]["report_paths"]
    assert junit_path == output_of(commands[0], "--junit", tmp_path)
    assert ET.parse(junit_path).getroot().find("testsuite").get("tests") == "9"
    # the steps after the failing one still run
    assert all("!cancelled()" in s["if"] for s in steps[steps.index(download):])


def test_gitlab_job_commands(tmp_path):
    pipeline = gitlab_pipeline()
    commands = reportgen_commands(gitlab_commands(pipeline))
    assert [c[1] for c in commands] == ["generate", "check", "check"]
    results = [run_in(tmp_path, argv, {}) for argv in commands]
    report_json = report_json_of(commands, tmp_path)
    assert report_json.is_file(), results[0].stderr
    codes = [expected_exit_code(argv, report_json) for argv in commands]
    assert codes == [0, 1, 0]  # the report job succeeds; the diagnosis gate fails; no regression on a re-run
    assert [r.returncode for r in results] == codes, [r.stderr for r in results]
    (job,) = [j for j in pipeline.values() if isinstance(j, dict) and "reports" in j.get("artifacts", {})]
    artifacts = job["artifacts"]
    assert artifacts["when"] == "always"
    for path in artifacts["paths"]:
        assert (tmp_path / path).is_file(), path
    junit_path = tmp_path / artifacts["reports"]["junit"]
    assert junit_path == output_of(commands[0], "--junit", tmp_path)
    root = ET.parse(junit_path).getroot()
    assert root.find("testsuite").get("failures") == "6"
    # the gates read the report job's artifacts; the regression gate the default branch's (paths kept)
    gates = [j for j in pipeline.values() if isinstance(j, dict) and j.get("stage") == "gate"]
    assert len(gates) == 2 and all(g["needs"] == ["profiling-report"] for g in gates)
    assert output_of(commands[2], "--base", tmp_path) == tmp_path / "base" / report_json.relative_to(tmp_path)
    assert "**Regression gate: passed**" in output_of(commands[2], "--markdown", tmp_path).read_text(encoding="utf-8")
    # the merge-request note posts the file the command wrote
    note = " ".join(job["after_script"])
    assert "body@" + str(output_of(commands[0], "--markdown", tmp_path).relative_to(tmp_path)) in note


def test_check_examples_in_the_doc_are_valid_commands():
    """The `reportgen check` examples parse and name only known --fail-on names (their report.json is the
    one the workflows write)."""
    from reportgen.ci_outputs import parse_fail_on
    from reportgen.cli import _parser

    text = DOC.read_text(encoding="utf-8")
    lines = [line for b in re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M) for line in b.splitlines()]
    commands = [c for c in reportgen_commands(lines) if c[1] == "check"]
    assert len(commands) >= 5
    parsed = [_parser().parse_args(argv[1:]) for argv in commands]
    assert all(args.report_json == Path("profile/report.json") for args in parsed)
    gates = [parse_fail_on(args.fail_on) for args in parsed]  # an unknown name raises
    assert gates[0].rules == ("LowGPUUtilization",)
    assert any(g.statuses for g in gates) and any(g.causes for g in gates)
