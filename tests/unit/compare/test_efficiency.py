"""Achieved TFLOP/s, MFU and the memory peaks of a run (``report.efficiency``) in compare, trend and the CI
outputs (issue 48): real CPU recordings with FLOP counts and memory events (tests/recordings/cpu-memory: a
planted leak of 4 MiB a step and a plateau) against their truth, and GPU ranks as kineto.json writes them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from reportgen.ci_outputs import hardware_change_lines, hardware_lines, junit_xml, markdown_summary
from reportgen.compare.efficiency import efficiency_blocks
from reportgen.compare.trend import COLUMNS, _cells, run_of, to_markdown
from reportgen.formatting import binary_bytes
from reportgen.report.efficiency import RunEfficiency, flops_rate, mfu_text
from reportgen.report.model import Table, Text
from reportgen.section_ids import SectionId
from reportgen.trace_analysis import analyze_job, find_traces
from tests.support.paths import RECORDINGS

RUNS = RECORDINGS / "cpu-memory"
MIB = 1 << 20
GIB = 1 << 30


def _recorded(name: str) -> tuple[dict, dict, dict]:
    """(sections as report.json holds the traces, the one rank as analysed, the script's truth)."""
    doc, _ = analyze_job(find_traces(RUNS / name))
    (rank,) = doc["ranks"].values()
    truth = json.loads((RUNS / name / "truth.json").read_text())
    return {SectionId.GPU_KERNELS_OPERATORS: {"ranks": doc["ranks"]}}, rank, truth


@pytest.fixture(scope="module")
def leak():
    return _recorded("leak")


@pytest.fixture(scope="module")
def plateau():
    return _recorded("plateau")


def test_a_recorded_cpu_run_gives_its_tflops_and_memory_peak_and_the_leak_its_growth(leak, plateau):
    sections, rank, truth = leak
    use = RunEfficiency.of_sections(sections)
    assert use.flops_ranks == 1 and use.achieved_tflops == rank["flops"]["achieved_tflops"] > 0
    assert use.mfu is None and use.gpu is None  # a CPU has no peak in the table
    assert use.memory_ranks == 1 and use.memory_device == "CPU"
    # the peak: every kept tensor plus the gradients (the parameters' bytes), as the script knows it
    assert use.peak_allocated_bytes == pytest.approx(
        truth["active_steps"] * truth["leak_bytes_per_step"] + truth["param_bytes"], rel=0.02)
    assert use.peak_reserved_bytes is None and use.capacity_bytes is None  # the CPU allocator reserves nothing
    assert use.growth_per_step_bytes == pytest.approx(truth["leak_bytes_per_step"], rel=0.02)
    flat = RunEfficiency.of_sections(plateau[0])
    assert flat.growth_per_step_bytes is None  # a plateau is never a leak
    assert flat.peak_allocated_bytes < use.peak_allocated_bytes
    assert use.memory_text().startswith("CPU peak ") and "grows 4.0 MiB a step" in use.memory_text()
    # a CPU's rate in GFLOP/s: 0.000486 TFLOP/s would read as nothing
    assert use.achieved_tflops < 1e-3 and use.compute_text() == f"{use.achieved_tflops * 1000:.3g} GFLOP/s per rank"


def _gpu_rank(tflops, mfu, allocated, reserved, device="cuda:0", growth=None):
    return {"steps": [{"step": 1, "start_ms": 0, "dur_ms": 10}],
            "flops": {"per_step": 1e12, "operators": 10, "achieved_tflops": tflops, "mfu": mfu,
                      "peak_tflops": 989.4 if mfu is not None else None, "dtype": "bf16",
                      "device": "NVIDIA H100 80GB HBM3", "peak_source": "table"},
            "memory": {"devices": [
                {"device": "cpu", "device_type": 0, "absolute": True, "capacity_bytes": None,
                 "allocated": {"peak_bytes": 100 * GIB}, "reserved": None,
                 "growth": {"verdict": "growing", "per_step_bytes": 7 * MIB}},
                {"device": device, "device_type": 1, "absolute": True, "capacity_bytes": 80 * GIB,
                 "allocated": {"peak_bytes": allocated}, "reserved": {"peak_bytes": reserved},
                 "growth": {"verdict": "growing" if growth else "plateau", "per_step_bytes": growth or 0}}]}}


def test_several_gpu_ranks_give_the_mean_tflops_and_the_largest_gpu_peak_not_the_host():
    sections = {SectionId.GPU_KERNELS_OPERATORS: {"ranks": {
        "0": _gpu_rank(300.0, 0.30, 20 * GIB, 24 * GIB),
        "1": _gpu_rank(200.0, 0.20, 30 * GIB, 32 * GIB, device="cuda:1", growth=2 * MIB)}}}
    use = RunEfficiency.of_sections(sections)
    assert use.achieved_tflops == 250.0 and use.mfu == pytest.approx(0.25) and use.dtype == "bf16"
    assert (use.memory_device, use.peak_allocated_bytes, use.peak_reserved_bytes) == ("GPU", 30 * GIB, 32 * GIB)
    assert use.capacity_bytes == 80 * GIB and use.growth_per_step_bytes == 2 * MIB  # the GPU's, not the host's 7
    assert use.compute_text() == "250 TFLOP/s per rank, MFU 25.0 % (bf16 peak of the NVIDIA H100 80GB HBM3)"
    assert use.memory_text() == "GPU peak 30.0 GiB allocated, 32.0 GiB reserved of 80.0 GiB, grows 2.0 MiB a step"
    # one rank without a peak: no MFU (a mean over some ranks would not be the job's)
    sections[SectionId.GPU_KERNELS_OPERATORS]["ranks"]["1"] = _gpu_rank(200.0, None, 30 * GIB, 32 * GIB)
    assert RunEfficiency.of_sections(sections).mfu is None


def test_nothing_known_from_runs_without_traces_or_with_damaged_entries():
    for sections in ({}, None, [], {SectionId.GPU_KERNELS_OPERATORS: {"ranks": {"0": "x", "1": {"flops": [1]}}}},
                     {SectionId.GPU_KERNELS_OPERATORS: {"ranks": {"0": {"memory": {"devices": "no"}}}}}):
        use = RunEfficiency.of_sections(sections)
        assert not use.known and use.compute_text() is None and use.memory_text() is None
    assert efficiency_blocks(RunEfficiency(), RunEfficiency()) == ([], {})


def _rows(blocks) -> dict:
    (table,) = [b for b in blocks if isinstance(b, Table)]
    assert table.id == "efficiency-compare"
    return {row[0]: tuple(row[1:]) for row in table.rows}


def test_compare_shows_both_runs_use_of_the_hardware_with_the_change(leak, plateau):
    ea, eb = RunEfficiency.of_sections(plateau[0]), RunEfficiency.of_sections(leak[0])
    blocks, data = efficiency_blocks(ea, eb)
    rows = _rows(blocks)
    a, b, change, pct = rows["Achieved GFLOP/s per rank"]
    assert (a, b) == (ea.achieved_tflops * 1000, eb.achieved_tflops * 1000)
    assert pct == f"{'+' if b > a else '−'}{abs((b - a) / a * 100):.1f}"
    a, b, change, _ = rows["CPU peak allocated (MiB)"]
    assert a == pytest.approx(ea.peak_allocated_bytes / MIB) and b == pytest.approx(eb.peak_allocated_bytes / MIB)
    assert change == f"+{b - a:.2f}"
    assert rows["CPU memory growth per step (MiB)"][:2] == (None, pytest.approx(4.0, rel=0.02))
    assert "MFU (%)" not in rows and "CPU peak reserved (MiB)" not in rows  # neither run has them
    assert data["a"]["peak_allocated_bytes"] == ea.peak_allocated_bytes and data["b"]["memory_device"] == "CPU"


def test_a_run_without_counts_is_told_how_to_get_them_and_gpu_is_not_set_against_cpu(leak):
    blocks, _ = efficiency_blocks(RunEfficiency(), RunEfficiency.of_sections(leak[0]))
    notes = " ".join(b.text for b in blocks if isinstance(b, Text))
    assert "A's traces have no FLOP counts" in notes and "with_flops=True" in notes
    assert "A's traces have no memory events" in notes and "profile_memory=True" in notes
    gpu = RunEfficiency.of_sections({SectionId.GPU_KERNELS_OPERATORS: {"ranks": {
        "0": _gpu_rank(300.0, 0.30, 20 * GIB, 24 * GIB)}}})
    cpu = RunEfficiency.of_sections(leak[0])
    blocks, _ = efficiency_blocks(cpu, gpu)
    rows = _rows(blocks)
    assert not any("peak" in title for title in rows)
    assert rows["Achieved TFLOP/s per rank"][:2] == (cpu.achieved_tflops, 300.0)  # TFLOP/s: one run reaches one
    assert any(isinstance(b, Text) and "A's peaks are of its CPU, B's of its GPU" in b.text for b in blocks)


def test_trend_keeps_each_runs_tflops_and_memory_and_shows_them(leak, plateau):
    runs = [run_of({"sections": s}, name, f"{name}/report.json") for name, s in (("plateau", plateau[0]),
                                                                                 ("leak", leak[0]))]
    data = runs[1].to_data()
    use = RunEfficiency.of_sections(leak[0])
    assert data["achieved_tflops"] == use.achieved_tflops and data["peak_allocated_bytes"] == use.peak_allocated_bytes
    assert data["memory_growth_per_step_bytes"] == use.growth_per_step_bytes and data["mfu"] is None
    cells = dict(zip(COLUMNS, _cells(runs[1])))
    assert cells["FLOP/s"] == f"{use.achieved_tflops * 1000:.3g} GFLOP/s" and cells["MFU"] == "—"
    assert cells["Peak memory"] == f"CPU {use.peak_allocated_bytes / MIB:.1f} MiB"
    table = [line for line in to_markdown(runs, 0.05).splitlines() if line.startswith("|")]
    assert all(line.count("|") == len(COLUMNS) + 1 for line in table)  # header, alignment and rows line up


def test_the_ci_summary_and_junit_carry_the_runs_tflops_and_memory(leak):
    sections, _, _ = leak
    use = RunEfficiency.of_sections(sections)
    data = {"job": {"name": "leak"}, "sections": sections}
    (line, blank) = hardware_lines(data)
    assert line.startswith(f"Compute: {use.compute_text()}. Memory: CPU peak ") and blank == ""
    assert line in markdown_summary(data)
    props = {p.get("name"): p.get("value") for p in ET.fromstring(junit_xml(data)).iter("property")}
    assert float(props["achieved_tflops"]) == use.achieved_tflops
    assert float(props["peak_allocated_bytes"]) == use.peak_allocated_bytes and props["memory_device"] == "CPU"
    assert "mfu" not in props and "peak_reserved_bytes" not in props  # a CPU run: not known, not written
    assert hardware_lines({"sections": {}}) == []


def test_check_base_gives_the_hardware_use_of_the_base_against_this_run(leak, plateau):
    base, new = {"sections": plateau[0]}, {"sections": leak[0]}
    was, now = RunEfficiency.of_sections(plateau[0]), RunEfficiency.of_sections(leak[0])
    (line, blank) = hardware_change_lines(base, new)
    flops = f"{(now.achieved_tflops - was.achieved_tflops) / was.achieved_tflops * 100:+.1f} %".replace("-", "−")
    memory = f"{(now.peak_allocated_bytes - was.peak_allocated_bytes) / was.peak_allocated_bytes * 100:+.1f} %"
    assert line == (f"Use of the hardware, the base's → this run's: FLOP/s per rank {flops_rate(was.achieved_tflops)} → "
                    f"{flops_rate(now.achieved_tflops)} ({flops}); peak CPU memory allocated "
                    f"{binary_bytes(was.peak_allocated_bytes)} → {binary_bytes(now.peak_allocated_bytes)} ({memory}).")
    assert blank == "" and "MFU" not in line  # neither has a peak to be measured against
    (line, _) = hardware_change_lines({"sections": {}}, new)
    assert "FLOP/s per rank not in its traces → " in line and "(" not in line.split("→", 1)[1].split(";")[0]
    assert hardware_change_lines({}, {"sections": {}}) == []
    gpu = {"sections": {SectionId.GPU_KERNELS_OPERATORS: {"ranks": {"0": _gpu_rank(300.0, 0.3, 20 * GIB, 24 * GIB)}}}}
    (line, _) = hardware_change_lines(new, gpu)
    assert "MFU not in its traces → 30.0 %" in line and "memory" not in line  # a GPU's peak is not a CPU's


def test_a_small_mfu_keeps_two_digits_instead_of_reading_zero():
    # a ResNet on a V100 whose convolutions carry no FLOP count: 0.015 %, a floor, never "0.0 %"
    assert [mfu_text(v) for v in (0.315, 0.001, 0.00015, 0.0)] == ["31.5 %", "0.1 %", "0.015 %", "0.0 %"]
    use = RunEfficiency(achieved_tflops=0.0024, mfu=0.00015, dtype="fp32", gpu="Tesla V100-DGXS-32GB")
    assert use.compute_text() == "2.4 GFLOP/s per rank, MFU 0.015 % (fp32 peak of the Tesla V100-DGXS-32GB)"
