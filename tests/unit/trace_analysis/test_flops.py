"""Achieved FLOP/s and MFU (trace_analysis.flops): a real CPU recording against the model's analytic FLOPs
(tests/recordings/cpu-memory), small GPU traces against the peak table (reportgen/data/peak_tflops.json) and a
user's table."""

from __future__ import annotations

import json

import pytest

from reportgen.report.trace_flops import flops_blocks
from reportgen.trace_ranks import TraceRank, trace_ranks_of
from reportgen.trace_analysis import analyze_job, find_traces
from reportgen.trace_analysis.flops import PEAKS_ENV, peak_table
from tests.support.paths import RECORDINGS

BASE = 1_700_000_000_000_000
N = 1024


def test_a_cpu_recording_counts_the_models_analytic_matmul_flops():
    truth = json.loads((RECORDINGS / "cpu-memory" / "leak" / "truth.json").read_text())
    doc, _ = analyze_job(find_traces(RECORDINGS / "cpu-memory" / "leak"))
    (rank,) = doc["ranks"].values()
    flops = rank["flops"]
    assert flops["per_step"] == truth["train_step_matmul_flops"]  # 540,803,072: exact, from the shapes
    steps_s = sum(s["dur_ms"] for s in rank["steps"]) / 1000
    assert flops["achieved_tflops"] == pytest.approx(flops["per_step"] * len(rank["steps"]) / steps_s / 1e12)
    assert flops["mfu"] is None and flops["device"] is None  # a CPU: no peak
    (text,) = flops_blocks("0", TraceRank.of("0", rank))
    assert "0.5408 GFLOP per step on 64 operators" in text.text and "MFU" not in text.text


def _gpu_trace(tmp_path, device="NVIDIA H100 80GB HBM3", kernel="sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
               with_flops=None):
    args = {"Input Dims": [[N, N], [N, N]]} if with_flops is None else {"flops": with_flops}
    events = []
    for i in range(4):  # 4 steps of 1 ms, one 1024³ matrix multiplication each
        t = i * 1000
        events += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                    "ts": BASE + t, "dur": 1000},
                   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": BASE + t + 10,
                    "dur": 50, "args": args},
                   {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": BASE + t + 100,
                    "dur": 800, "args": {"device": 0}}]
    folder = tmp_path / device.replace(" ", "_")
    folder.mkdir()
    (folder / "rank-0.pt.trace.json").write_text(json.dumps({"traceEvents": events, "deviceProperties": [
        {"id": 0, "name": device, "totalGlobalMem": 85_000_000_000, "computeMajor": 9, "computeMinor": 0}]}))
    doc, _ = analyze_job(find_traces(folder))
    return doc["ranks"]["0"]


def test_mfu_against_the_gpus_dense_peak_for_the_kernels_data_type(tmp_path):
    rank = _gpu_trace(tmp_path)
    flops = rank["flops"]
    achieved = 2 * N**3 / 1e-3 / 1e12  # 2.147 TFLOP/s: one 1024³ multiplication a millisecond
    assert flops["per_step"] == 2 * N**3 and flops["achieved_tflops"] == pytest.approx(achieved)
    assert (flops["dtype"], flops["peak_tflops"]) == ("bf16", 989.4)
    assert flops["mfu"] == pytest.approx(achieved / 989.4)
    assert flops["peak_source"] == "reportgen/data/peak_tflops.json (2026-12-07)"
    (text,) = flops_blocks("0", TraceRank.of("0", rank))
    assert "MFU 0.2 % of the NVIDIA H100 80GB HBM3's 989.4 bf16 TFLOP/s" in text.text
    fp32 = _gpu_trace(tmp_path, device="NVIDIA A100-SXM4-80GB", kernel="volta_sgemm_128x64_nn")["flops"]
    assert (fp32["dtype"], fp32["peak_tflops"]) == ("fp32", 19.5)
    unknown = _gpu_trace(tmp_path, device="Some Other GPU")["flops"]
    assert unknown["mfu"] is None and unknown["achieved_tflops"] == pytest.approx(achieved)


def test_torchs_own_flops_count_when_written(tmp_path):
    assert _gpu_trace(tmp_path, with_flops=3e9)["flops"]["per_step"] == 3e9


def test_a_users_peak_table_replaces_the_shipped_one(tmp_path, monkeypatch):
    mine = tmp_path / "peaks.json"
    mine.write_text(json.dumps({"dated": "2027-01-01", "gpus": [{"match": "H100", "tflops": {"bf16": 100.0}}]}))
    monkeypatch.setenv(PEAKS_ENV, str(mine))
    flops = _gpu_trace(tmp_path)["flops"]
    assert flops["mfu"] == pytest.approx(2 * N**3 / 1e-3 / 1e12 / 100.0)
    assert flops["peak_source"] == f"{mine} (2027-01-01)"
    mine.write_text("{not json")
    assert _gpu_trace(tmp_path, device="NVIDIA H100 SXM")["flops"]["mfu"] is None  # unreadable: no MFU, no error


def test_the_shipped_table_is_dated_and_cites_every_row():
    rows, source = peak_table()
    assert source.endswith("(2026-12-07)") and len(rows) >= 5
    assert all(r["source"].startswith("https://www.nvidia.com/") and r["tflops"] for r in rows)


def test_without_flop_counts_the_section_says_how_to_get_them(tmp_path):
    rank = _gpu_trace(tmp_path, with_flops=0)
    assert "flops" not in rank
    (text,) = flops_blocks("0", TraceRank.of("0", rank))
    assert "no FLOP counts" in text.text and "record_shapes=True" in text.text and "with_flops=True" in text.text


def test_at_a_glance_gives_the_ranks_achieved_tflops_and_mfu(tmp_path):
    from reportgen.report.trace_flops import glance_item

    rank = _gpu_trace(tmp_path)
    assert glance_item([TraceRank.of("0", rank), TraceRank.of("1", rank)]) == ("Compute", "2.15 TFLOP/s per rank achieved, MFU 0.2 % (bf16 peak)")
    cpu, _ = analyze_job(find_traces(RECORDINGS / "cpu-memory" / "leak"))
    assert glance_item(list(trace_ranks_of(cpu).values())) == ("Compute", "0.000486 TFLOP/s per rank achieved")
    assert glance_item([TraceRank.of("0", {"steps": []})]) is None


def test_remembered_matmul_shapes_count_what_each_events_shapes_give(tmp_path, monkeypatch):
    """The reader remembers a matmul's FLOPs by its Input Dims' text (readers/kineto_trace.py, ``MAX_SHAPES`` at
    most, then it starts again): every event counts what its own shapes give, repeated, new or not countable."""
    from pathlib import Path

    from reportgen.readers import kineto_trace
    from reportgen.readers.kineto_trace import matmul_flops, read_trace

    monkeypatch.setattr(kineto_trace, "MAX_SHAPES", 2)  # the memo cleared several times over the trace
    shapes = [("aten::mm", [[4, 8], [8, 16]]), ("aten::addmm", [[16], [4, 8], [8, 3]]),
              ("aten::bmm", [[2, 4, 8], [2, 8, 5]]), ("aten::mm", [[4, 8], [7, 16]]),  # K differs: none
              ("aten::mm", [[4, 8], [8, 16]]), ("aten::baddbmm", [[1], [3, 2, 2], [3, 2, 9]]),
              ("aten::mm", [[4, 8], [8, 16]]), ("aten::bmm", [[2, 4, 8], [2, 8, 5]])]
    events = [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5,
               "args": {"Input Dims": dims}} for i, (name, dims) in enumerate(shapes * 3)]
    path = Path(tmp_path) / "t.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = read_trace(path)
    expected = [(10.0 * i, matmul_flops(name, {"Input Dims": dims}))
                for i, (name, dims) in enumerate(shapes * 3)]
    expected = [(t, f) for t, f in expected if f]
    assert len(expected) == 21 and 2.0 * 4 * 8 * 16 in {f for _, f in expected}
    assert list(zip(trace.flops.time_us.tolist(), trace.flops.flops.tolist())) == expected
