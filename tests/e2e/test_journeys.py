"""The journeys a new user takes, from a fresh working directory, each named after what it must do."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.rulebook import RULE_ORDER
from tests.support.cli import run_cli
from tests.support.paths import ROOT

reportgen = run_cli  # ``env`` values of None remove the variable


NO_AWS = {"AWS_REGION": None, "AWS_DEFAULT_REGION": None, "AWS_PROFILE": None, "AWS_CONFIG_FILE": "/nonexistent",
          "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}


def with_sample_data(folder: Path) -> Path:
    """A working directory holding ``sample_data`` as the README's examples expect it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sample_data").symlink_to(ROOT / "sample_data", target_is_directory=True)
    return folder


# ---------------------------------------------------------------------- compare with a relative -o


def test_compare_with_relative_output_writes_compare_json_beside_it(tmp_path):
    cwd = with_sample_data(tmp_path / "work")
    (cwd / "sub").mkdir()
    result = reportgen("compare", "sample_data", "sample_data", "-o", "sub/c.html", "-q", cwd=cwd)
    assert result.returncode == 0, result.stderr
    data = json.loads((cwd / "sub" / "c.json").read_text())
    assert data["a"]["label"] == "A" and data["b"]["label"] == "B"
    assert sorted(p.name for p in (cwd / "sub").iterdir()) == ["c.html", "c.json"]


def test_compare_output_in_a_parent_folder_is_not_stranded(tmp_path):
    cwd = with_sample_data(tmp_path / "work")
    result = reportgen("compare", "sample_data", "sample_data", "-o", "../cmp/compare.html", "-q", cwd=cwd)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "cmp").iterdir()) == ["compare.html", "compare.json"]


# ---------------------------------------------------------------------- a mistyped folder, a job name


def test_mistyped_local_folder_says_no_folder_here_before_any_aws(tmp_path):
    result = reportgen("generate", "run1", "-o", "x.html", cwd=tmp_path,
                       env=NO_AWS)
    assert result.returncode == 2
    assert result.stderr.strip() == (f"reportgen: error: no folder run1 here ({tmp_path}); for the SageMaker "
                                     "training job of that name write job:run1 (or give its ARN)")
    assert list(tmp_path.iterdir()) == []


def test_job_prefix_states_a_training_job_name_and_goes_to_aws(tmp_path):
    result = reportgen("generate", "job:run1", "-o", "x.html", cwd=tmp_path,
                       env=NO_AWS)
    assert result.returncode == 2
    assert result.stderr.strip().endswith("No AWS region configured: set AWS_REGION (or a region in your AWS "
                                          "profile), or give the job's full ARN.")


def test_job_prefix_with_an_invalid_name_is_an_input_error(tmp_path):
    result = reportgen("generate", "job:bad_name!", "-o", "x.html", cwd=tmp_path)
    assert result.returncode == 2
    assert "'bad_name!' is not a SageMaker training-job name" in result.stderr


# ---------------------------------------------------------------------- keeping the rule outputs, analyze
# (run by the README test below: its commands are these journeys, exactly as the README writes them)


def _tables(report_json: Path) -> dict:
    data = json.loads(report_json.read_text())
    return data["sections"]


def check_kept_rule_outputs_render_the_same_report(cwd: Path) -> None:
    """``generate sample_data -o r.html --rule-outputs ro/`` then ``generate ro/ -o again.html``: ro/ holds
    every rule's output in SageMaker's schema, and the report made from it is the first one."""
    kept = sorted(p.name for p in (cwd / "ro").iterdir())
    extras = ["data-quality.json", "framework-account.json", "timeline.json"]  # the last: the step-time account
    rules = [name for name in kept if name not in extras]
    assert rules == sorted(f"{name}.json" for name in RULE_ORDER)
    assert kept == sorted(rules + extras)
    for name in rules:  # SageMaker's schema
        assert set(json.loads((cwd / "ro" / name).read_text())) >= {"RuleTriggered", "Violations", "Details",
                                                                     "Datapoints", "RuleParameters"}
    one, two = _tables(cwd / "r.json"), _tables(cwd / "again.json")
    one.pop("data-quality"), two.pop("data-quality")  # the second run notes nothing new; compared below
    assert one == two
    assert (json.loads((cwd / "r.json").read_text())["sections"]["data-quality"]["problems"] ==
            json.loads((cwd / "again.json").read_text())["sections"]["data-quality"]["problems"])


def check_progress_names_only_paths_that_exist(cwd: Path, stderr: str) -> None:
    """The progress lines of a run never print a path that will not exist (a work folder, a temporary file)."""
    assert stderr.strip(), "the run printed no progress"
    for line in stderr.splitlines():
        for word in line.replace("(", " ").replace(")", " ").split():
            if "/" in word and ("reportgen-" in word or word.startswith("/tmp")):
                assert Path(word).exists() or (cwd / word).exists(), line


def check_analyze_wrote_only_the_rule_outputs(cwd: Path, stderr: str) -> None:
    """``analyze sample_data -o rules/`` runs only the engine: the rule outputs and nothing else."""
    assert "notebook" not in stderr
    names = sorted(p.name for p in (cwd / "rules").iterdir())
    assert len(names) == 14 and {"LowGPUUtilization.json", "timeline.json", "framework-account.json"} <= set(names)


def test_analyze_on_a_folder_of_pytorch_traces_only_writes_kineto_json(tmp_path):
    from testdata.kineto_synthetic import KinetoSet, write_set

    write_set(KinetoSet(ranks=2, mb=0.3, cycles=1, straggler=None, layers=1), tmp_path / "traces")
    result = reportgen("analyze", "traces", "-o", "rules", cwd=tmp_path)
    assert result.returncode == 0, result.stderr  # it said "--recompute needs raw profiler data"
    doc = json.loads((tmp_path / "rules" / "kineto.json").read_text())
    assert list(doc["ranks"]) == ["0", "1"]
    assert json.loads((tmp_path / "rules" / "data-quality.json").read_text())["total"] == 0


def test_rule_outputs_folder_holding_other_files_is_refused_before_any_work(tmp_path):
    cwd = with_sample_data(tmp_path / "work")
    (cwd / "mine").mkdir()
    (cwd / "mine" / "notes.txt").write_text("keep me")
    result = reportgen("analyze", "sample_data", "-o", "mine", cwd=cwd)
    assert result.returncode == 2
    assert result.stderr.strip() == ("reportgen: error: mine: the folder holds other files (notes.txt); give a new "
                                     "or empty folder for the rule outputs")
    assert (cwd / "mine" / "notes.txt").read_text() == "keep me"


# ---------------------------------------------------------------------- rule parameters on rule outputs


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory) -> Path:
    """``reportgen analyze sample_data -o rules``, once for the tests below (each copies it: read only)."""
    cwd = with_sample_data(tmp_path_factory.mktemp("analyzed"))
    result = reportgen("analyze", "sample_data", "-o", "rules", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return cwd / "rules"


def test_rule_param_on_rule_outputs_is_refused_naming_recompute(tmp_path, analyzed):
    cwd = with_sample_data(tmp_path / "work")
    shutil.copytree(analyzed, cwd / "job" / "profiler-reports")
    for raw in ("system", "framework"):  # SageMaker's layout: rule outputs and the raw data beside them
        (cwd / "job" / raw).symlink_to(ROOT / "sample_data" / raw, target_is_directory=True)
    result = reportgen("generate", "job", "-o", "r.html", "--rule-param", "LowGPUUtilization.threshold_p95=80",
                       cwd=cwd)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "reportgen: error: --rule-param/--config change how the rules run, but job has rule outputs, "
        "which are shown as they are: add --recompute to run the rules on its raw data with them")
    assert not (cwd / "r.html").exists()
    recomputed = reportgen("generate", "job", "-o", "r.html", "-q", "--recompute", "--rule-param",
                           "LowGPUUtilization.threshold_p95=80", cwd=cwd)
    assert recomputed.returncode == 0, recomputed.stderr


def test_config_on_rule_outputs_without_raw_data_says_there_is_nothing_to_recompute(tmp_path, analyzed):
    cwd = with_sample_data(tmp_path / "work")
    shutil.copytree(analyzed, cwd / "ro")
    (cwd / "rules.toml").write_text("[LowGPUUtilization]\nthreshold_p95 = 80\n")
    result = reportgen("generate", "ro", "-o", "r.html", "--config", "rules.toml", cwd=cwd)
    assert result.returncode == 2
    assert "ro has only rule outputs (no raw profiler data to run the rules on" in result.stderr


# ---------------------------------------------------------------------- report texts


def _section_texts(builder, rule: str, details: dict) -> list[str]:
    from reportgen.report.model import Text
    from reportgen.rule_outputs import RuleOutput, RuleOutputs

    made = RuleOutputs(folder=Path("job"))
    made.rules[rule] = RuleOutput(name=rule, triggered=1, violations=3, details=details, datapoints=2000,
                                  parameters_text="")
    return [b.text for b in builder(made).blocks if isinstance(b, Text)]


def test_gpu_memory_paragraph_prints_the_5th_and_95th_percentiles_of_a_large_gap():
    from reportgen.report.sections import gpu_memory

    details = {"algo-1": {"gpu0": {"gpu_max": 92.0, "p95": 74.25, "p05": 0.0, "p25": 30, "p50": 31, "p75": 32}}}
    text = next(t for t in _section_texts(gpu_memory.build, "GPUMemoryIncrease", details) if "gpu0 on node" in t)
    assert text == ("The maximum memory utilization of gpu0 on node algo-1 was 92 %. Its 5th percentile was only "
                    "0 %. The gap between the 5th percentile (0 %) and the 95th percentile (74.2 %) is large: "
                    "memory use fluctuates strongly.")


def test_gpu_memory_gap_is_judged_on_the_values_not_a_rounded_down_95th_percentile():
    from reportgen.report.sections import gpu_memory

    details = {"algo-1": {"gpu0": {"gpu_max": 80.0, "p95": 55.9, "p05": 5.0}}}  # int(55.9) - 5 = 50: not > 50
    text = next(t for t in _section_texts(gpu_memory.build, "GPUMemoryIncrease", details) if "gpu0 on node" in t)
    assert "(5 %) and the 95th percentile (55.9 %) is large" in text


def test_gpu_utilization_text_rounds_its_percentiles():
    from reportgen.report.sections import gpu

    details = {"algo-1": {"gpu0": {"gpu_max": 99.99999999, "gpu_95": 16.049999999999955, "gpu_5": 0.0}}}
    text = next(t for t in _section_texts(gpu.build_utilization, "LowGPUUtilization", details) if "gpu0" in t)
    assert text == ("The maximum utilization of gpu0 on node algo-1 was 100 %. Its 95th percentile was only 16 %: "
                    "the GPU is underutilized. Its 5th percentile was only 0 %.")


# ---------------------------------------------------------------------- Jupyter


def test_notebook_charts_are_plotly_figures_the_user_can_restyle():
    import plotly.graph_objects as go

    from reportgen.notebook import open_report

    report = open_report(str(ROOT / "sample_data"))
    figures = report.figures("gpu-memory")
    assert figures and all(isinstance(f, go.Figure) for f in figures)
    figures[0].update_layout(height=640, title_text="mine")
    assert figures[0].layout.height == 640 and figures[0].layout.title.text == "mine"
    # the section's first chart, wherever the layout put it (beside its text, in a row, behind <details>)
    assert [t.type for t in figures[0].data] == [t["type"] for t in
                                                 report.report.section("gpu-memory").charts()[0].figure["data"]]


def test_notebook_extra_installs_a_jupyter_front_end():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("jupyterlab") for req in extras["notebook"])
    readme = (ROOT / "README.md").read_text()
    assert "pip install -e '.[notebook]'" in readme and "jupyter lab notebooks/profiler_report.ipynb" in readme


# ---------------------------------------------------------------------- the README, exactly as written


def _readme_commands() -> list[str]:
    """The README's runnable examples: the "Examples" block, the Jupyter papermill line and the report
    command of the first of the two commands (its setup part is what made this environment)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = readme.split("```bash\n")[1:]
    blocks = [block.split("```", 1)[0] for block in blocks]
    examples = next(b for b in blocks if b.startswith("reportgen generate sample_data -o report.html\n"))
    commands = examples.splitlines()
    commands.append(next(b for b in blocks if b.startswith("bash scripts/setup.sh &&")).split("&&", 1)[1].strip())
    commands.append(next(b for b in blocks if b.startswith(".venv/bin/papermill ")).strip())
    return commands


@pytest.mark.slow
def test_readme_examples_run_exactly_as_written_from_a_fresh_folder(tmp_path):
    commands = _readme_commands()
    assert len(commands) == 7 and commands[1] == "reportgen generate sample_data -o r.html --rule-outputs ro/"
    cwd = with_sample_data(tmp_path / "work")
    (cwd / "notebooks").symlink_to(ROOT / "notebooks", target_is_directory=True)
    (cwd / ".venv").mkdir()
    (cwd / ".venv" / "bin").symlink_to(Path(sys.executable).parent, target_is_directory=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    stderr = {}
    for command in commands:
        run = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, env=env)
        assert run.returncode == 0, f"{command}: {run.stderr[-1500:]}"
        stderr[command] = run.stderr
        if command.startswith("reportgen generate"):  # the progress goes to stderr, nothing to stdout
            assert run.stdout == "" and "executing the analysis notebook" in run.stderr, command
            assert "wrote " in run.stderr.strip().splitlines()[-1], command
    made = {p.name for p in cwd.iterdir()}
    assert made == {"report.html", "report.json", "r.html", "r.json", "ro", "again.html", "again.json", "rules",
                    "compare.html", "compare.json", "executed.ipynb",
                    "sample_data", "notebooks", ".venv"}  # no leftovers (the last three were here before)
    check_kept_rule_outputs_render_the_same_report(cwd)
    for command in commands[:3]:  # generate from raw data, keeping the rule outputs, and from them
        check_progress_names_only_paths_that_exist(cwd, stderr[command])
    check_analyze_wrote_only_the_rule_outputs(cwd, stderr["reportgen analyze sample_data -o rules/"])


def _journey_commands(heading: str) -> list[str]:
    """The commands of the README's ``bash`` blocks under a journey's heading, up to the next heading."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    part = readme.split(f"\n{heading}\n", 1)[1].split("\n#", 1)[0]
    return [line for block in part.split("```bash\n")[1:] for line in block.split("```", 1)[0].splitlines()]


@pytest.mark.slow
def test_readme_trace_and_record_journeys_run_as_written_on_the_repositorys_runs(tmp_path):
    """Journeys 2 and 3 with the sample data the repository gives them (tests/recordings, examples/train.py),
    each output named as the README says."""
    traces, recorded = _journey_commands("### 2. PyTorch profiler traces"), _journey_commands(
        "### 3. Any training command, recorded")
    assert traces == ["reportgen generate tests/recordings/cpu-memory/leak -o leak.html"]
    assert recorded[0] == "reportgen record --interval 500ms --out run1 -- python examples/train.py"
    assert len(recorded) == 3
    cwd = tmp_path / "clone"
    cwd.mkdir()
    (cwd / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    (cwd / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for command in traces + recorded:
        run = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, env=env)
        assert run.returncode == 0, f"{command}: {run.stderr[-1500:]}"
    assert {p.name for p in cwd.iterdir()} == {"tests", "examples", "leak.html", "leak.json", "run1", "run1.html",
                                               "run1.json", "fix.html", "fix.json"}
    leak = json.loads((cwd / "leak.json").read_text())
    assert [f["cause"] for f in leak["diagnosis"]["findings"]] == ["memory-leak"]  # what the README promises
    recording = json.loads((cwd / "run1" / "recording.json").read_text())
    assert recording["exit_code"] == 0 and recording["samples"] >= 5
    assert json.loads((cwd / "run1.json").read_text())["sections"]["system-usage-statistics"]["rows"]
    fix = json.loads((cwd / "fix.json").read_text())["sections"]["verdict"]
    # 4 DataLoader workers: B is faster, as the runs' own timing says (the loop 7.41 s -> 1.66 s, truth.json); the
    # recordings' traces have no job around them, so the profiled steps judge
    assert fix["speed"] == "faster" and fix["speed_from"] == "profiled steps"


# ---------------------------------------------------------------------- setup


def test_setup_probes_pythons_quietly_and_says_one_line(tmp_path):
    """A pyenv shim for an uninstalled version prints "command not found" when run: not shown to the user."""
    shims = tmp_path / "shims"
    shims.mkdir()
    for name in ("python3.12", "python3.11"):
        (shims / name).write_text(f"#!/bin/sh\necho 'pyenv: {name}: command not found' >&2\nexit 127\n")
        (shims / name).chmod(0o755)
    (shims / "python3.10").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    env["PATH"] = f"{shims}{os.pathsep}/usr/bin{os.pathsep}/bin"
    run = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh"), "--probe"], capture_output=True, text=True,
                         env=env)
    assert run.returncode == 0
    assert run.stdout == ""
    version = ".".join(map(str, sys.version_info[:3]))
    assert run.stderr == f"setup: Python {version} (python3.10)\n"


# ---------------------------------------------------------------------- sample_data/README.md


def test_sample_data_readme_counts_are_the_reports(tmp_path):
    from reportgen.engine import analyze

    rules = analyze(ROOT / "sample_data", tmp_path).rules
    readme = (ROOT / "sample_data" / "README.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in readme.splitlines() if line.startswith("| ")}
    cpu, io = rules["CPUBottleneck"], rules["IOBottleneck"]
    assert f"**{cpu['Violations']} of {cpu['Datapoints']}** snapshots" in rows["CPUBottleneck"]
    assert f"**{io['Violations']} of {io['Datapoints']}** snapshots" in rows["IOBottleneck"]
    assert f"**{rules['LowGPUUtilization']['Violations']} violations**" in rows["LowGPUUtilization"]
    assert f"**{rules['GPUMemoryIncrease']['Violations']} violations**" in rows["GPUMemoryIncrease"]


# ---------------------------------------------------------------------- rule semantics


def test_step_outlier_does_not_recount_a_phase_in_windows_where_only_another_phase_got_steps():
    from reportgen.engine.rules import step_outlier
    from tests.support.engine_builders import T0, data, events, us

    train, t = [], T0 + 1.0
    for i, d in enumerate([0.1] * 200 + [1.0] * 15):  # all in the first minute: 15 outliers > 10
        train.append({"start_us": us(t), "end_us": us(t + d), "name": "Step:ModeKeys.TRAIN", "step_num": str(i),
                      "node_id": "algo-1-27"})
        t += d + 0.05
    evals = [{"start_us": us(T0 + 60 * m + 5), "end_us": us(T0 + 60 * m + 6), "name": "Step:ModeKeys.EVAL",
              "step_num": str(m), "node_id": "algo-1-27"} for m in (1, 2)]  # later minutes: EVAL steps only
    r = step_outlier.evaluate(data(ev=events(train + evals)))
    assert (r["RuleTriggered"], r["Violations"]) == (1, 15)  # was (3, 15): TRAIN re-counted in minutes 2 and 3


def test_load_balancing_does_not_fire_on_a_balanced_pair_and_reports_the_final_distance():
    import numpy as np

    from reportgen.engine.params import LoadBalancingParams
    from reportgen.engine.rules import load_balancing
    from tests.support.engine_builders import data, node, ticks

    n = 1500  # 12.5 minutes at 500 ms: patience (1000 samples) passed in minute 9
    rng = np.random.default_rng(7)
    busy = (np.arange(n) // 20) % 10 < 7  # the same compute / input-wait rhythm on both GPUs
    gpu0 = np.where(busy, 80 + 4 * rng.standard_normal(n), rng.uniform(0, 5, n))
    gpu1 = np.where(busy, 77 + 4 * rng.standard_normal(n), rng.uniform(0, 5, n))  # 3 points apart
    imbalanced = np.where(busy, 65 + 4 * rng.standard_normal(n), rng.uniform(0, 5, n))  # 15 points apart
    balanced = data([node(ticks(n), {"gpu0/GPUUtilization": gpu0, "gpu1/GPUUtilization": gpu1})])
    r = load_balancing.evaluate(balanced)
    final = r["Details"]["algo-1"]["distances"]["gpu0"]["gpu1"]
    assert (r["RuleTriggered"], r["Violations"]) == (0, 0) and 0.1 < final < 0.4
    assert load_balancing.evaluate(balanced, LoadBalancingParams(threshold=0.2))["RuleTriggered"] > 0  # the old default
    r = load_balancing.evaluate(data([node(ticks(n), {"gpu0/GPUUtilization": gpu0,
                                                       "gpu1/GPUUtilization": imbalanced})]))
    assert r["RuleTriggered"] == 5 and r["Details"]["algo-1"]["distances"]["gpu0"]["gpu1"] > 0.5  # windows 8-12


# ---------------------------------------------------------------------- README hygiene


def test_readme_usage_lists_every_option_of_every_command():
    import argparse

    from reportgen.cli import _parser

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    usage = readme.split("## Usage", 1)[1].split("Ways in", 1)[0]
    missing = [f"{name} {'/'.join(action.option_strings)}" for name, command in sub.choices.items()
               for action in command._actions
               if action.option_strings and "--help" not in action.option_strings
               and not any(f"{option} " in readme or f"{option}]" in usage or f"[{option}" in usage
                           for option in action.option_strings)]
    assert missing == []
