"""``compare`` of two PyTorch profiler trace folders, GPU side (issue 28): kernel time per step, which kernels
got faster / slower / new / gone, the overlap of communication with compute and the step breakdown, and the
causes fixed. A: the generator's job with fp32 GEMMs on an A100 (no-mixed-precision) or all-reduces after
backward (communication-bound); B: the same job healthy (bf16, overlapped)."""

from __future__ import annotations

import json

import pytest

from reportgen.compare.run import CompareOptions, compare
from testdata.kineto_synthetic import FP32_NAMES, GEMM_TN, KinetoSet, write_set


def _compare(tmp_path, cause_a):
    a, b = tmp_path / "a", tmp_path / "b"
    write_set(KinetoSet(ranks=2, mb=2.5, seed=3, cycles=1, straggler=None, cause=cause_a), a)
    write_set(KinetoSet(ranks=2, mb=2.5, seed=3, cycles=1, straggler=None), b)
    out = tmp_path / "compare.md"
    compare(str(a), str(b), out, CompareOptions(fmt="md"))
    return json.loads(out.with_suffix(".json").read_text())["sections"], out.read_text()


def test_fp32_to_bf16_kernels_gone_new_and_faster(tmp_path):
    sections, md = _compare(tmp_path, "no-mixed-precision")
    gpu = sections["operators"]["trace_kernels"]
    a, b = gpu["a"], gpu["b"]
    assert a["kernel_ms_per_step"] > 2 * b["kernel_ms_per_step"]  # fp32 GEMMs 2.6x slower in A
    status = {k["kernel"]: k["status"] for k in gpu["kernels"]}
    assert status[FP32_NAMES[GEMM_TN]] == "gone from B's top 15"
    assert status[GEMM_TN] == "new in B's top 15"
    for k in gpu["kernels"]:  # a status says what the numbers say
        if k["status"] == "faster":
            assert k["b_ms_per_step"] < 0.95 * k["a_ms_per_step"]
        elif k["status"] == "same":
            assert k["b_ms_per_step"] == pytest.approx(k["a_ms_per_step"], rel=0.05)
    # A's step is nearly all compute kernels (fp32 GEMMs back to back): the breakdown's kernel share says so
    assert a["breakdown_ms_per_step"]["kernel"] == pytest.approx(a["kernel_ms_per_step"], rel=0.1)
    causes = sections["verdict"]["causes"]
    # B has no finding; traces alone judge no memory and 2 profiled steps no step times, so B is not called healthy
    assert causes["a_status"] == "problems" and causes["b_status"] == "insufficient-data"
    assert causes["fixed"] == ["no-mixed-precision"] and causes["new"] == [] and causes["remaining"] == []
    assert "trace-kernels-compare" in md or "GPU kernel" in md


def test_overlap_and_exposed_communication_change(tmp_path):
    sections, _ = _compare(tmp_path, "communication-bound")
    gpu = sections["operators"]["trace_kernels"]
    a, b = gpu["a"], gpu["b"]
    assert a["comm_comp_overlap_pct"] == pytest.approx(0.0, abs=0.01) and b["comm_comp_overlap_pct"] > 75
    assert a["exposed_comm_per_step_ms"] > 100 and b["exposed_comm_per_step_ms"] < 5
    assert a["breakdown_ms_per_step"]["communication"] == pytest.approx(a["exposed_comm_per_step_ms"], rel=0.05)
    assert sections["verdict"]["causes"]["fixed"] == ["communication-bound"]
