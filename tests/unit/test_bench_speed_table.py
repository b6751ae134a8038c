"""benchmarks/speed_table.py, the speed table's arithmetic and Markdown (bench_speed_table.py measures): the
ratios from medians, a set not measured as a row that says why, a failed run named in its cell. No timing."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.support.paths import ROOT

spec = importlib.util.spec_from_file_location("speed_table", ROOT / "benchmarks" / "speed_table.py")
assert spec is not None and spec.loader is not None
speed_table = importlib.util.module_from_spec(spec)
sys.modules.setdefault("speed_table", speed_table)  # dataclasses look their module up there
spec.loader.exec_module(speed_table)


def runs(*values: tuple[float, float, float]) -> list[dict]:
    return [{"round": i, "cpu_s": c, "wall_s": w, "peak_mb": p} for i, (c, w, p) in enumerate(values)]


def measured_row():
    row = speed_table.Row(name="synthetic 2 x 100 MB", mb=200.0, files=4)
    row.runs["floor"] = [{"cpu_s": 2.9}, {"cpu_s": 2.5}, {"cpu_s": 2.7}]
    row.runs["reader"] = [{"cpu_s": 1.6}, {"cpu_s": 1.4}]
    row.runs["generate-cold"] = runs((3.6, 3.0, 160), (3.4, 2.6, 150), (4.0, 9.0, 170))
    row.runs["generate-warm"] = runs((0.3, 0.3, 50), (0.2, 0.3, 40), (0.4, 0.9, 60))
    row.runs["analyze-before"] = runs((2.0, 2.0, 100))
    row.runs["analyze-now"] = runs((2.2, 2.1, 110))
    row.why_not["hta"] = "no --hta-python"
    row.load = (1.04, 2.26)
    return row


def test_ratios_are_of_the_medians():
    row = measured_row()
    got = dict(zip(speed_table.HEADER, speed_table.cells(row)))
    assert got["MB of text"] == "200.0"
    assert got["floor CPU s (MB/CPU s)"] == "2.70 (74.1)"  # 200 / 2.7
    assert got["reader CPU s (MB/CPU s, x floor)"] == "1.50 (133.3, 0.56x)"  # median of two: 1.5; 1.5 / 2.7
    assert got["generate cold: CPU s / wall / peak (x floor CPU)"] == "3.60 / 3.00 s / 160 MB (1.33x)"
    assert got["generate warm (x cold wall)"] == "0.30 / 0.30 s / 50 MB (0.10x)"  # 0.3 / 3.0
    assert got["analyze CPU x before analyses"] == "1.10x (2.20 / 2.00 CPU s)"
    assert got["HTA (x generate cold CPU)"] == "not measured: no --hta-python"
    assert got["compare cold"] == "-"
    assert got["load"] == "1.0-2.3"


def test_a_set_not_measured_is_a_row_that_says_why():
    row = speed_table.missing_row("64 ranks x 200 MB", "not asked (--big DIR)")
    got = speed_table.cells(row)
    assert got[:2] == ["64 ranks x 200 MB", "not measured: not asked (--big DIR)"]
    assert len(got) == len(speed_table.HEADER) and set(got[2:]) == {"-"}
    table = speed_table.markdown([measured_row(), row]).splitlines()
    assert len(table) == 4 and table[1] == "|" + "---|" * len(speed_table.HEADER)
    assert table[3].startswith("| 64 ranks x 200 MB | not measured: not asked (--big DIR) | - |")
    assert all(line.count(" | ") == len(speed_table.HEADER) - 1 for line in table if "---" not in line)


def test_a_failed_run_is_named_and_a_pipe_in_it_escaped():
    row = measured_row()
    row.why_not["generate-cold"] = "failed: exit 1 | traceback"
    got = dict(zip(speed_table.HEADER, speed_table.cells(row)))
    assert got["generate cold: CPU s / wall / peak (x floor CPU)"] == "not measured: failed: exit 1 | traceback"
    assert "exit 1 \\| traceback" in speed_table.markdown([row])


@pytest.mark.parametrize("a, b, want", [(1.0, 2.0, 0.5), (None, 2.0, None), (1.0, None, None), (1.0, 0.0, None)])
def test_ratio(a, b, want):
    assert speed_table.ratio(a, b) == want


def test_median_and_format():
    assert speed_table.median([3.0, None, 1.0, 2.0]) == 2.0
    assert speed_table.median([]) is None
    assert speed_table.fmt(None) == "-"
    assert speed_table.fmt(0.0512) == "0.051"  # a small CPU time keeps two figures
    assert speed_table.fmt(1.234, 1, "x") == "1.2x"


def test_dask_line():
    got = {"single": [{"wall_s": 10.0, "cpu_s": 8.0}, {"wall_s": 12.0, "cpu_s": 9.0}],
           "local:2": [{"wall_s": 6.0, "cpu_s": 10.0, "outputs_equal": True},
                       {"wall_s": 7.0, "cpu_s": 11.0, "outputs_equal": True}]}
    line = speed_table.dask_line(got, 24)
    assert "**0.59x wall** (6.50 / 11.00 s, medians of 2), CPU 1.24x, outputs byte-equal" in line
    got["local:2"][0]["outputs_equal"] = False
    assert "outputs DIFFERENT" in speed_table.dask_line(got, 24)
    assert speed_table.dask_line({}, 24, "no fixture") == "`local:2` vs one process, 24 ranks: not measured: no fixture"


def test_reader_without_a_floor_has_no_ratio():
    row = speed_table.Row(name="XSpace recordings (2 files)", mb=1.1)
    row.runs["reader"] = [{"cpu_s": 0.02}]
    row.why_not["floor"] = "no --protobuf-python"
    got = dict(zip(speed_table.HEADER, speed_table.cells(row)))
    assert got["floor CPU s (MB/CPU s)"] == "not measured: no --protobuf-python"
    assert got["reader CPU s (MB/CPU s, x floor)"] == "0.020 (55.0, -)"
