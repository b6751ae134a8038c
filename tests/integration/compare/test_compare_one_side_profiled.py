"""compare of a recording without profiler traces (cpu-torch/plain) against one with them (cpu-torch/short): the
verdict's throughput sentence says the profiled steps have nothing to be compared with, never "B runs None %"."""

from __future__ import annotations

import json

from reportgen.compare.run import CompareOptions, compare
from tests.support.paths import RECORDINGS


def test_profiled_steps_on_one_side_only_give_no_change_and_no_none(tmp_path):
    out = tmp_path / "c.md"
    compare(str(RECORDINGS / "cpu-torch" / "plain"), str(RECORDINGS / "cpu-torch" / "short"), out,
            CompareOptions(fmt="md"))
    verdict = json.loads(out.with_suffix(".json").read_text())["sections"]["verdict"]
    assert verdict["throughput"]["profiled_change_pct"] is None and verdict["throughput"]["profiled_a"] is None
    cover = verdict["profiled_coverage"]["b"]
    assert (f"The profiled steps cover only {100 * cover:.1f} % of B (A has no profiled steps to compare them "
            "with).") in verdict["text"]
    assert "None" not in out.read_text()
