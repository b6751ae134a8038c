"""Kineto reader: units, ranks, categories, and bad input recorded as data problems (never a crash)."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest

from reportgen.engine.problems import ProblemLog
from reportgen.kineto import analyze_job, find_traces, read_trace
from reportgen.kineto.classify import kernel_precision, memory_op_kind

BASE_US = 1_700_000_000_000_000  # 2023-11-14 in µs


def _trace(events, **meta):
    return {"schemaVersion": 1, **meta, "traceEvents": events}


def _events(scale=1):
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": BASE_US, "dur": 1000},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": BASE_US + 1000, "dur": 3000},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": BASE_US + 10, "dur": 200},
        {"ph": "X", "cat": "kernel", "name": "volta_fp16_s884gemm_fp16_128x64", "pid": 0, "tid": 7, "ts": BASE_US + 100,
         "dur": 500, "args": {"device": 0}},
        {"ph": "X", "cat": "kernel", "name": "void k<float>(float*)", "pid": 0, "tid": 8, "ts": BASE_US + 300,
         "dur": 500, "args": {"device": 0}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7,
         "ts": BASE_US + 2000, "dur": 100, "args": {"device": 0, "bytes": 4096}},
    ]
    for e in ev:
        e["ts"] *= scale
        e["dur"] *= scale
    return ev


def test_us_and_ns_traces_give_the_same_analysis(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "rank-0.pt.trace.json").write_text(json.dumps(_trace(_events())))
    (tmp_path / "b" / "rank-0.pt.trace.json").write_text(json.dumps(_trace(_events(1000))))
    us, _ = analyze_job(find_traces(tmp_path / "a"))
    ns, _ = analyze_job(find_traces(tmp_path / "b"))
    assert ns["ranks"]["0"]["time_unit"] == "ns" and us["ranks"]["0"]["time_unit"] == "us"
    r = us["ranks"]["0"]
    for key in ("span_ms", "gpu", "gpu_mix_ms", "kernels", "step_stats_ms"):
        assert ns["ranks"]["0"][key] == pytest.approx(r[key]) if not isinstance(r[key], dict) else True
    assert ns["ranks"]["0"]["gpu"]["active_ms"] == pytest.approx(r["gpu"]["active_ms"])
    assert r["span_ms"] == pytest.approx(4.0)
    assert r["gpu"]["active_ms"] == pytest.approx(0.8)  # 100..800 union of two overlapping kernels + 0.1 memcpy
    assert r["kernels"]["total_ms"] == pytest.approx(1.0)
    assert r["precision_ms"] == {"fp16": pytest.approx(0.5), "fp32": pytest.approx(0.5)}
    assert r["memory_ops"][0]["kind"] == "HtoD" and r["memory_ops"][0]["bytes"] == 4096
    assert [s["dur_ms"] for s in r["steps"]] == [1.0, 3.0]
    assert r["cpu_ops"]["top"][0]["name"] == "aten::mm"


def test_rank_from_distributed_info_and_straggler(tmp_path):
    for rank, slow in ((0, 1), (1, 1), (2, 2)):
        ev = _events()
        ev[1]["dur"] *= slow
        (tmp_path / f"t{rank}.json").write_text(json.dumps(_trace(ev, distributedInfo={"rank": rank, "world_size": 3})))
    doc, _ = analyze_job(find_traces(tmp_path))
    assert list(doc["ranks"]) == ["0", "1", "2"]
    assert doc["comparison"]["straggler"] == "2"


def test_bad_input_is_recorded_not_raised(tmp_path):
    good = json.dumps(_trace(_events())).encode()
    gz = gzip.compress(good)
    (tmp_path / "trunc.pt.trace.json.gz").write_bytes(gz[: len(gz) * 2 // 3])
    (tmp_path / "broken.pt.trace.json").write_bytes(good[: len(good) - 40])
    unclosed = _events() + [{"ph": "B", "name": "open", "pid": 1, "tid": 1, "ts": BASE_US},
                            {"ph": "X", "cat": "kernel", "name": "no dur", "ts": BASE_US}]
    (tmp_path / "unclosed.pt.trace.json").write_text(json.dumps(_trace(unclosed)))
    (tmp_path / "empty.pt.trace.json").write_text("")
    problems = ProblemLog()
    for path in find_traces(tmp_path):
        read_trace(path, problems)
    reasons = " | ".join(problems.counts)
    assert "broken gzip stream" in reasons
    assert "truncated or corrupt JSON array" in reasons
    assert "unclosed B event" in reasons
    assert "event without numeric ts/dur" in reasons
    assert "empty file" in reasons
    broken = read_trace(tmp_path / "broken.pt.trace.json")
    assert 0 < broken.cat.size < len(_events()) + 1 and not broken.complete


@pytest.mark.parametrize("name, precision", [
    ("volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", "fp16"),
    ("ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_nn", "bf16"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>(Params)", "tf32"),
    ("volta_sgemm_128x64_nn", "fp32"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>>", "fp16"),
    ("void at::native::reduce_kernel<512, 1, ReduceOp<double>>", "fp64"),
    ("cask_cudnn::computeOffsetsKernel(cask_cudnn::ComputeOffsetsParams)", "unknown"),
])
def test_precision_from_kernel_names(name, precision):
    assert kernel_precision(name) == precision


def test_memory_op_kinds():
    assert memory_op_kind("Memcpy DtoH (Device -> Pageable)", False) == "DtoH"
    assert memory_op_kind("Memset (Device)", True) == "Memset"


def _gz_damaged_after(head: bytes, rest: bytes) -> bytes:
    """gzip of head + rest with an invalid deflate block (reserved type) where ``rest`` starts."""
    co = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    first = co.compress(head) + co.flush(zlib.Z_FULL_FLUSH)  # ends on a byte boundary
    return first + b"\x07" + (co.compress(rest) + co.flush())[1:]


def _kineto_lines(n: int, offset: int = 0) -> list[str]:
    return [json.dumps({"ph": "X", "cat": "kernel", "name": f"k{i % 50}", "pid": 0, "tid": 7,
                        "ts": BASE_US + 10 * i, "dur": 5, "args": {"device": 0}}) for i in range(offset, offset + n)]


def test_gzip_damage_in_the_middle_keeps_the_events_before_it(tmp_path):
    """A corrupt deflate block costs what follows it (and the byte zlib decodes as it meets the damage:
    the last event's closing brace), not the whole member; zero padding after a member is no damage."""
    head = '{"schemaVersion": 1, "distributedInfo": {"rank": 3}, "traceEvents": [\n' + ",\n".join(_kineto_lines(20_000))
    rest = ",\n" + ",\n".join(_kineto_lines(5_000, 20_000)) + "\n]}"
    path = tmp_path / "rank-3.pt.trace.json.gz"
    path.write_bytes(_gz_damaged_after(head.encode(), rest.encode()))
    problems = ProblemLog()
    trace = read_trace(path, problems)
    assert trace.cat.size == 19_999 and trace.rank == 3 and not trace.complete
    assert trace.start_us[-1] == BASE_US + 10 * 19_998
    assert dict(problems.counts) == {"broken gzip stream": 1,
                                     "truncated or corrupt JSON array (19999 events before the break kept)": 1}

    padded = tmp_path / "rank-4.pt.trace.json.gz"
    padded.write_bytes(gzip.compress((head + rest).encode(), mtime=0) + b"\0" * 512)
    problems = ProblemLog()
    trace = read_trace(padded, problems)
    assert trace.cat.size == 25_000 and trace.complete and problems.total == 0
