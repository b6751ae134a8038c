"""Property-based fuzzing of the readers (hypothesis): whatever the bytes, no exception escapes, and
every valid record planted among garbage is kept.

Bounded for CI: ``REPORTGEN_FUZZ_EXAMPLES`` examples per property (default 40; the suite's fuzzing
takes well under a minute). Run longer locally with e.g. ``REPORTGEN_FUZZ_EXAMPLES=2000``. Crashes
found so far became corpus cases (tests/support/corpus/make_corpus.py: fw_nan_inf_times, fw_huge_timestamps,
rules_wrong_types, ...).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from reportgen.readers.framework import read_framework  # noqa: E402
from reportgen.problems import ProblemLog  # noqa: E402
from reportgen.readers.system import read_system  # noqa: E402
from reportgen.errors import InputError  # noqa: E402
from reportgen.readers.kineto_trace import read_trace  # noqa: E402
from reportgen.rule_outputs import load_rule_outputs  # noqa: E402

EXAMPLES = int(os.environ.get("REPORTGEN_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
T = 1_700_000_040
SYS = "system/incremental/2023111422"
FW = "framework/pevents/2023111422"

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                         st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)
SYS_KEYS = ["Type", "Name", "Dimension", "Value", "NodeId", "Timestamp"]
# dicts that look like system records but have wrong or missing fields
record_like = st.dictionaries(st.sampled_from(SYS_KEYS), json_values, max_size=6)
FW_KEYS = ["name", "ph", "ts", "dur", "pid", "tid", "args"]
event_like = st.dictionaries(st.sampled_from(FW_KEYS + ["cat"]), st.one_of(
    json_values, st.sampled_from(["X", "B", "E", "i", "M", "kernel", "cpu_op"])), max_size=7)


def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="reportgen-fuzz-"))


def _rmtree(path: Path) -> None:
    for p in sorted(path.rglob("*"), reverse=True):
        p.unlink() if p.is_file() or p.is_symlink() else p.rmdir()
    path.rmdir()


def _is_valid_system_line(raw: bytes) -> bool:
    try:
        rec = json.loads(raw.decode("utf-8").lstrip("\ufeff"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(rec, dict) and isinstance(rec.get("Value"), (int, float)) and not isinstance(rec.get("Value"), bool)


@FUZZ
@given(st.lists(st.binary(max_size=200), max_size=6))
def test_system_reader_survives_any_bytes(blobs):
    root = _folder()
    try:
        for i, blob in enumerate(blobs):
            p = root / SYS / f"{T + 60 * i}.algo-{i % 2 + 1}.json"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(blob)
        log = ProblemLog()
        data = read_system(root, log)  # must not raise
        for ns in data.nodes.values():
            assert ns.values.shape == (len(ns.tick_ts), len(ns.columns))
    finally:
        _rmtree(root)


def _valid_lines(n_ticks: int, values: list[float]) -> list[str]:
    out = []
    for k in range(n_ticks):
        v = values[k % len(values)]
        for name, dim in (("cpu0", "CPUUtilization"), ("gpu0", "GPUUtilization")):
            out.append(json.dumps({"Type": name[:3], "Name": name, "Dimension": dim, "Value": v,
                                   "NodeId": "algo-1", "Timestamp": T + 0.5 * k + 0.001}))
    return out


@FUZZ
@given(n_ticks=st.integers(1, 30), values=st.lists(st.floats(0, 100), min_size=1, max_size=5),
       garbage=st.lists(st.one_of(st.binary(max_size=120), record_like.map(lambda d: json.dumps(d).encode())),
                        max_size=12),
       positions=st.lists(st.integers(0, 10_000), max_size=12), newline_at_end=st.booleans())
def test_system_reader_keeps_every_valid_record_among_garbage(n_ticks, values, garbage, positions, newline_at_end):
    lines = [line.encode() for line in _valid_lines(n_ticks, values)]
    planted = len(lines)
    garbage = [g.replace(b"\n", b" ").replace(b"\r", b" ") for g in garbage]
    garbage = [g for g in garbage if not _is_valid_system_line(g)]
    for g, pos in zip(garbage, positions + [0] * len(garbage)):
        lines.insert(pos % (len(lines) + 1), g)
    root = _folder()
    try:
        p = root / SYS / f"{T}.algo-1.json"
        p.parent.mkdir(parents=True)
        p.write_bytes(b"\n".join(lines) + (b"\n" if newline_at_end else b""))
        log = ProblemLog()
        data = read_system(root, log)
        node = data.nodes["algo-1"]
        assert int(np.count_nonzero(~np.isnan(node.values))) == planted
        assert len(node.tick_ts) == n_ticks
    finally:
        _rmtree(root)


def _valid_event(k: int) -> dict:
    return {"name": f"op{k % 3}", "ph": "X", "pid": 1, "tid": 1, "ts": 1000 + 10 * k, "dur": 5 + k,
            "args": {"step_num": str(k)}}


@FUZZ
@given(n=st.integers(0, 20), junk=st.lists(st.one_of(json_values, event_like), max_size=10),
       positions=st.lists(st.integers(0, 10_000), max_size=10))
def test_framework_reader_keeps_every_valid_event_among_junk(n, junk, positions):
    events = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": T * 1_000_000}}]
    events += [_valid_event(k) for k in range(n)]
    # junk that could be a valid complete event is dropped from the plan (it would rightly be kept)
    junk = [j for j in junk if not (isinstance(j, dict) and j.get("ph") in ("X", "i", "I", "B", "E", "M"))]
    for j, pos in zip(junk, positions + [0] * len(junk)):
        events.insert(1 + pos % len(events), j)
    root = _folder()
    try:
        p = root / FW / f"{T * 1_000_000 + 60_000_000}_27-algo-1_pythontimeline.json"
        p.parent.mkdir(parents=True)
        p.write_text("[\n" + ",\n".join(json.dumps(e) for e in events) + "\n]\n")
        table = read_framework(root, ProblemLog())
        assert len(table) == n
        assert sorted(table["dur_us"].tolist()) == sorted(5 + k for k in range(n))
    finally:
        _rmtree(root)


@FUZZ
@given(events=st.lists(st.one_of(event_like, json_values), max_size=15), cut=st.integers(0, 10_000),
       gz=st.booleans())
def test_framework_and_kineto_readers_survive_any_events_and_cuts(events, cut, gz):
    import gzip

    text = json.dumps({"traceEvents": events, "schemaVersion": 1}).encode()
    text = text[: cut % (len(text) + 1)] if cut % 3 else text
    root = _folder()
    try:
        p = root / FW / f"{T * 1_000_000 + 60_000_000}_27-algo-1_pythontimeline.json"
        p.parent.mkdir(parents=True)
        p.write_bytes(text)
        tf = root / "framework/tensorflow/detailed_profiling/2023111422/000000000005/plugins/profile/x/algo-1.trace.json.gz"
        tf.parent.mkdir(parents=True)
        tf.write_bytes(gzip.compress(text, mtime=0)[: (cut * 7) % (len(text) + 20) or None] if gz else text)
        read_framework(root, ProblemLog())
        k = root / "rank-0.pt.trace.json.gz" if gz else root / "rank-0.pt.trace.json"
        k.write_bytes(gzip.compress(text, mtime=0) if gz else text)
        trace = read_trace(k, ProblemLog())
        assert len(trace.start_us) == len(trace.dur_us) and np.isfinite(trace.start_us).all()
    finally:
        _rmtree(root)



def _read_both_ways(root: Path, k: Path) -> list:
    """The framework table and the Kineto trace with their problems, read whole and then streamed."""
    out = []
    for threshold in ("100000", "0"):
        os.environ["REPORTGEN_STREAM_TRACE_MB"] = threshold
        try:
            fw_log, k_log = ProblemLog(), ProblemLog()
            table = read_framework(root, fw_log)
            trace = read_trace(k, k_log)
        finally:
            del os.environ["REPORTGEN_STREAM_TRACE_MB"]
        out.append((table, [(p.file, p.line, p.reason) for p in fw_log.items], dict(fw_log.counts),
                    {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in vars(trace).items()},
                    [(p.file, p.line, p.reason) for p in k_log.items], dict(k_log.counts)))
    return out


@FUZZ
@given(events=st.lists(st.one_of(event_like, json_values), max_size=15), cut=st.integers(0, 10_000),
       garbage=st.integers(-1, 15))
def test_gz_traces_streamed_give_the_whole_file_result(events, cut, garbage):
    """A gzip'd TF trace and a gzip'd Kineto trace (one event per line, any events, maybe a garbage
    line, the gzip stream maybe cut anywhere) give the same table / trace and the same problems, in
    the same order, streamed as read whole."""
    import gzip

    lines = [json.dumps(e) for e in events]
    if 0 <= garbage <= len(lines):
        lines.insert(garbage, '{"ph": "X", "name": ]]]}')
    text = ('{"displayTimeUnit": "ns", "traceEvents": [\n' + ",\n".join(lines) + '\n], "schemaVersion": 1}').encode()
    data = gzip.compress(text, mtime=0)
    data = data[: cut % (len(data) + 1)] if cut % 3 else data
    root = _folder()
    try:
        tf = root / "framework/tensorflow/detailed_profiling/2023111422/000000000005/plugins/profile/x/algo-1.trace.json.gz"
        tf.parent.mkdir(parents=True)
        tf.write_bytes(data)
        k = root / "rank-0.pt.trace.json.gz"
        k.write_bytes(data)
        whole, streamed = _read_both_ways(root, k)
        assert whole[0].equals(streamed[0])
        assert whole[1:] == streamed[1:]
    finally:
        _rmtree(root)


@FUZZ
@given(docs=st.dictionaries(st.sampled_from(["CPUBottleneck", "StepOutlier", "LowGPUUtilization", "LoadBalancing",
                                             "OverallSystemUsage", "OverallFrameworkMetrics", "BatchSize"]),
                            st.one_of(json_values, st.fixed_dictionaries(
                                {"RuleTriggered": json_values, "Violations": json_values, "Details": json_values,
                                 "Datapoints": json_values, "RuleParameters": json_values})), min_size=1, max_size=4),
       raw=st.binary(max_size=50))
def test_rule_output_loader_and_report_never_crash(docs, raw):
    from reportgen.report.build import build_report
    from reportgen.report.json_output import report_data

    root = _folder()
    try:
        d = root / "profiler-reports"
        d.mkdir()
        for name, doc in docs.items():
            (d / f"{name}.json").write_text(json.dumps(doc))
        (d / "Dataloader.json").write_bytes(raw)
        (root / "data-quality.json").write_text(json.dumps(docs.get("BatchSize")))
        try:
            outputs = load_rule_outputs(d)
        except InputError:
            return
        report = build_report(outputs)
        data = report_data(report, "now")
        json.dumps(data, allow_nan=False)  # report.json stays valid JSON
        assert not any(isinstance(v, float) and not math.isfinite(v) for v in _leaves(data))
    finally:
        _rmtree(root)


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value
