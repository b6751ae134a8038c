"""trend's history (#49): a rolling baseline, change points over the runs (ruptures' PELT), the first run after
a change with its size and interval, and ``trend --fail-on-change`` that fails closed."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("ruptures")

from reportgen import cli  # noqa: E402
from reportgen.compare.history import MIN_RUNS, build_history, change_points  # noqa: E402
from tests.unit.compare.test_gate_fails_closed import _report, _sections  # noqa: E402


def _series(n: int, step_at: int | None, step: float, seed: int, noise: float = 0.02) -> list[float]:
    rng = np.random.default_rng(seed)
    values = 0.3 * np.exp(noise * rng.standard_normal(n))
    if step_at is not None:
        values[step_at:] *= 1 + step
    return list(values)


def test_a_planted_ten_percent_step_is_found_at_its_first_run_with_its_size():
    values = _series(16, 10, 0.10, seed=1)
    labels = [f"run-{i}" for i in range(16)]
    history = build_history(values, labels)
    assert not history.unjudged and [c.index for c in history.changes] == [10]
    change = history.changes[0]
    assert change.label == "run-10" and 1.06 < change.ratio < 1.14 and 1 < change.low < change.ratio < change.high
    assert change.before_s == pytest.approx(np.median(values[5:10]))
    assert change.after_s == pytest.approx(np.median(values[10:15]))
    # the rolling baseline: the old level up to the change's first run, the new level from the next on
    assert history.baseline[10] == pytest.approx(np.median(values[5:10]))
    assert history.baseline[12] == pytest.approx(np.median(values[10:12]))
    assert history.baseline[0] is None and history.baseline[3] == pytest.approx(np.median(values[:3]))
    assert history.latest_slowdown(0.05) is change and history.latest_slowdown(0.20) is None


def test_a_single_slow_run_is_an_outlier_not_a_change():
    values = _series(12, None, 0.0, seed=3)
    values[6] *= 1.3
    assert change_points(values) == []


def test_runs_without_step_times_are_skipped_and_too_short_a_history_cannot_judge():
    values = _series(14, 7, 0.10, seed=2)
    values[2] = None
    history = build_history(values, [str(i) for i in range(14)])
    assert history.baseline[2] is None and history.baseline[3] == pytest.approx(np.median(values[:2]))
    assert [c.index for c in history.changes] == [7]  # the run's index, counting the one without step times
    short = build_history(values[:MIN_RUNS], [str(i) for i in range(MIN_RUNS)])
    assert short.unjudged.startswith(f"{MIN_RUNS - 1} runs with step times (fewer than {MIN_RUNS})")


def _history_files(tmp_path, ms: list[float]) -> list[str]:
    rng = np.random.default_rng(5)
    return [_report(tmp_path / f"run{i}.json", _sections([list(m / 1000 * (1 + 0.01 * rng.standard_normal(40)))]))
            for i, m in enumerate(ms)]


def test_trend_fail_on_change_trips_on_a_slower_level_and_fails_closed(tmp_path, capsys):
    slower = _history_files(tmp_path, [100, 101, 99, 100, 100, 102, 99, 111, 110, 112, 110, 111])
    argv = ["trend", *slower, "-o", str(tmp_path / "t.md"), "--format", "md", "--json", str(tmp_path / "t.json")]
    assert cli.main([*argv, "-q"]) == 0  # without the gate it shows
    assert cli.main([*argv, "--fail-on-change", "-q"]) == 1
    assert "--fail-on-change tripped: the step time changed by +" in capsys.readouterr().err
    data = json.loads((tmp_path / "t.json").read_text())
    (change,) = data["history"]["changes"]
    assert change["index"] == 7 and change["label"] == "run7" and data["runs"][7]["change"]["ratio"] > 1.05
    text = (tmp_path / "t.md").read_text()
    assert "**History: change point +" in text and "from run7 on" in text and "CHANGE +" in text
    steady = _history_files(tmp_path, [100, 101, 99, 100, 100, 101, 100, 99, 101, 100, 99, 100])
    assert cli.main(["trend", *steady, "-o", "-", "--format", "md", "--fail-on-change", "-q"]) == 0
    assert "History: no change point over 12 runs" in capsys.readouterr().out
    short = steady[:3]
    assert cli.main(["trend", *short, "-o", "-", "--format", "md", "--fail-on-change", "-q"]) == 1
    assert "--fail-on-change cannot judge: 3 runs with step times" in capsys.readouterr().err
    assert cli.main(["trend", *short, "-o", "-", "--format", "md", "--fail-on-change", "--allow-unjudged", "-q"]) == 0
