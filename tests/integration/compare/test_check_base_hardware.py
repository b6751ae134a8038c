"""``check --base`` on two real traced runs (tests/recordings/cpu-memory: a plateau, then the same model with a
planted leak of 4 MiB a step): the Markdown after the regression check gives the hardware use, the base's
against this run's, with the numbers both report.json files hold."""

from __future__ import annotations

import json

from reportgen import cli
from reportgen.formatting import binary_bytes
from reportgen.report.efficiency import RunEfficiency, flops_rate
from tests.support.paths import RECORDINGS


def test_check_base_markdown_gives_flops_and_memory_against_the_base(tmp_path, capsys):
    for name in ("plateau", "leak"):
        assert cli.main(["generate", str(RECORDINGS / "cpu-memory" / name), "-o", str(tmp_path / f"{name}.html"),
                         "-q"]) == 0
    assert cli.main(["check", str(tmp_path / "leak.json"), "--base", str(tmp_path / "plateau.json"),
                     "--markdown", str(tmp_path / "summary.md"), "--no-step-summary", "-q"]) == 0
    text = (tmp_path / "summary.md").read_text()
    was, now = (RunEfficiency.of_sections(json.loads((tmp_path / f"{n}.json").read_text())["sections"])
                for n in ("plateau", "leak"))
    assert was.peak_allocated_bytes < now.peak_allocated_bytes and was.growth_per_step_bytes is None
    line = next(li for li in text.splitlines() if li.startswith("Use of the hardware, the base"))
    assert f"FLOP/s per rank {flops_rate(was.achieved_tflops)} → {flops_rate(now.achieved_tflops)}" in line
    assert f"peak CPU memory allocated {binary_bytes(was.peak_allocated_bytes)} → " \
           f"{binary_bytes(now.peak_allocated_bytes)}" in line
    # after the regression check, before the run's own figures
    assert text.index("Regression check") < text.index(line) < text.index("Compute: ")
    capsys.readouterr()
    assert cli.main(["check", str(tmp_path / "leak.json"), "--base", str(tmp_path / "plateau.json"), "--no-step-summary",
                     "-q"]) == 0
    assert line in capsys.readouterr().out  # no output named: the same Markdown on standard output
