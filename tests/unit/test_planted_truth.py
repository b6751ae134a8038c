"""The truth of the planted runs (tests/recordings/planted) holds together, so tests can judge the diagnosis by it.

Each run's truth.json is the script's own timing: its steps tile the loop, the planted code fits inside its
steps, the fix runs are the same job, and truth_table.py reads every run the README lists."""

import importlib.util
import json
import re

import pytest

from tests.support.paths import RECORDINGS

PLANTED = RECORDINGS / "planted"
RUNS = sorted(d.name for d in PLANTED.iterdir() if (d / "truth.json").is_file())


def truth_table():
    spec = importlib.util.spec_from_file_location("planted_truth_table", PLANTED / "truth_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_run_is_in_the_readme_tables():
    readme = (PLANTED / "README.md").read_text()
    truth_part, verdict_part = readme.split("## Today's verdict")
    listed = lambda text: set(re.findall(r"^\| `([a-z0-9-]+)` \|", text, re.M))  # run names: float64 has digits
    assert RUNS and listed(truth_part) == set(RUNS)
    assert listed(verdict_part) == set(RUNS)


@pytest.mark.parametrize("run", RUNS)
def test_steps_tile_the_loop_and_hold_the_planted_code(run):
    t = json.loads((PLANTED / run / "truth.json").read_text())
    assert len(t["step_s"]) == len(t["planted_s"]) == t["steps"]
    # the steps are the loop's iterations back to back: only the loop's own bookkeeping lies between them
    assert sum(t["step_s"]) <= t["loop_s"] <= sum(t["step_s"]) * 1.02 + 0.05
    assert all(0 <= p <= s + 1e-6 for p, s in zip(t["planted_s"], t["step_s"]))
    assert t["median_step_s"] == pytest.approx(sorted(t["step_s"])[len(t["step_s"]) // 2], rel=0.5)
    assert 0 <= t["profiler_export_s"] < t["t_end"] - t["t_script_start"]
    assert t["t_script_start"] < t["t_loop_start"] < t["t_loop_end"] <= t["t_end"]
    recording = json.loads((PLANTED / run / "recording.json").read_text())
    # the recorder saw the whole script: its window holds the script's own
    assert recording["started"] <= t["t_script_start"] and t["t_end"] <= recording["ended"]
    assert recording["exit_code"] == 0
    # the traces the recorder copied, and the XSpace files added by hand (it copied JSON only before), are all
    # there — gzip'd here where recording.json says so, but for a duplicate left out of the repository (JAX's
    # Chrome-JSON copy of its XSpace profile)
    dropped = set(recording.get("traces_dropped_from_repository", []))
    gzipped = set(recording.get("traces_gzipped_in_repository", []))
    traces = [t + ".gz" if t in gzipped else t
              for t in recording["traces_copied"] + recording.get("traces_added_by_hand", []) if t not in dropped]
    assert traces and all((PLANTED / run / trace).is_file() for trace in traces)


@pytest.mark.parametrize("run", RUNS)
def test_fix_runs_are_the_same_job_with_the_fix(run):
    t = json.loads((PLANTED / run / "truth.json").read_text())
    for path in sorted((PLANTED / run).glob("fix*-truth.json")):
        f = json.loads(path.read_text())
        assert f["mode"] == t["mode"]
        # keras-tiny-batch's fixes run the same samples in fewer steps (a larger batch, steps_per_execution)
        assert f["steps"] == t["steps"] or ("samples" in t and f["samples"] == t["samples"] and f["steps"] < t["steps"])
        assert not t["fix"] and f["fix"]


def test_truth_table_gives_each_run_its_numbers():
    rows = {r["run"]: r for r in truth_table().truth_rows()}
    assert sorted(rows) == RUNS
    for run, row in rows.items():
        t = json.loads((PLANTED / run / "truth.json").read_text())
        assert row["loop_s"] == t["loop_s"]
        fixes = [json.loads(p.read_text()) for p in sorted((PLANTED / run).glob("fix*-truth.json"))]
        less_export = truth_table().loop_less_export
        assert row["fix_saved_s"] == [less_export(t) - less_export(f) for f in fixes]
        assert 0 < less_export(t) <= t["loop_s"]
        # the profiled steps: a part of the loop, the planted cost a part of them
        assert 0 < row["profiled_steps"] <= t["steps"] and 0 < row["profiled_s"] <= t["loop_s"]
        assert 0 <= row["planted_profiled_s"] <= row["planted_s"] + 1e-9
        assert 0 <= row["planted_share_profiled"] < 1
        if "eval_s" in t:  # the planted cost the fix removes; the slow start is reported beside it
            assert row["planted_s"] + row["slow_start_s"] == pytest.approx(sum(t["planted_s"]), abs=1e-3)
        elif row["mode"] not in truth_table().LESS_THE_FIX:
            assert row["planted_s"] == pytest.approx(sum(t["planted_s"]))
