"""A folder holding several jobs' data is refused with the jobs found (exit 2), run as a user would."""

from __future__ import annotations


import pytest

from tests.support.paths import REAL, need
from tests.support.cli import run_cli
from testdata.synthetic import generate


run = run_cli


@pytest.mark.fixtures
def test_a_folder_of_many_jobs_is_refused_with_the_jobs_found(tmp_path):
    folder = need(REAL)
    jobs = sorted(p.name for p in folder.iterdir() if p.is_dir())
    for command in (["generate", str(folder), "-o", str(tmp_path / "r.html")], ["analyze", str(folder), "-o",
                                                                                 str(tmp_path / "ro")]):
        result = run(*command, "-q")
        assert result.returncode == 2
        (line,) = result.stderr.strip().splitlines()
        assert line == (f"reportgen: error: {str(folder)!r} holds the profiler data of {len(jobs)} jobs "
                        f"({', '.join(jobs[:5])} and {len(jobs) - 5} more): give one job's folder, "
                        f"e.g. {str(folder / jobs[0])!r}")
        assert list(tmp_path.iterdir()) == []


def test_a_folder_of_two_raw_jobs_is_refused_and_one_of_them_is_not(tmp_path):
    for name in ("job-a", "job-b"):
        generate(tmp_path / "runs" / name / "profiler-output", nodes=1, cores=2, gpus=0, duration_s=60,
                 interval_ms=1000, seed=1)
    result = run("generate", str(tmp_path / "runs"), "-o", str(tmp_path / "r.html"), "-q")
    assert result.returncode == 2
    assert "holds the profiler data of 2 jobs (job-a, job-b): give one job's folder" in result.stderr
    result = run("generate", str(tmp_path / "runs" / "job-b"), "-o", str(tmp_path / "r.html"), "-q")
    assert result.returncode == 0, result.stderr
