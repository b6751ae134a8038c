"""The journeys a new user takes, from a fresh working directory, each named after what it must do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def reportgen(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``env`` values of None remove the variable."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    environment = {k: v for k, v in environment.items() if v is not None}
    return subprocess.run([sys.executable, "-m", "reportgen", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, env=environment)


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
