"""Kineto reader: units, ranks, categories, and bad input recorded as data problems (never a crash)."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest

from reportgen.problems import ProblemLog
from reportgen.trace_analysis import analyze_job, find_traces, read_trace
from reportgen.trace_analysis.classify import kernel_precision, memory_op_kind

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
    # torch's fused AdamW: FP32 math on FP32 tensors; the doubles are lr, betas, eps (not an FP64 kernel)
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
     "FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, "
     "(at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, float const*, "
     "float const*>(...)", "fp32"),
    ("void at::native::unrolled_elementwise_kernel<at::native::MulFunctor<double>, float>", "fp64"),
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


BASE_NS = 1_700_000_000_000_000_000


def _kineto_text(corrupt_at: int | None = None) -> bytes:
    """Kineto's layout: metadata, one event per line, then more metadata (the base time) after the
    events; relative µs times. Oddities at fixed places: a B/E pair, an E without B, a string time, a
    negative duration, optionally a garbage line before event ``corrupt_at``."""
    ev = [{"ph": "X", "cat": ("kernel", "cpu_op", "gpu_memcpy")[i % 3], "name": f"op{i % 7}", "pid": i % 2, "tid": 7,
           "ts": 1000 + 10 * i + 0.25 * (i % 4), "dur": 5 + i % 3, "args": {"device": 0, "bytes": 64 * i}}
          for i in range(80)]
    ev[5:5] = [{"ph": "B", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000}]
    ev[40:40] = [{"ph": "E", "pid": 1, "tid": 1, "ts": 1400}]
    ev[10:10] = [{"ph": "E", "pid": 3, "tid": 3, "ts": 1100}, {"ph": "X", "cat": "kernel", "name": "late", "ts": "soon", "dur": 1},
                 {"ph": "X", "cat": "kernel", "name": "back", "ts": 1101, "dur": -2}]
    lines = [json.dumps(e) for e in ev]
    if corrupt_at is not None:
        lines.insert(corrupt_at, '{"ph": "X", "cat": "kernel", "name": ]]]}')
    return ('{"schemaVersion": 1, "deviceProperties": [{"name": "NVIDIA A100"}],\n'
            ' "distributedInfo": {"rank": 5, "world_size": 8, "backend": "nccl"},\n "traceEvents": [\n'
            + ",\n".join(lines) + '\n],\n "traceName": "t", "baseTimeNanoseconds": %d}\n' % BASE_NS).encode()


def _fields(trace) -> dict:
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in vars(trace).items()}


def test_large_gz_traces_are_streamed_with_the_same_result(tmp_path, monkeypatch):
    """A gzip'd Kineto trace above the threshold is decompressed and decoded as a stream: the same
    trace (metadata from before and after the events, base time, ranks, flags) and the same problems,
    in the same order, as the whole-file read: clean, with a corrupt event and a non-UTF-8 byte, cut
    in the middle of the gzip stream; a plain file too."""
    import reportgen.traces.read as trace_read
    import reportgen.traces.stream as trace_stream

    clean = _kineto_text()
    dirty = _kineto_text(corrupt_at=30).replace(b'"op3"', b'"op\xfe3"')
    cut = gzip.compress(dirty, mtime=0)
    cut = cut[: len(cut) * 2 // 3]
    recovered = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut)
    files = {"clean.pt.trace.json.gz": gzip.compress(clean, mtime=0), "dirty.pt.trace.json.gz": gzip.compress(dirty, mtime=0),
             "cut.pt.trace.json.gz": cut, "plain.pt.trace.json": dirty}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)

    streamed = []  # the files read as a stream (EventWalk given the default read size)
    walk = trace_read.EventWalk
    monkeypatch.setattr(trace_read, "EventWalk", lambda *a, **k: (k.get("chunk") is None and streamed.append(a[2])) or walk(*a, **k))
    monkeypatch.setattr(trace_stream, "READ_BLOCK", 64)
    results = {}
    for threshold in ("100000", "0"):
        monkeypatch.setenv("REPORTGEN_STREAM_TRACE_MB", threshold)
        for name in files:
            problems = ProblemLog()
            trace = read_trace(tmp_path / name, problems)
            results[threshold, name] = (_fields(trace), [(p.file, p.line, p.reason) for p in problems.items])
    assert sorted(p.name for p in streamed) == sorted(files)  # each once, with the threshold at 0
    for name in files:
        assert results["0", name] == results["100000", name], name

    fields, problems = results["0", "clean.pt.trace.json.gz"]
    assert (fields["rank"], fields["world_size"], fields["backend"], fields["devices"]) == (5, 8, "nccl", ["NVIDIA A100"])
    assert fields["start_us"][0] == BASE_NS / 1000 + 1000 and fields["complete"] and fields["events_in_file"] == 85
    assert len(fields["start_us"]) == 80 + 1  # the X events and the B/E pair
    path = tmp_path / "clean.pt.trace.json.gz"
    assert problems == [(str(path), None, "E event without matching B"),
                        (str(path), None, "event without numeric ts/dur (dropped)"),
                        (str(path), None, "negative duration (dropped)")]

    fields, problems = results["0", "dirty.pt.trace.json.gz"]
    path = str(tmp_path / "dirty.pt.trace.json.gz")
    assert not fields["complete"] and len(fields["start_us"]) == 81 and "op\ufffd3" in fields["names"]
    assert problems == [(path, None, "non-UTF-8 bytes (replaced)"), (path, 34, "corrupt JSON event (skipped)"),
                        (path, None, "E event without matching B"), (path, None, "event without numeric ts/dur (dropped)"),
                        (path, None, "negative duration (dropped)")]

    fields, problems = results["0", "cut.pt.trace.json.gz"]
    path = str(tmp_path / "cut.pt.trace.json.gz")
    kept = recovered.count(b"\n") - 3 - 1  # complete event lines: less the 3 head lines and the garbage line
    assert not fields["complete"] and fields["events_in_file"] == kept and fields["rank"] == 5
    assert fields["start_us"][0] == 1000  # the base time was after the cut
    assert problems[:4] == [(path, None, "broken gzip stream"), (path, None, "non-UTF-8 bytes (replaced)"),
                            (path, 34, "corrupt JSON event (skipped)"),
                            (path, kept + 1, f"truncated or corrupt JSON array ({kept} events before the break kept)")]


def test_integers_beyond_64_bits_are_read_not_raised(tmp_path):
    """JSON integers have no size limit: a ts / dur beyond 64 bits or float's range (found by the
    fuzzing) is a number or is dropped as not numeric, never a TypeError from numpy."""
    events = _events() + [
        {"ph": "X", "cat": "kernel", "name": "far", "pid": 0, "tid": 7, "ts": -2**63 - 1, "dur": 2**64},
        {"ph": "X", "cat": "kernel", "name": "beyond", "pid": 0, "tid": 7, "ts": 10**400, "dur": 1},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": BASE_US, "dur": 1,
         "args": {"bytes": 10**400}},
    ]
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps(_trace(events)))
    problems = ProblemLog()
    trace = read_trace(path, problems)
    # "far" is read as numbers, then dropped as a time no job has (issue #30: dur = 2**64 ns made a
    # 584-year rank span); "beyond" is no float at all
    from reportgen.readers.kineto_trace import OUT_OF_RANGE

    assert trace.cat.size == len(_events()) + 1
    assert dict(problems.counts) == {"event without numeric ts/dur (dropped)": 1, OUT_OF_RANGE: 1}
    assert trace.start_us.min() == BASE_US and trace.nbytes.max() == 4096
