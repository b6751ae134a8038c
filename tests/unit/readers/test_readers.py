"""Readers: tick alignment, bad lines kept local and located, trace parsing details."""

import gzip
import json
import zlib
from pathlib import Path

import numpy as np

from reportgen.readers.framework import read_framework, rewrite_node_id
from reportgen.problems import ProblemLog
from reportgen.readers.system import read_system

T = 1_700_000_040


def rec(typ, name, dim, value, ts, node="algo-1"):
    return json.dumps({"Type": typ, "Name": name, "Dimension": dim, "Value": value, "NodeId": node, "Timestamp": ts})


def instant(ts, cpu=50.0, gpu=10.0, node="algo-1"):
    """One sampling instant: records a few ms apart, as the profiler agent writes them."""
    return [
        rec("i/o", "IOPS", "", 3.0, ts + 0.0089, node),
        rec("cpu", "cpu0", "CPUUtilization", cpu, ts + 0.0090, node),
        rec("cpu", "cpu1", "CPUUtilization", cpu / 2, ts + 0.0090, node),
        rec("memory", "MemoryUsedPercent", "", 12.5, ts + 0.0091, node),
        rec("gpu", "gpu0", "GPUUtilization", gpu, ts + 0.0120, node),
        rec("network", "ReceiveBytesPerSecond", "Algorithm", 7.0, ts + 0.0136, node),
    ]


def write_sys(root: Path, minute: int, lines, node="algo-1", raw: bytes | None = None):
    d = root / "system" / "incremental" / "2023111422"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{minute}.{node}.json"
    p.write_bytes(raw if raw is not None else ("\n".join(lines) + "\n").encode())
    return p


def test_ticks_aligned_and_series_named(tmp_path):
    lines = [l for k in range(4) for l in instant(T + 0.5 * k, cpu=10.0 * (k + 1))]
    write_sys(tmp_path, T, lines)
    pl = ProblemLog()
    ns = read_system(tmp_path, pl).nodes["algo-1"]
    assert ns.values.shape == (4, 6) and pl.total == 0
    assert ns.columns == ["cpu0/CPUUtilization", "cpu1/CPUUtilization", "gpu0/GPUUtilization",
                          "MemoryUsedPercent", "IOPS", "ReceiveBytesPerSecond/Algorithm"]
    assert np.allclose(ns.tick_ts, T + 0.0089 + 0.5 * np.arange(4))
    assert ns.values[:, 0].tolist() == [10.0, 20.0, 30.0, 40.0]
    assert ns.interval_s == 0.5


def test_corrupt_middle_line_costs_that_line_only(tmp_path):
    lines = [l for k in range(3) for l in instant(T + 0.5 * k)]
    lines[7] = '{"Type":"cpu","Name":"cpu0",'  # broken record of instant 1
    p = write_sys(tmp_path, T, lines)
    pl = ProblemLog()
    ns = read_system(tmp_path, pl).nodes["algo-1"]
    assert pl.counts == {"malformed JSON line": 1}
    assert pl.items[0].line == 8 and pl.items[0].file.endswith(p.name)
    assert np.isnan(ns.values[1, 0]) and np.isfinite(ns.values).sum() == 18 - 1


def test_truncated_last_line_empty_file_non_utf8_and_values(tmp_path):
    lines = instant(T)
    raw = ("\n".join(lines) + "\n" + '{"Type":"cpu","Na').encode()
    write_sys(tmp_path, T, [], raw=raw)
    write_sys(tmp_path, T + 60, [], node="algo-2", raw=b"")
    bad = instant(T + 60.5)
    bad[1] = bad[1].replace("cpu0", "cpu\xff0")
    body = "\n".join(bad).encode("latin-1") + b"\n"
    body += (rec("cpu", "cpu0", "CPUUtilization", 130.0, T + 61.009) + "\n").encode()
    body += (rec("cpu", "cpu0", "CPUUtilization", float("nan"), T + 61.509) + "\n").encode()
    body += (rec("disk", "sda", "", 1.0, T + 61.509) + "\n").encode()
    write_sys(tmp_path, T + 60, [], raw=body)
    pl = ProblemLog()
    nodes = read_system(tmp_path, pl).nodes
    assert pl.counts == {"truncated last line": 1, "empty file": 1, "non-UTF-8 bytes": 1,
                         "out-of-range value (kept)": 1, "non-finite value (dropped)": 1, "unknown record type": 1}
    ns = nodes["algo-1"]
    assert 130.0 in ns.values[:, 0] and len(ns.tick_ts) == 3


def test_duplicates_are_recorded(tmp_path):
    lines = instant(T) + [rec("cpu", "cpu0", "CPUUtilization", 51.0, T + 0.0095)]
    write_sys(tmp_path, T, lines)
    pl = ProblemLog()
    ns = read_system(tmp_path, pl).nodes["algo-1"]
    assert sum(c for r, c in pl.counts.items() if r.startswith("duplicate")) == 1
    assert ns.values.shape[0] == 1


def write_trace(root, name, events, hour="2023111422", raw=None):
    d = root / "framework" / "pevents" / hour
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text(raw if raw is not None else json.dumps(events))
    return p


HEAD = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 1_700_000_000_000_000}},
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Step:ModeKeys.TRAIN"}},
        {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "Allreduce.grad"}}]


def test_trace_events_absolute_times_node_rewrite_and_be_pairing(tmp_path):
    ev = HEAD + [
        {"name": "Step:ModeKeys.TRAIN", "pid": 1, "ph": "X", "ts": 1_250_000, "dur": 48_210, "args": {"pid": 311, "step_num": "12"}},
        {"name": "NEGOTIATE_ALLREDUCE", "pid": 2, "ph": "B", "ts": 100},
        {"name": "", "pid": 2, "ph": "E", "ts": 400},
        {"name": "ALLREDUCE", "pid": 2, "ph": "B", "ts": 500},  # never closed
    ]
    write_trace(tmp_path, "1700000001298210_311-algo-1_pythontimeline.json", ev)
    pl = ProblemLog()
    df = read_framework(tmp_path, pl)
    step = df[df["name"] == "Step:ModeKeys.TRAIN"].iloc[0]
    assert (step.start_us, step.end_us, step.node_id, step.file_type, step.step_num, step.arg_pid) == (
        1_700_000_001_250_000, 1_700_000_001_298_210, "algo-1-311", "PythontimelineMetrics", "12", 311)
    be = df[df["name"] == "NEGOTIATE_ALLREDUCE"].iloc[0]
    assert (be.start_us - 1_700_000_000_000_000, be.dur_us, be.phase) == (100, 300, "Allreduce.grad")
    assert list(pl.counts) == ["unclosed B event 'ALLREDUCE' (dropped)"]
    assert rewrite_node_id("27-algo-1") == "algo-1-27" and rewrite_node_id("0001") == "0001"


def test_truncated_array_keeps_complete_events(tmp_path):
    ev = HEAD + [{"name": "Step:ModeKeys.TRAIN", "pid": 1, "ph": "X", "ts": i * 10, "dur": 5, "args": {"step_num": str(i)}}
                 for i in range(5)]
    text = json.dumps(ev, indent=0)
    cut = text[: text.rindex('"step_num": "4"')]
    write_trace(tmp_path, "1700000001000000_7-algo-2_horovod_timeline.json", None, raw=cut)
    pl = ProblemLog()
    df = read_framework(tmp_path, pl)
    assert len(df) == 4 and set(df["file_type"]) == {""} and set(df["node_id"]) == {"algo-2-7"}
    assert pl.total == 1 and "(7 events before the break kept)" in pl.items[0].reason  # 3 metadata + 4 steps
    assert "truncated or corrupt JSON array" in pl.items[0].reason


def test_metadata_only_trace_then_a_be_trace_regression(tmp_path):
    """A trace holding only metadata events (or ``[]``) took the column-wise path and left empty
    arrays where the next file appends event by event: a B/E trace after it crashed with
    AttributeError ('numpy.ndarray' object has no attribute 'append')."""
    write_trace(tmp_path, "1700000001000000_7-algo-1_pythontimeline.json", HEAD)
    write_trace(tmp_path, "1700000001000001_7-algo-1_pythontimeline.json", [])
    write_trace(tmp_path, "1700000002000000_7-algo-1_pythontimeline.json", HEAD[:1] + [
        {"name": "fetch", "pid": 1, "ph": "B", "ts": 100}, {"name": "", "pid": 1, "ph": "E", "ts": 350}])
    pl = ProblemLog()
    df = read_framework(tmp_path, pl)
    assert pl.total == 0
    assert [(r.name, r.start_us - 1_700_000_000_000_000, r.dur_us, r.phase, r.node_id) for r in df.itertuples()] == [
        ("fetch", 100, 250, "Unknown", "algo-1-7")]


def _tf_trace(tmp_path, payload: bytes, metadata=True):
    step = tmp_path / "framework" / "tensorflow" / "detailed_profiling" / "2020080513" / "000000001"
    prof = step / "plugins" / "profile" / "2020_08_05_13_37_44"
    prof.mkdir(parents=True)
    if metadata:
        (step / "algo-1_1596634664000000_1596634665000000.metadata").write_text("")
    (prof / "algo-1.trace.json.gz").write_bytes(payload)


TF_DOC = {"traceEvents": [{"ph": "M", "pid": 49, "name": "process_name", "args": {"name": "/host:CPU"}}] +
          [{"ph": "X", "pid": 49, "tid": 7, "name": f"op{i}", "ts": 100.0 * i, "dur": 20.0} for i in range(50)]}


def test_tf_trace_uses_metadata_base_time(tmp_path):
    _tf_trace(tmp_path, gzip.compress(json.dumps(TF_DOC).encode()))
    pl = ProblemLog()
    df = read_framework(tmp_path, pl)
    assert pl.total == 0 and len(df) == 50
    first = df.iloc[0]
    assert (first.start_us, first.phase, first.node_id, first.file_type) == (
        1596634664000000, "/host:CPU", "algo-1", "TFProfilerMetrics")


def test_broken_gzip_is_recorded_and_salvaged(tmp_path):
    full = gzip.compress(json.dumps(TF_DOC).encode())
    _tf_trace(tmp_path, full[: len(full) * 2 // 3])
    pl = ProblemLog()
    df = read_framework(tmp_path, pl)
    assert any(r.startswith("broken gzip stream") for r in pl.counts)
    assert 0 < len(df) < 50


def test_fast_decoder_and_stdlib_decoder_give_the_same_table(tmp_path, monkeypatch):
    """orjson is only a faster decoder: files it rejects or would read differently (NaN literal,
    integers beyond 64 bits, invalid UTF-8) go through the stdlib parser, and every table equals
    the stdlib-only one."""

    body = [{"name": f"op{i}", "pid": 1, "ph": "X", "ts": i * 7, "dur": 3, "args": {"step_num": i, "pid": 5,
             "num_workers": 2, "pin_memory": "true"}} for i in range(20)]
    write_trace(tmp_path, "1700000001000000_1-algo-1_pythontimeline.json", HEAD + body)
    write_trace(tmp_path, "1700000002000000_1-algo-1_model_timeline.json", None,
                raw=json.dumps(HEAD + body[:3])[:-1] + ', {"name": "x", "pid": 1, "ph": "X", "ts": NaN, "dur": 1}]')
    write_trace(tmp_path, "1700000003000000_1-algo-1_pythontimeline.json", None,
                raw=json.dumps(HEAD + body[:2])[:-1] + ', {"name": "big", "pid": 1, "ph": "i", "ts": 18446744073709551616}]')
    p = write_trace(tmp_path, "1700000004000000_1-algo-2_pythontimeline.json", HEAD + body[:4])
    p.write_bytes(p.read_bytes().replace(b'"op1"', b'"op\xff1"'))

    pl_fast = ProblemLog()
    fast = read_framework(tmp_path, pl_fast)
    import reportgen.traces.read as trace_read

    monkeypatch.setattr(trace_read, "_orjson", None)
    pl_std = ProblemLog()
    std = read_framework(tmp_path, pl_std)
    assert fast.equals(std) and dict(pl_fast.counts) == dict(pl_std.counts)
    # The NaN and the 2**64 time are unusable: reported with their line, the rest of those files kept.
    assert len(fast) == 20 + 3 + 2 + 4
    assert pl_fast.counts["event without numeric ts"] == 1 and pl_fast.counts["event time out of range"] == 1
    assert "op\ufffd1" in set(fast["name"].astype(str)) and pl_fast.counts["non-UTF-8 bytes (replaced)"] == 1


def test_large_traces_are_streamed_with_the_same_result(tmp_path, monkeypatch):
    """Above the streaming threshold (REPORTGEN_STREAM_TRACE_MB) a trace is decoded element by element from a small window and converted
    in chunks; with tiny limits every file here goes that way and must give the table and the
    problems (with their lines) of the whole-file read."""
    import reportgen.readers.framework as fr
    import reportgen.traces.stream as trace_stream

    body = [{"name": f"op{i}", "pid": 1 + i % 2, "ph": "X", "ts": 1_000_003 * i + 0.5 * (i % 3), "dur": 10 + i,
             "args": {"step_num": str(i), "pid": 40 + i % 4}} for i in range(40)]
    be = [{"name": "AR", "pid": 2, "ph": "B", "ts": 5}, {"name": "", "pid": 2, "ph": "E", "ts": 9},
          {"name": "odd", "pid": 2, "ph": "Q", "ts": 11}, {"name": "", "pid": 3, "ph": "E", "ts": 12}]
    write_trace(tmp_path, "1700000001000000_1-algo-1_pythontimeline.json", HEAD + body)
    write_trace(tmp_path, "1700000002000000_1-algo-1_horovod_timeline.json", HEAD + body[:7] + be + body[7:12])
    text = json.dumps(HEAD + body[:9], indent=1)
    write_trace(tmp_path, "1700000003000000_2-algo-1_pythontimeline.json", None,
                raw=text[: text.rindex('"step_num": "7"')])
    p = write_trace(tmp_path, "1700000004000000_1-algo-2_model_timeline.json", HEAD + body[:5])
    p.write_bytes(p.read_bytes().replace(b'"op3"', b'"op\xfe3"'))

    pl_whole = ProblemLog()
    whole = read_framework(tmp_path, pl_whole)
    monkeypatch.setenv("REPORTGEN_STREAM_TRACE_MB", "0")
    monkeypatch.setattr(trace_stream, "READ_BLOCK", 64)
    monkeypatch.setattr(fr, "STREAM_EVENTS", 3)
    calls = _spy_on_streams(monkeypatch)
    pl_stream = ProblemLog()
    streamed = read_framework(tmp_path, pl_stream)
    assert len(calls) == 4

    assert streamed.equals(whole)
    assert len(whole) == 40 + 12 + 1 + 7 + 5  # the B/E pair is one event; 7 complete steps before the cut
    key = lambda pr: (pr.file, pr.line, pr.reason)  # noqa: E731
    assert list(map(key, pl_stream.items)) == list(map(key, pl_whole.items))  # in the same order
    assert pl_stream.counts == pl_whole.counts
    reasons = {pr.reason for pr in pl_whole.items}
    assert {"unknown event phase 'Q'", "E event without matching B", "non-UTF-8 bytes (replaced)"} <= reasons
    cut = [pr for pr in pl_stream.items if pr.reason.startswith("truncated or corrupt JSON array")]
    assert len(cut) == 1 and cut[0].line > 1 and "(10 events before the break kept)" in cut[0].reason


TF_STEP = "framework/tensorflow/detailed_profiling/2020080513/000000001"
TF_BASE = 1596634664000000


def _tf_events() -> list:
    """A TF profiler trace's events: two processes, complete events whose pid / thread come from the
    args, a B/E pair and, at fixed places, an unknown phase, an event without ts and an unmatched E."""
    ev = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
          {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/device:GPU:0"}}]
    ev += [{"ph": "X", "pid": 1 + i % 2, "tid": 9, "name": f"op{i}", "ts": 100 * i + 0.5 * (i % 3), "dur": 20 + i,
            "args": {"step_num": str(i // 10), "pid": 40 + i % 2, "thread_id": 70 + i % 3}} for i in range(60)]
    ev[10:10] = [{"ph": "B", "pid": 1, "name": "Allreduce", "ts": 1005}]
    ev[13:13] = [{"ph": "E", "pid": 1, "ts": 1090}]
    ev[20:20] = [{"ph": "Q", "pid": 1, "name": "odd", "ts": 1500}]
    ev[25:25] = [{"ph": "X", "pid": 1, "name": "no ts", "dur": 4}]
    ev[30:30] = [{"ph": "E", "pid": 2, "ts": 2500}]
    return ev


def _tf_text(events: list, corrupt_at: int | None = None) -> bytes:
    """The profiler's layout: one event per line after the opening line; a garbage line before event
    ``corrupt_at``."""
    lines = [json.dumps(e) for e in events]
    if corrupt_at is not None:
        lines.insert(corrupt_at, '{"ph": "X", "name": ]]]}')
    return ('{"displayTimeUnit": "ns", "traceEvents": [\n' + ",\n".join(lines) + '\n], "metadata": {"x": 1}}\n').encode()


def _tf_traces(root: Path, files: dict) -> None:
    step = root / TF_STEP
    (step / "plugins" / "profile" / "2020_08_05_13_37_44").mkdir(parents=True)
    (step / f"algo-1_{TF_BASE}_{TF_BASE + 1_000_000}.metadata").write_text("")
    for node, data in files.items():
        (step / "plugins" / "profile" / "2020_08_05_13_37_44" / f"{node}.trace.json.gz").write_bytes(data)


def _spy_on_streams(monkeypatch) -> list:
    """The files the trace layer reads as a stream (an EventWalk given the default read size), as
    they are met."""
    import reportgen.traces.read as trace_read

    calls: list = []
    walk = trace_read.EventWalk
    monkeypatch.setattr(trace_read, "EventWalk",
                        lambda *a, **k: (k.get("chunk") is None and calls.append(a[2])) or walk(*a, **k))
    return calls


def _read_streamed_and_whole(root: Path, monkeypatch, *, expect_streamed: int):
    """read_framework twice: every trace read whole, then every trace streamed with tiny read and chunk
    sizes; returns both tables and problem logs."""
    import reportgen.readers.framework as fr
    import reportgen.traces.stream as trace_stream

    calls = _spy_on_streams(monkeypatch)
    monkeypatch.setenv("REPORTGEN_STREAM_TRACE_MB", "100000")
    pl_whole = ProblemLog()
    whole = read_framework(root, pl_whole)
    assert calls == []
    monkeypatch.setenv("REPORTGEN_STREAM_TRACE_MB", "0")
    monkeypatch.setattr(trace_stream, "READ_BLOCK", 64)
    monkeypatch.setattr(fr, "STREAM_EVENTS", 3)
    pl_stream = ProblemLog()
    streamed = read_framework(root, pl_stream)
    assert len(calls) == expect_streamed
    return whole, pl_whole, streamed, pl_stream


def _items(log: ProblemLog) -> list:
    return [(p.file, p.line, p.reason) for p in log.items]


def test_large_gz_tf_traces_are_streamed_with_the_same_result(tmp_path, monkeypatch):
    """A gzip'd TF trace above the threshold is decompressed and decoded as a stream: the same table
    (TF pid / thread from the args, the step's base time) and the same problems, in the same order, as
    the whole-file read, for a clean file, one with a corrupt event, non-UTF-8 bytes and a gzip stream
    cut in the middle, and one whose deflate data breaks mid-member."""
    events = _tf_events()
    clean = _tf_text(events)
    dirty = _tf_text(events, corrupt_at=40).replace(b'"op5"', b'"op\xff5"')
    cut_gz = gzip.compress(dirty, mtime=0)
    cut_gz = cut_gz[: len(cut_gz) * 3 // 4]
    recovered = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut_gz)
    co = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)  # a reserved deflate block type after op47's line
    split = clean.index(b"\n", clean.index(b'"op47"')) + 1
    broken_mid = co.compress(clean[:split]) + co.flush(zlib.Z_FULL_FLUSH) + b"\x07" + co.compress(clean[split:]) + co.flush()
    _tf_traces(tmp_path, {"algo-1": gzip.compress(clean, mtime=0), "algo-2": cut_gz, "algo-3": broken_mid})

    whole, pl_whole, streamed, pl_stream = _read_streamed_and_whole(tmp_path, monkeypatch, expect_streamed=3)
    assert streamed.equals(whole)
    assert _items(pl_stream) == _items(pl_whole) and pl_stream.counts == pl_whole.counts

    one = whole[whole["node_id"] == "algo-1"]
    assert len(one) == 60 + 1  # the X events and the B/E pair
    first = one.iloc[0]
    assert (first.start_us, first.dur_us, first.phase, first.pid, first.tid, first.step_num) == (
        TF_BASE, 20, "/host:CPU", 40, 70, "0")
    pair = one[one["name"] == "Allreduce"].iloc[0]
    assert (pair.start_us, pair.end_us) == (TF_BASE + 1005, TF_BASE + 1090)

    # algo-2: events before the cut, the corrupt line skipped, the replaced byte kept in the name.
    lines = recovered.decode("utf-8", errors="replace").split("\n")
    complete_lines = lines[1:-1]  # the last line is cut
    kept = sum(1 for x in complete_lines if not x.startswith('{"ph": "X", "name": ]]]'))
    two = whole[whole["node_id"] == "algo-2"]
    assert "op\ufffd5" in set(two["name"].astype(str))
    rel2 = f"{TF_STEP}/plugins/profile/2020_08_05_13_37_44/algo-2.trace.json.gz"
    rel1 = rel2.replace("algo-2", "algo-1")
    general = [(rel2, 21, "unknown event phase 'Q'"), (rel2, 26, "event without numeric ts"),
               (rel2, 31, "E event without matching B")]
    expected = [(rel1, *p[1:]) for p in general]
    expected += [(rel2, None, f"broken gzip stream ({len(recovered)} bytes recovered)"),
                 (rel2, None, "non-UTF-8 bytes (replaced)"),
                 (rel2, 42, "corrupt JSON event (skipped)"),
                 (rel2, len(lines), f"truncated or corrupt JSON array ({kept} events before the break kept)")]
    expected += general
    rel3 = rel2.replace("algo-2", "algo-3")
    assert _items(pl_whole)[: len(expected)] == expected
    assert len(two) == kept - 2 - 3 - 1  # of the events kept: 2 M, Q, no ts, unmatched E no rows; B + E one row
    # algo-3: every event up to op47 (the damage costs only the newline zlib decodes as it meets it).
    three = whole[whole["node_id"] == "algo-3"]
    assert len(three) == 48 + 1 and three["name"].astype(str).iloc[-1] == "op47"
    assert [p for p in _items(pl_whole) if p[0] == rel3] == [
        (rel3, None, f"broken gzip stream ({split - 1} bytes recovered)"),
        (rel3, 56, "truncated or corrupt JSON array (55 events before the break kept)"),  # on op47's line
    ] + [(rel3, *p[1:]) for p in general]


def test_gz_traces_are_streamed_by_the_text_they_produce(tmp_path, monkeypatch):
    """traces.read.TraceRead decides from what is there, never from the gzip trailer (ISIZE, the size
    mod 2**32 of the last member, which a gzip bomb sets to anything): a .gz file is read whole when
    decompressing it stops within the threshold, else streamed; a plain file by its size."""
    import os

    from reportgen.traces.read import TraceRead

    monkeypatch.setenv("REPORTGEN_STREAM_TRACE_MB", "1")
    text = _tf_text(_tf_events()) * 200  # 1.4 MB of text, ~20 KB compressed
    files = {
        "small.trace.json.gz": gzip.compress(text[:500_000], mtime=0),
        "big.trace.json.gz": gzip.compress(text, mtime=0),
        "two-members.trace.json.gz": gzip.compress(text, mtime=0) + gzip.compress(b"[]", mtime=0),  # ISIZE 2
        "tiny-two-members.trace.json.gz": gzip.compress(b"[", mtime=0) + gzip.compress(b"]", mtime=0),
        "incompressible.trace.json.gz": gzip.compress(os.urandom(1_200_000), mtime=0),
        "plain.json": text, "small-plain.json": text[:900_000],
    }
    streamed = set()
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        read = TraceRead(tmp_path / name, name)
        for _ in read.chunks(1000):
            pass
        if read.streamed:
            streamed.add(name)
    assert streamed == {"big.trace.json.gz", "two-members.trace.json.gz", "incompressible.trace.json.gz",
                        "plain.json"}
    read = TraceRead(tmp_path / "missing.trace.json.gz", "missing")
    assert list(read.chunks(10)) == [] and isinstance(read.error, FileNotFoundError)
