"""The kernel-launch table shows people's numbers (#49: a launch table showed "65.35968891769281"): fractions to
two decimals with the exact value in data-value, counts as whole numbers."""

from __future__ import annotations

from reportgen.formatting import cell_parts
from reportgen.report.model import Table
from reportgen.report.sections.gpu_kernels_operators import gpu_analysis_blocks
from reportgen.trace_ranks import TraceRank


def test_launch_values_are_rounded_and_keep_their_exact_value():
    launch = {"kernels": 1200, "kernels_per_step": 65.35968891769281, "shorter_than_launch": 310,
              "shorter_than_launch_share": 0.2583333, "kernel_p50_us": 4.0, "launch_p50_us": 6.123456,
              "runtime_over_cutoff": 3, "launch_delay_over_cutoff": 0, "launch_delay_us": {"p50": 9.5, "p95": 30.25,
                                                                                            "max": 210.0}}
    (table,) = [b for b in gpu_analysis_blocks("0", TraceRank.of("0", {"gpu_analysis": {"launch": launch}})) if isinstance(b, Table)]
    cells = {row[0]: cell_parts(row[1], "text") for row in table.rows}
    assert cells["kernels per step"] == ("65.36", "65.35968891769281", None)
    assert cells["kernels shorter than their launch call"] == ("310", None, None)
    assert cells["... share of kernels with a known launch (%)"][0] == "25.83"
    assert cells["median kernel (µs)"] == ("4", None, None) and cells["median launch call (µs)"][0] == "6.12"
    assert cells["launch delay p50 / p95 / max (µs)"][0] == "9.5 / 30.2 / 210.0"
