"""compare on a real recording (tests/recordings/cpu-torch/short) whose command line names its batch size: the
same run told it ran batch 32 and batch 64 is "not comparable because batch size 32 vs 64" with a gate that fails
closed, and ``--force`` gives the time per sample (the same steps over twice the samples: half the time each)."""

from __future__ import annotations

import json
import shutil

import pytest

from reportgen.compare.run import CompareOptions, compare
from tests.support.paths import RECORDINGS

SHORT = RECORDINGS / "cpu-torch" / "short"


def _recorded_with_batch(folder, size: int):
    """A copy of the recording whose recorded command line passed ``--batch-size size``."""
    shutil.copytree(SHORT, folder)
    recording = json.loads((folder / "recording.json").read_text())
    recording["command"] = [*recording["command"], "--batch-size", str(size)]
    (folder / "recording.json").write_text(json.dumps(recording))
    return folder


def test_different_recorded_batch_sizes_are_not_comparable_and_forced_give_the_time_per_sample(tmp_path):
    a, b = _recorded_with_batch(tmp_path / "bs32", 32), _recorded_with_batch(tmp_path / "bs64", 64)
    out = tmp_path / "c.md"
    result = compare(str(a), str(b), out, CompareOptions(fmt="md", fail_on_regression=0.05))
    verdict = json.loads(out.with_suffix(".json").read_text())["sections"]["verdict"]
    fit = verdict["comparability"]
    assert fit["comparable"] is False and (fit["batch_a"], fit["batch_b"]) == (32, 64)
    assert fit["batch_from"] == ["A: the recorded command's --batch-size 32", "B: the recorded command's --batch-size 64"]
    assert verdict["text"].startswith("Not comparable because batch size 32 vs 64 (A: the recorded command's "
                                      "--batch-size 32; B: the recorded command's --batch-size 64)")
    assert result.regression.gate() == "failed" and "batch size 32 vs 64" in result.regression.unjudged
    forced = compare(str(a), str(b), tmp_path / "f.md", CompareOptions(fmt="md", force=True))
    verdict = json.loads((tmp_path / "f.json").read_text())["sections"]["verdict"]
    reg, sample = verdict["regression"], verdict["per_sample"]
    assert reg["ratio"] == pytest.approx(1.0)  # the same steps on both sides
    assert sample["ratio"] == pytest.approx(0.5) and sample["a_ms"] == pytest.approx(2 * sample["b_ms"])
    assert sample["a_ms"] == pytest.approx(reg["base_value_s"] * 1000 / 32)
    assert verdict["text"].startswith("Compared with --force although batch size 32 vs 64")
    assert "Per sample (batch 32 vs 64, the fair comparison of these runs): " in verdict["text"]
    assert "samples per second)" not in verdict["text"]  # a step of each is not the same work
    assert forced.regression is None  # no gate asked


def test_batch_sizes_given_on_the_command_line_win_and_equal_ones_keep_the_runs_comparable(tmp_path):
    a = _recorded_with_batch(tmp_path / "bs32", 32)
    out = tmp_path / "c.md"
    compare(str(a), str(SHORT), out, CompareOptions(fmt="md", batch_a=64, batch_b=64))
    verdict = json.loads(out.with_suffix(".json").read_text())["sections"]["verdict"]
    fit = verdict["comparability"]
    assert fit["comparable"] is True and (fit["batch_a"], fit["batch_b"]) == (64, 64)
    assert fit["batch_from"] == ["A: --batch-size-a", "B: --batch-size-b"] and "per_sample" not in verdict
