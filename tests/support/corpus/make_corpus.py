"""Generate the bad-input corpus: small profiler folders, each with its expected outcome.

    python tests/support/corpus/make_corpus.py OUT_DIR        # writes OUT_DIR/<case>/ and OUT_DIR/manifest.json

This script is the source of truth (the files are generated into a temporary folder at test time;
symlink loops and vanishing files cannot live in git anyway). Every case plants a known number of
valid records next to its damage, and says what a run must give:

``exit``       0 (a report is made) or 2 (not; one line on stderr naming the reason)
``error``      for exit 2: a piece of that one line
``problems``   the engine's data-quality counts by reason, exactly (``{}``: none; a reason ending in
               ``*`` matches by prefix, for reasons that carry a byte count)
``notes``      pieces of the loader notes (rule-output and report notes) that must be listed
``system_values`` / ``events`` / ``kineto_events`` / ``rules``
               valid records planted = records the run must use (``None``: not checked)
``hook``       a condition made at run time: ``vanish:<rel path>`` (file deleted after listing),
               ``readonly-output``, ``disk-full`` (ENOSPC at the write boundary)
``cli``        also run through ``python -m reportgen generate`` in a subprocess

Deterministic: no randomness, no clock.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import zlib
from pathlib import Path

T = 1_700_000_040  # a minute boundary (s)
SYS_DIR = "system/incremental/2023111422"
FW_DIR = "framework/pevents/2023111422"

CASES: dict[str, dict] = {}


def case(name: str, **expected):
    """Register a builder ``fn(folder) -> dict of counts`` with its expected outcome."""
    def wrap(fn):
        CASES[name] = {"build": fn, "doc": (fn.__doc__ or "").strip(), **expected}
        return fn
    return wrap


# --------------------------------------------------------------------------------- record helpers


def rec(typ, name, dim, value, ts, node="algo-1") -> str:
    return json.dumps({"Type": typ, "Name": name, "Dimension": dim, "Value": value, "NodeId": node,
                       "Timestamp": ts})


def instant(ts: float, node="algo-1", cpu=50.0, gpu=True) -> list[str]:
    """One sampling instant as the profiler agent writes it: 6 records (5 without GPU) a few ms apart."""
    lines = [
        rec("cpu", "cpu0", "CPUUtilization", cpu, ts + 0.001, node),
        rec("cpu", "cpu1", "CPUUtilization", cpu / 2, ts + 0.001, node),
        rec("cpu", "cpu0", "I/OWaitPercentage", 1.0, ts + 0.002, node),
        rec("memory", "MemoryUsedPercent", "", 12.5, ts + 0.002, node),
        rec("network", "ReceiveBytesPerSecond", "Algorithm", 700.0, ts + 0.003, node),
    ]
    if gpu:
        lines.insert(2, rec("gpu", "gpu0", "GPUUtilization", 80.0, ts + 0.004, node))
    return lines


def instants(n: int, start=T, node="algo-1", gpu=True, step=0.5) -> list[str]:
    return [line for k in range(n) for line in instant(start + step * k, node=node, gpu=gpu, cpu=10.0 + k % 80)]


def write(folder: Path, rel: str, data) -> Path:
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def sys_file(folder: Path, lines, minute=T, node="algo-1", raw: bytes | None = None, newline=True) -> Path:
    body = raw if raw is not None else ("\n".join(lines) + ("\n" if newline else "")).encode("utf-8")
    return write(folder, f"{SYS_DIR}/{minute}.{node}.json", body)


def fw_events(n: int, start_us=T * 1_000_000, name="Step:ModeKeys.TRAIN", pid=1) -> list[dict]:
    return [{"name": name, "pid": pid, "ph": "X", "ts": 1000 + 100_000 * k, "dur": 50_000,
             "args": {"step_num": str(k)}} for k in range(n)]


def fw_meta(start_us=T * 1_000_000, pid=1, phase="Step:ModeKeys.TRAIN") -> list[dict]:
    return [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": start_us}},
            {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": phase}}]


def fw_text(events: list) -> str:
    """smdebug's layout: one event per line inside a JSON array."""
    return "[\n" + ",\n".join(json.dumps(e) for e in events) + "\n]\n"


def fw_file(folder: Path, text, end_us=T * 1_000_000 + 60_000_000, node="27-algo-1",
            kind="pythontimeline") -> Path:
    return write(folder, f"{FW_DIR}/{end_us}_{node}_{kind}.json", text)


def good_system(folder: Path, n=20, node="algo-1", gpu=True, minute=T) -> int:
    lines = instants(n, start=minute, node=node, gpu=gpu)
    sys_file(folder, lines, minute=minute, node=node)
    return len(lines)


def good_framework(folder: Path, n=10, node="27-algo-1") -> int:
    fw_file(folder, fw_text(fw_meta() + fw_events(n)), node=node)
    return n


def kineto_doc(n_kernels=4, n_ops=4, base=T * 1_000_000) -> dict:
    ev = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1,
           "ts": base + 10_000 * k, "dur": 9_000} for k in range(2)]
    ev += [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": base + 100 + 1000 * k,
            "dur": 200} for k in range(n_ops)]
    ev += [{"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7,
            "ts": base + 500 + 1000 * k, "dur": 300, "args": {"device": 0}} for k in range(n_kernels)]
    return {"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": ev}


def kineto_text(doc: dict) -> str:
    """Kineto's layout: one event per line."""
    head = {k: v for k, v in doc.items() if k != "traceEvents"}
    inner = ",\n".join(json.dumps(e) for e in doc["traceEvents"])
    return json.dumps(head)[:-1] + ', "traceEvents": [\n' + inner + "\n]}\n"


KINETO = "traces/rank-0.pt.trace.json"


def complete_events(gz_prefix: bytes, events: list) -> int:
    """How many events survive whole in what a cut gzip stream still decompresses to."""
    text = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(gz_prefix).decode("utf-8", "replace")
    return sum(json.dumps(e) in text for e in events)


def rule_outputs(folder: Path, sub="profiler-reports") -> Path:
    """The 11 rule outputs of a small valid job, made by reportgen's engine."""
    from reportgen.engine import analyze

    raw = folder / ".raw"
    good_system(raw, n=40)
    good_framework(raw, n=10)
    analyze(raw, raw / "out")
    target = folder / sub
    target.mkdir(parents=True)
    for path in sorted((raw / "out" / "profiler-reports").glob("*.json")):
        (target / path.name).write_bytes(path.read_bytes())
    for path in sorted(raw.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    raw.rmdir()
    return target


# ---------------------------------------------------------------------------------- the cases
# Reasons, exactly as the readers write them (reportgen/engine/*_reader.py, reportgen/readers/kineto_trace.py).
MALFORMED = "malformed JSON line"
TRUNC_LAST = "truncated last line"
EMPTY = "empty file"
NON_UTF8 = "non-UTF-8 bytes"
NOT_OBJECT = "record is not a JSON object"
MISSING = "missing or non-numeric Value/Timestamp"
MISSING_STR = "missing or non-string Type/Name/Dimension/NodeId"
NONFINITE = "non-finite value (dropped)"
OUT_OF_RANGE = "out-of-range value (kept)"
OUT_OF_ORDER = "out-of-order timestamp (kept, re-sorted)"
DUPLICATE = "duplicate sample for a series within one tick (last kept)"
UNKNOWN_TYPE = "unknown record type"


@case("baseline_ok", exit=0, problems={}, cli=True)
def _(f):
    """Control: two nodes of clean system metrics and a clean framework trace."""
    return {"system_values": good_system(f) + good_system(f, node="algo-2"), "events": good_framework(f)}


# ---- system metrics (JSON lines)

@case("sys_truncated_last_line", exit=0, problems={TRUNC_LAST: 1}, cli=True)
def _(f):
    """The job died mid-write: the last line stops half-way and has no newline."""
    lines = instants(10)
    sys_file(f, lines + ['{"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtil'], newline=False)
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_corrupt_middle_line", exit=0, problems={MALFORMED: 1})
def _(f):
    """One line in the middle is garbage; the lines after it still count."""
    lines = instants(10)
    sys_file(f, lines[:30] + ['{"Type": "cpu", "Name": ]]]'] + lines[30:])
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_empty_file", exit=0, problems={EMPTY: 1})
def _(f):
    """A metrics file holding only blank lines, next to a good one."""
    n = good_system(f)
    sys_file(f, [], minute=T + 60, raw=b"\n \n\n")
    return {"system_values": n, "events": good_framework(f)}


@case("sys_zero_length_file", exit=0, problems={EMPTY: 1})
def _(f):
    """A zero-byte metrics file (disk full when the agent opened it), next to a good one."""
    n = good_system(f)
    sys_file(f, [], minute=T + 60, raw=b"")
    return {"system_values": n, "events": good_framework(f)}


@case("sys_not_json", exit=0, problems={MALFORMED: 3})
def _(f):
    """A file named like metrics that holds plain text; the other file is used."""
    n = good_system(f)
    sys_file(f, [], minute=T + 60, raw=b"this is not json\nneither is this\n<html></html>\n")
    return {"system_values": n, "events": good_framework(f)}


@case("sys_only_bad_files", exit=2, error="no usable profiler data")
def _(f):
    """Every metrics file is unusable and there is nothing else: no report, one line."""
    sys_file(f, [], raw=b"garbage\n")
    sys_file(f, [], minute=T + 60, raw=b"")
    return {}


@case("sys_wrong_shape", exit=0, problems={NOT_OBJECT: 4, MISSING: 2, MISSING_STR: 2})
def _(f):
    """Valid JSON of the wrong shape: arrays, numbers, strings, null, missing and mistyped fields."""
    lines = instants(10)
    bad = ["[1, 2, 3]", "42", '"cpu"', "null",
           json.dumps({"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtilization", "NodeId": "algo-1",
                       "Value": "50", "Timestamp": T + 1.0}),
           json.dumps({"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtilization", "NodeId": "algo-1", "Value": 5}),
           json.dumps({"Type": "cpu", "Name": 7, "Dimension": "CPUUtilization", "NodeId": "algo-1", "Value": 5,
                       "Timestamp": T + 1.0}),
           json.dumps({"Type": "cpu", "Name": "cpu0", "Value": 5, "Timestamp": T + 1.0})]
    sys_file(f, lines[:12] + bad + lines[12:])
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_many_bad_lines", exit=0, problems={MALFORMED: 500})
def _(f):
    """500 corrupt lines among the good ones: all counted, the listed sample capped at 200."""
    lines = instants(10)
    bad = [f'{{"Type": "cpu", "broken": {k}' for k in range(500)]
    sys_file(f, [x for pair in zip(bad[:60], lines) for x in pair] + bad[60:])
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_nan_values", exit=0, problems={NONFINITE: 3})
def _(f):
    """NaN written by a sampler that divided by zero (Python's json writes the bare word NaN)."""
    lines = instants(10)
    bad = [rec("gpu", "gpu0", "GPUUtilization", float("nan"), T + 20.0),
           rec("cpu", "cpu0", "CPUUtilization", float("nan"), T + 20.0),
           '{"Type": "cpu", "Name": "cpu1", "Dimension": "CPUUtilization", "Value": 1, "NodeId": "algo-1", "Timestamp": NaN}']
    sys_file(f, lines + bad)
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_inf_values", exit=0, problems={NONFINITE: 3})
def _(f):
    """Infinity, -Infinity and a number too large for a double (1e999)."""
    lines = instants(10)
    bad = [rec("gpu", "gpu0", "GPUUtilization", float("inf"), T + 20.0),
           rec("cpu", "cpu0", "CPUUtilization", float("-inf"), T + 20.0),
           '{"Type": "i/o", "Name": "IOPS", "Dimension": "", "Value": 1e999, "NodeId": "algo-1", "Timestamp": 1700000060.0}']
    sys_file(f, lines[:6] + bad + lines[6:])
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_negative_utilization", exit=0, problems={OUT_OF_RANGE: 2})
def _(f):
    """Negative utilisation (a counter wrapped): flagged, kept."""
    lines = instants(10)
    lines[0] = rec("cpu", "cpu0", "CPUUtilization", -5.0, T + 0.001)
    lines[8] = rec("gpu", "gpu0", "GPUUtilization", -0.5, T + 0.504)
    sys_file(f, lines)
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_over_100_percent", exit=0, problems={OUT_OF_RANGE: 2})
def _(f):
    """Utilisation above 100 % (a driver bug): flagged, kept."""
    lines = instants(10)
    lines[0] = rec("cpu", "cpu0", "CPUUtilization", 250.0, T + 0.001)
    lines[8] = rec("gpu", "gpu0", "GPUUtilization", 100.5, T + 0.504)
    sys_file(f, lines)
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_duplicate_timestamps", exit=0, problems={DUPLICATE: 6})
def _(f):
    """The agent wrote one instant twice (a retry after a flush error)."""
    lines = instants(10)
    sys_file(f, lines[:18] + lines[12:18] + lines[18:])
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_out_of_order", exit=0, problems={})
def _(f):
    """One instant appears after a later one; re-sorted, nothing dropped (ticks are built from sorted times)."""
    lines = instants(10)
    sys_file(f, lines[:12] + lines[18:24] + lines[12:18] + lines[24:])
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_clock_jump_back", exit=0, problems={})
def _(f):
    """The node's clock was set back one hour mid-job (NTP step): every record kept, in time order."""
    before = instants(10)
    after = instants(5, start=T + 5 - 3600)
    sys_file(f, before + after)
    return {"system_values": len(before) + len(after), "events": good_framework(f)}


CLOCK = "timestamp more than 30 days outside the files' time range (clock jump; dropped)"


@case("sys_clock_jump_forward_years", exit=0, problems={CLOCK: 12})
def _(f):
    """Records stamped 30 years later inside a normal file (RTC glitch): dropped and counted, instead of
    a 16-million-window time axis (30 s and 6 GB before the fix)."""
    lines = instants(10)
    sys_file(f, lines)
    sys_file(f, instants(2, start=T + 30 * 365 * 86400), minute=T + 60)
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_clock_jump_file_names", exit=0, problems={CLOCK: 12})
def _(f):
    """The clock jumped 30 years for a minute, so the file name jumped too: the main run of files wins."""
    lines = instants(10) + instants(10, start=T + 60)
    sys_file(f, lines[:60])
    sys_file(f, lines[60:], minute=T + 60)
    late = T + 30 * 365 * 86400
    sys_file(f, instants(2, start=late), minute=late - late % 60)
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_clock_reset_1970", exit=0, problems={CLOCK: 18})
def _(f):
    """A node booted with its clock at 1970 for a few samples (file named 0000000000)."""
    lines = instants(10)
    sys_file(f, lines)
    sys_file(f, instants(3, start=5.0), minute="0000000000")
    return {"system_values": len(lines), "events": good_framework(f)}


@case("fw_far_future_event", exit=0, problems={CLOCK: 1})
def _(f):
    """One framework event stamped in the year 5000: dropped and counted, the other events kept."""
    ev = fw_meta() + fw_events(6) + [{"name": "x", "pid": 1, "ph": "X", "ts": 95_000_000_000_000_000, "dur": 5}]
    fw_file(f, fw_text(ev))
    return {"system_values": good_system(f), "events": 6}


@case("sys_unknown_node", exit=0, problems={})
def _(f):
    """Files of a node nobody announced (no framework data), and records whose NodeId differs from the file name."""
    a = good_system(f)
    b = good_system(f, node="worker-7")
    lines = instants(5, node="ghost-node", start=T + 30)
    sys_file(f, lines, minute=T + 60, node="algo-1")  # records of another node inside algo-1's file
    return {"system_values": a + b + len(lines), "events": good_framework(f)}


@case("sys_non_utf8", exit=0, problems={NON_UTF8: 2})
def _(f):
    """Latin-1 and random bytes in two lines; every other line counts."""
    lines = instants(10)
    body = "\n".join(lines[:10]).encode() + b"\n" + \
        b'{"Type": "cpu", "Name": "cpu\xe9", "Dimension": "CPUUtilization", "Value": 1, "NodeId": "algo-1", "Timestamp": 1700000041}\n' + \
        b"\xff\xfe\x00garbage\x80\n" + "\n".join(lines[10:]).encode() + b"\n"
    sys_file(f, [], raw=body)
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_huge_integer", exit=0, problems={NONFINITE: 2})
def _(f):
    """A Value and a Timestamp written as 400-digit integers (no float holds them): counted, not an OverflowError."""
    lines = instants(10)
    big = "1" + "0" * 400
    bad = ['{"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtilization", "Value": %s, "NodeId": "algo-1", '
           '"Timestamp": 1700000041.0}' % big,
           '{"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtilization", "Value": 5, "NodeId": "algo-1", '
           '"Timestamp": %s}' % big]
    sys_file(f, lines[:20] + bad + lines[20:])
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_fuzz_duckdb_message", exit=0, problems={MISSING_STR: 1})
def _(f):
    """Found by fuzzing: a record whose Value is an object with escaped control and non-ASCII keys made
    DuckDB's error message cut a UTF-8 character (UnicodeDecodeError instead of a DuckDB error)."""
    lines = instants(10)
    bad = json.dumps({"Type": None, "Name": None, "Dimension": None,
                      "Value": {"00000\x1f\x1f\u0800": None, "00\x1f0": [None], "\x80": None}})
    sys_file(f, lines + [bad], newline=False)
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_unknown_record_type", exit=0, problems={UNKNOWN_TYPE: 2})
def _(f):
    """A newer agent writes a record type this version does not know."""
    lines = instants(10)
    bad = [rec("tpu", "tpu0", "TPUUtilization", 5.0, T + 0.001), rec("", "x", "", 1.0, T + 0.5)]
    sys_file(f, lines + bad)
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_utf8_bom_crlf", exit=0, problems={})
def _(f):
    """Written on Windows: a UTF-8 byte-order mark and CRLF line ends; every record still counts."""
    lines = instants(10)
    sys_file(f, [], raw=b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    return {"system_values": len(lines), "events": good_framework(f)}


@case("sys_missing_gpu", exit=0, problems={})
def _(f):
    """A CPU-only job: no GPU records at all."""
    return {"system_values": good_system(f, gpu=False), "events": good_framework(f)}


@case("sys_missing_framework", exit=0, problems={}, cli=True)
def _(f):
    """System metrics only: no framework/ folder."""
    return {"system_values": good_system(f), "events": 0}


@case("sys_symlink_loop", exit=0, problems={})
def _(f):
    """A symlink pointing back up the tree (system/incremental/loop -> ..): read once, no endless walk."""
    n = good_system(f)
    os.symlink("..", f / "system" / "incremental" / "loop")
    os.symlink("..", f / "framework" / "pevents" / "loop") if (f / "framework" / "pevents").is_dir() else None
    return {"system_values": n, "events": good_framework(f)}


@case("sys_dangling_symlink", exit=0, problems={})
def _(f):
    """A metrics file name that is a dangling symlink (the target was cleaned up)."""
    n = good_system(f)
    os.symlink("/nonexistent/reportgen-corpus-target", f / SYS_DIR / f"{T + 60}.algo-1.json")
    return {"system_values": n, "events": good_framework(f)}


@case("sys_file_vanishes", exit=0, problems={"unreadable file: No such file or directory": 1},
      hook=f"vanish:{SYS_DIR}/{T + 60}.algo-1.json")
def _(f):
    """A metrics file is deleted between listing and reading (a cleanup job ran)."""
    n = good_system(f)
    sys_file(f, instants(4, start=T + 60), minute=T + 60)
    return {"system_values": n, "events": good_framework(f)}


# ---- framework traces

FW_TRUNC = "truncated or corrupt JSON array"


@case("fw_truncated_array", exit=0, problems={f"{FW_TRUNC} (7 events before the break kept)": 1}, cli=True)
def _(f):
    """The trace stops mid-event (the job was killed)."""
    events = fw_meta() + fw_events(6)
    text = fw_text(events)
    cut = text.rindex('{"name"')
    fw_file(f, text[: cut + 20])
    return {"system_values": good_system(f), "events": 5}


@case("fw_corrupt_middle_event", exit=0, problems={"corrupt JSON event (skipped)": 1})
def _(f):
    """One event line in the middle of the array is garbage; the events after it still count."""
    events = fw_meta() + fw_events(10)
    lines = fw_text(events).split("\n")
    lines.insert(7, '{"name": "broken", "ph": "X", "ts": 12, ]]},')
    fw_file(f, "\n".join(lines))
    return {"system_values": good_system(f), "events": 10}


@case("fw_not_json", exit=0, problems={"not a JSON array": 1})
def _(f):
    """A trace file that holds plain text."""
    fw_file(f, "Segmentation fault (core dumped)\n")
    return {"system_values": good_system(f), "events": 0}


@case("fw_wrong_shape", exit=0, problems={"JSON object without a traceEvents array": 1, "event is not a JSON object": 3})
def _(f):
    """A JSON object without traceEvents, and an array holding numbers and strings among the events."""
    fw_file(f, json.dumps({"events": []}), node="27-algo-2")
    fw_file(f, fw_text(fw_meta() + [1, "x", None] + fw_events(4)))
    return {"system_values": good_system(f), "events": 4}


@case("fw_empty_and_zero_length", exit=0, problems={EMPTY: 2})
def _(f):
    """Two trace files: zero bytes, and blank lines."""
    fw_file(f, "", node="27-algo-2")
    fw_file(f, "\n\n", node="28-algo-2")
    return {"system_values": good_system(f), "events": good_framework(f)}


@case("fw_unclosed_events", exit=0, problems={"unclosed B event 'forward' (dropped)": 1,
                                             "E event without matching B": 1})
def _(f):
    """A B event never closed (crash inside forward) and a stray E; matched B/E pairs count."""
    ev = fw_meta() + fw_events(3) + [
        {"name": "dataload", "ph": "B", "pid": 1, "ts": 900_000},
        {"name": "dataload", "ph": "E", "pid": 1, "ts": 950_000},
        {"name": "forward", "ph": "B", "pid": 1, "ts": 960_000},
        {"name": "x", "ph": "E", "pid": 2, "ts": 970_000},
    ]
    fw_file(f, fw_text(ev))
    return {"system_values": good_system(f), "events": 4}


@case("fw_fuzz_unhashable_pid", exit=0, problems={"E event without matching B": 1, "unclosed B event 'b' (dropped)": 1})
def _(f):
    """Found by fuzzing: pids that are lists or objects (unhashable) in B/E/X events."""
    ev = fw_meta() + fw_events(4) + [
        {"name": "x", "ph": "X", "pid": [1], "ts": 5, "dur": 5},
        {"name": "e", "ph": "E", "pid": [], "ts": 7},
        {"name": "b", "ph": "B", "pid": {"a": 1}, "ts": 8},
    ]
    fw_file(f, fw_text(ev))
    return {"system_values": good_system(f), "events": 5}


@case("fw_fuzz_unhashable_phase", exit=0, problems={"unknown event phase []": 1, "unknown event phase {'x': 1}": 1})
def _(f):
    """Found by fuzzing (after the merge of the column-wise reader): a list or object as "ph"."""
    ev = fw_meta() + fw_events(4) + [
        {"name": "X", "ph": [], "pid": 1, "ts": 5, "dur": 5},
        {"name": "Y", "ph": {"x": 1}, "pid": 1, "ts": 6},
    ]
    fw_file(f, fw_text(ev))
    return {"system_values": good_system(f), "events": 4}


@case("fw_nan_inf_times", exit=0, problems={"event without numeric ts": 2, "X event with missing or negative dur": 2})
def _(f):
    """NaN/Infinity timestamps and durations (bare words, as Python's json writes them), a negative duration."""
    good = fw_events(5)
    bad = ['{"name": "a", "ph": "X", "pid": 1, "ts": NaN, "dur": 5}',
           '{"name": "b", "ph": "X", "pid": 1, "ts": Infinity, "dur": 5}',
           '{"name": "c", "ph": "X", "pid": 1, "ts": 5, "dur": NaN}',
           '{"name": "d", "ph": "X", "pid": 1, "ts": 5, "dur": -10}']
    text = "[\n" + ",\n".join([json.dumps(e) for e in fw_meta() + good[:2]] + bad +
                              [json.dumps(e) for e in good[2:]]) + "\n]\n"
    fw_file(f, text)
    return {"system_values": good_system(f), "events": 5}


@case("fw_huge_timestamps", exit=0, problems={"event time out of range": 2})
def _(f):
    """Timestamps beyond any clock (1e30 µs, -1e30): counted, not an overflow."""
    good = fw_events(5)
    bad = [{"name": "a", "ph": "X", "pid": 1, "ts": 1e30, "dur": 5},
           {"name": "b", "ph": "X", "pid": 1, "ts": 5, "dur": 1e30}]
    fw_file(f, fw_text(fw_meta() + good + bad))
    return {"system_values": good_system(f), "events": 5}


@case("fw_non_utf8", exit=0, problems={"non-UTF-8 bytes (replaced)": 1})
def _(f):
    """An operator name with Latin-1 bytes: the event is kept with the bytes replaced."""
    text = fw_text(fw_meta() + fw_events(3)).encode()
    text = text.replace(b"Step:ModeKeys.TRAIN\", \"pid\": 1, \"ph\"", b"Step\xe9\xff\", \"pid\": 1, \"ph\"", 1)
    fw_file(f, text)
    return {"system_values": good_system(f), "events": 3}


@case("fw_unknown_node_name", exit=0, problems={})
def _(f):
    """A trace whose file name carries a node id in no known pattern ('worker#3')."""
    fw_file(f, fw_text(fw_meta() + fw_events(3)), node="worker#3")
    return {"system_values": good_system(f), "events": 3}


@case("fw_only_framework", exit=0, problems={}, cli=True)
def _(f):
    """Framework traces only: no system/ folder (no utilisation sections, still a report)."""
    return {"system_values": 0, "events": good_framework(f, n=30)}


@case("fw_file_vanishes", exit=0, problems={"unreadable file: No such file or directory": 1},
      hook=f"vanish:{FW_DIR}/{T * 1_000_000 + 120_000_000}_27-algo-1_pythontimeline.json")
def _(f):
    """A trace file deleted between listing and reading."""
    n = good_framework(f)
    fw_file(f, fw_text(fw_meta() + fw_events(3)), end_us=T * 1_000_000 + 120_000_000)
    return {"system_values": good_system(f), "events": n}


# ---- TF profiler traces (.trace.json.gz)

TF_STEP = "framework/tensorflow/detailed_profiling/2023111422/000000000005"


def tf_trace(folder: Path, data: bytes, metadata=True) -> None:
    write(folder, f"{TF_STEP}/plugins/profile/2023_11_14_22_00_45/algo-1.trace.json.gz", data)
    if metadata:
        write(folder, f"{TF_STEP}/algo-1_{T * 1_000_000}_{T * 1_000_000 + 5_000_000}.metadata", "")


def tf_doc(n: int) -> bytes:
    ev = [{"ph": "X", "name": f"MatMul_{k}", "pid": 1, "tid": 2, "ts": 1000 * k, "dur": 500,
           "args": {"step_num": "5"}} for k in range(n)]
    return json.dumps({"displayTimeUnit": "ns", "traceEvents": ev}).encode()


@case("tf_broken_gz", exit=0, problems={"broken gzip stream (*": 1, FW_TRUNC + " (*": 1})
def _(f):
    """A TF trace whose gzip stream is cut (upload interrupted): the events before the cut count."""
    doc = tf_doc(400)
    data = gzip.compress(doc, mtime=0)
    cut = data[: len(data) * 2 // 3]
    tf_trace(f, cut)
    return {"system_values": good_system(f), "events": complete_events(cut, json.loads(doc)["traceEvents"])}


@case("tf_not_gzip", exit=0, problems={"broken gzip stream (0 bytes recovered)": 1, EMPTY: 1})
def _(f):
    """A .trace.json.gz that is not gzip at all."""
    tf_trace(f, b"<html>404 Not Found</html>")
    return {"system_values": good_system(f), "events": good_framework(f)}


@case("tf_missing_metadata", exit=0, problems={"TF trace without .metadata file (base time 0)": 1})
def _(f):
    """A TF trace without its step's .metadata marker: events kept (base time 0), flagged."""
    tf_trace(f, gzip.compress(tf_doc(7), mtime=0), metadata=False)
    return {"system_values": good_system(f), "events": 7}


# ---- PyTorch profiler (Kineto) traces

@case("kineto_ok", exit=0, problems={}, kineto_only=True)
def _(f):
    """Control: a clean Kineto trace alone."""
    write(f, KINETO, kineto_text(kineto_doc()))
    return {"kineto_events": 10}


@case("kineto_truncated", exit=0, problems={"truncated or corrupt JSON array (9 events before the break kept)": 1},
      kineto_only=True, cli=True)
def _(f):
    """A Kineto trace cut mid-event (the process was killed while the profiler wrote it)."""
    text = kineto_text(kineto_doc())
    write(f, KINETO, text[: text.rindex('{"ph"') + 15])
    return {"kineto_events": 9}


@case("kineto_corrupt_middle_event", exit=0, problems={"corrupt JSON event (skipped)": 1}, kineto_only=True)
def _(f):
    """One garbage event line in the middle; the events after it still count."""
    lines = kineto_text(kineto_doc()).split("\n")
    lines.insert(3, '{"ph": "X", "cat": "kernel", "name": ]]]},')
    write(f, KINETO, "\n".join(lines))
    return {"kineto_events": 10}


@case("kineto_broken_gz", exit=0, problems={"broken gzip stream": 1, "truncated or corrupt JSON array (*": 1},
      kineto_only=True)
def _(f):
    """A gzip'd Kineto trace cut in transfer."""
    doc = kineto_doc(n_kernels=300, n_ops=300)
    data = gzip.compress(kineto_text(doc).encode(), mtime=0)
    cut = data[: len(data) // 2]
    write(f, KINETO + ".gz", cut)
    return {"kineto_events": complete_events(cut, doc["traceEvents"])}


@case("kineto_unclosed_and_bad_times", exit=0, kineto_only=True,
      problems={"unclosed B event (no matching E; dropped)": 1, "event without numeric ts/dur (dropped)": 2,
                "negative duration (dropped)": 1})
def _(f):
    """Unclosed B, NaN and string times, a negative duration; everything else counts."""
    doc = kineto_doc()
    doc["traceEvents"] += [
        {"ph": "B", "cat": "cpu_op", "name": "aten::forward", "pid": 1, "tid": 1, "ts": T * 1_000_000 + 5},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": float("nan"), "dur": 5},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "soon", "dur": 5},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": T * 1_000_000, "dur": -5},
    ]
    write(f, KINETO, kineto_text(doc))
    return {"kineto_events": 10}


@case("kineto_fuzz_unhashable_pid", exit=0, kineto_only=True,
      problems={"E event without matching B": 1, "unclosed B event (no matching E; dropped)": 1})
def _(f):
    """Found by fuzzing: Kineto B/E events whose pid is a list (TypeError: unhashable type)."""
    doc = kineto_doc()
    doc["traceEvents"] += [{"ph": "E", "name": "X", "pid": []},
                           {"ph": "B", "cat": "cpu_op", "name": "b", "pid": [1], "tid": {}, "ts": T * 1_000_000}]
    write(f, KINETO, kineto_text(doc))
    return {"kineto_events": 10}


@case("kineto_wrong_shape", exit=0, problems={"not a Chrome trace (no traceEvents array)": 1,
                                          "no complete events in the trace": 1}, kineto_only=True)
def _(f):
    """A .pt.trace.json whose traceEvents is an object, next to a good rank file."""
    write(f, "traces/rank-1.pt.trace.json", json.dumps({"traceEvents": {"oops": 1}}))
    write(f, KINETO, kineto_text(kineto_doc()))
    return {"kineto_events": 10}


@case("kineto_empty", exit=0, problems={EMPTY: 1, "no complete events in the trace": 1}, kineto_only=True)
def _(f):
    """A zero-byte trace next to a good rank file."""
    write(f, "traces/rank-1.pt.trace.json", b"")
    write(f, KINETO, kineto_text(kineto_doc()))
    return {"kineto_events": 10}


# ---- round 2: clocks before 2001, odd file names, unreadable folders, huge lines

T_1999 = 968_895_960  # 2000-09-14: a node clock set back (9-digit epoch names)
SYS_DIR_1999 = "system/incremental/2000091401"
FW_DIR_1999 = "framework/pevents/2000091401"
UNREADABLE = "unreadable folder: Permission denied"


@case("sys_pre2001_clock", exit=0, problems={}, cli=True)
def _(f):
    """A job whose clock read 2000 (9-digit epoch file names): the files were skipped without a note
    and StepOutlier crashed (IndexError); now every record counts."""
    lines = instants(20, start=T_1999)
    write(f, f"{SYS_DIR_1999}/{T_1999}.algo-1.json", "\n".join(lines) + "\n")
    events = fw_meta(start_us=T_1999 * 1_000_000) + fw_events(120)
    write(f, f"{FW_DIR_1999}/{T_1999 * 1_000_000 + 60_000_000}_27-algo-1_pythontimeline.json", fw_text(events))
    return {"system_values": len(lines), "events": 120}


@case("fw_pre2001_clock", exit=0, problems={})
def _(f):
    """Framework traces only, clock in 2000: the time axis was empty and StepOutlier raised IndexError."""
    events = fw_meta(start_us=T_1999 * 1_000_000) + fw_events(120)
    write(f, f"{FW_DIR_1999}/{T_1999 * 1_000_000 + 60_000_000}_27-algo-1_pythontimeline.json", fw_text(events))
    return {"events": 120}


@case("tf_relative_times_only", exit=0, problems={"TF trace without .metadata file (base time 0)": 1})
def _(f):
    """A TF trace without its base time and nothing else: relative times only, still one report."""
    tf_trace(f, gzip.compress(tf_doc(12), mtime=0), metadata=False)
    return {"events": 12}


ODD_NODES = ("algo-1 (copy)", "algø-2", "algo\n3", "\u202ealgo-4", "algo*5", "algo[6]")


@case("sys_odd_node_names", exit=0, problems={})
def _(f):
    """Node names with a space, non-ASCII, a newline, U+202E and glob characters in the file names:
    each was ignored and the whole node left the report; now every node is read (and the glob
    characters do not make DuckDB read other files)."""
    n = 0
    for k, node in enumerate(ODD_NODES):
        lines = instants(10, node=f"node-{k}")
        write(f, f"{SYS_DIR}/{T}.{node}.json", "\n".join(lines) + "\n")
        n += len(lines)
    return {"system_values": n, "events": good_framework(f)}


@case("sys_unreadable_hour_folder", exit=0, problems={f"{UNREADABLE}": 1},
      hook="unreadable:system/incremental/2023111423")
def _(f):
    """An <hour>/ folder of mode 000 (copied from another user's job): its files were lost without a
    note; now the folder is counted under Data quality and the other hours are used."""
    n = good_system(f)
    lines = instants(10, start=T + 3600)
    write(f, f"system/incremental/2023111423/{T + 3600}.algo-1.json", "\n".join(lines) + "\n")
    return {"system_values": n, "events": good_framework(f)}


@case("fw_unreadable_hour_folder", exit=0, problems={f"{UNREADABLE}": 1},
      hook="unreadable:framework/pevents/2023111423")
def _(f):
    """A framework/pevents/<hour>/ folder of mode 000: counted, the readable traces used."""
    n = good_framework(f)
    write(f, f"framework/pevents/2023111423/{T * 1_000_000 + 3_660_000_000}_27-algo-1_pythontimeline.json",
          fw_text(fw_meta() + fw_events(5)))
    return {"system_values": good_system(f), "events": n}


@case("sys_line_without_newline_huge", exit=0, problems={"line longer than 1 MiB (skipped)": 1})
def _(f):
    """A 3 MB metrics file that is one line without a newline (a 2 GB one held 4 GB before the fix):
    skipped in bounded pieces and counted; the node's other file is used."""
    n = good_system(f)
    write(f, f"{SYS_DIR}/{T + 60}.algo-1.json", b'{"Type": "cpu", "Name": "' + b"x" * (3 << 20))
    return {"system_values": n, "events": good_framework(f)}


# ---- rule outputs (SageMaker's schema)

@case("rules_unknown_and_missing_fields", exit=0, problems={}, rules_only=True,
      notes=["LowGPUUtilization.json: ignored unknown field(s) FutureField",
             "BatchSize.json: missing field(s) Violations, Details; defaults used"])
def _(f):
    """A newer writer added a field; an older one left two out."""
    d = rule_outputs(f)
    doc = json.loads((d / "LowGPUUtilization.json").read_text())
    doc["FutureField"] = {"x": 1}
    (d / "LowGPUUtilization.json").write_text(json.dumps(doc))
    doc = json.loads((d / "BatchSize.json").read_text())
    del doc["Violations"], doc["Details"]
    (d / "BatchSize.json").write_text(json.dumps(doc))
    return {"rules": 11}


@case("rules_one_malformed", exit=0, problems={}, rules_only=True, cli=True,
      notes=["StepOutlier.json: malformed JSON at line 1"])
def _(f):
    """One rule output is cut off; the other ten still make the report."""
    d = rule_outputs(f)
    (d / "StepOutlier.json").write_text('{"RuleTriggered": 0, "Violations": ')
    return {"rules": 10}


@case("rules_wrong_types", exit=0, problems={}, rules_only=True,
      notes=["CPUBottleneck.json: field RuleTriggered is 'yes', not a number; shown as 0",
             "IOBottleneck.json: Details is not an object; ignored",
             "Dataloader.json: expected a JSON object, found list"])
def _(f):
    """Fields of the wrong type, Details as a list, a rule output that is an array."""
    d = rule_outputs(f)
    doc = json.loads((d / "CPUBottleneck.json").read_text())
    doc["RuleTriggered"] = "yes"
    (d / "CPUBottleneck.json").write_text(json.dumps(doc))
    doc = json.loads((d / "IOBottleneck.json").read_text())
    doc["Details"] = [1, 2]
    (d / "IOBottleneck.json").write_text(json.dumps(doc))
    (d / "Dataloader.json").write_text("[1, 2]")
    return {"rules": 10}


@case("rules_nan_and_garbage_details", exit=0, problems={}, rules_only=True,
      notes=["GPUMemoryIncrease.json: field Datapoints is nan, not a number; shown as 0"])
def _(f):
    """NaN counts and Details whose inner values have the wrong types: sections degrade, no crash."""
    d = rule_outputs(f)
    doc = json.loads((d / "GPUMemoryIncrease.json").read_text())
    doc["Datapoints"] = float("nan")
    (d / "GPUMemoryIncrease.json").write_text(json.dumps(doc))
    doc = json.loads((d / "OverallSystemUsage.json").read_text())
    doc["Details"] = {k: "garbage" for k in doc["Details"]} or {"CPU": "garbage"}
    (d / "OverallSystemUsage.json").write_text(json.dumps(doc))
    doc = json.loads((d / "StepOutlier.json").read_text())
    doc["Details"] = {"step_details": {"node": {"mean": "x", "step_durations": ["a", None]}}}
    (d / "StepOutlier.json").write_text(json.dumps(doc))
    return {"rules": 11}


@case("rules_not_regular_files", exit=0, problems={}, rules_only=True,
      notes=["CPUBottleneck.json: a FIFO, not a regular file; not read; this rule is left out",
             "IOBottleneck.json: a device, not a regular file; not read; this rule is left out"])
def _(f):
    """A FIFO named CPUBottleneck.json (the run hung on it) and IOBottleneck.json a symlink to
    /dev/zero (memory grew without bound): each costs its rule, with a note."""
    d = rule_outputs(f)
    (d / "CPUBottleneck.json").unlink()
    os.mkfifo(d / "CPUBottleneck.json")
    (d / "IOBottleneck.json").unlink()
    (d / "IOBottleneck.json").symlink_to("/dev/zero")
    return {"rules": 9}


@case("rules_deep_nesting", exit=0, problems={}, rules_only=True,
      notes=["StepOutlier.json: JSON nested deeper than 64 levels; this rule is left out",
             "BatchSize.json: JSON nested deeper than 64 levels; this rule is left out"])
def _(f):
    """A Details field nested 100,000 deep (RecursionError, exit 3) and one nested 500 deep (loads,
    but breaks every recursive consumer): each costs its rule, with a note."""
    d = rule_outputs(f)
    doc = json.loads((d / "StepOutlier.json").read_text())
    (d / "StepOutlier.json").write_text(json.dumps(doc)[:-1] + ', "Deep": ' + "[" * 100_000 + "]" * 100_000 + "}")
    doc = json.loads((d / "BatchSize.json").read_text())
    (d / "BatchSize.json").write_text(json.dumps(doc)[:-1] + ', "Deep": ' + '{"a": ' * 500 + "1" + "}" * 500 + "}")
    return {"rules": 9}


HUGE = "1" + "0" * 400


@case("rules_huge_integers", exit=0, problems={}, rules_only=True,
      notes=[f"{rule}.json: an integer of 401 digits at " for rule in
             ("CPUBottleneck", "Dataloader", "GPUMemoryIncrease", "IOBottleneck", "LoadBalancing",
              "LowGPUUtilization", "MaxInitializationTime", "StepOutlier", "BatchSize")])
def _(f):
    """A 401-digit integer in a count of nine rule outputs (OverflowError while formatting the report,
    exit 3): each costs its rule, with a note naming where; the two usage summaries make the report."""
    d = rule_outputs(f)
    for rule in ("CPUBottleneck", "Dataloader", "GPUMemoryIncrease", "IOBottleneck", "LoadBalancing",
                 "LowGPUUtilization", "MaxInitializationTime", "StepOutlier", "BatchSize"):
        text = (d / f"{rule}.json").read_text()
        (d / f"{rule}.json").write_text(text.replace('"Violations": ', f'"Violations": {HUGE}, "Was": ', 1))
    return {"rules": 2}


@case("rules_utf8_bom", exit=0, problems={}, rules_only=True)
def _(f):
    """Rule outputs saved by a Windows editor, with a UTF-8 byte-order mark: all eleven read (they
    were rejected as malformed JSON)."""
    d = rule_outputs(f)
    for path in sorted(d.glob("*.json")):
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    return {"rules": 11}


def _max_init(d: Path, **changes) -> None:
    doc = json.loads((d / "MaxInitializationTime.json").read_text())
    doc["Details"].update(changes)
    (d / "MaxInitializationTime.json").write_text(json.dumps(doc))


@case("rules_job_start_after_end", exit=0, problems={}, rules_only=True, html_absent=["ran for -"],
      notes=["MaxInitializationTime.json: job_start 1700000625.0 is after job_end 1700000000.0; the job's "
             "duration is shown as unknown"])
def _(f):
    """job_start after job_end: the report said the job "ran for -625 seconds"; now the times are
    unknown, with a note under Data quality."""
    d = rule_outputs(f)
    _max_init(d, job_start=1_700_000_625.0, job_end=1_700_000_000.0)
    return {"rules": 11}


@case("rules_times_in_wrong_units", exit=0, problems={}, rules_only=True, html_absent=["took -", "ran for -", "-1.6e", "-1.7e"],
      notes=["MaxInitializationTime.json: job_start 1700000040000.0 / job_end 1700000640000.0 are not epoch "
             "seconds (another unit?)"])
def _(f):
    """Job times in milliseconds where seconds belong (initialization times of -1.6e12 s were shown as
    facts): shown as unknown, with a note."""
    d = rule_outputs(f)
    _max_init(d, job_start=1_700_000_040_000.0, job_end=1_700_000_640_000.0)
    return {"rules": 11}


@case("rules_step_times_in_wrong_units", exit=0, problems={}, rules_only=True,
      notes=["MaxInitializationTime.json: step_num first 1700000100.0 / last 1700000500.0 are not microseconds"])
def _(f):
    """Step times in seconds where microseconds belong: the job's start, end and duration stay, the
    initialization, training loop and finalization are unknown."""
    d = rule_outputs(f)
    _max_init(d, job_start=1_700_000_040.0, job_end=1_700_000_640.0,
              step_num={"first": 1_700_000_100.0, "last": 1_700_000_500.0})
    return {"rules": 11}


@case("rules_duplicate_node_keys", exit=0, problems={}, rules_only=True,
      notes=["OverallSystemUsage.json: key(s) 'algo-1' appear twice in one object; the last one is used"])
def _(f):
    """A node key twice in OverallSystemUsage.json's Details (a merge of two files): the last one
    wins, as before, but now with a note instead of silently."""
    d = rule_outputs(f)
    text = (d / "OverallSystemUsage.json").read_text()
    doc = json.loads(text)
    cpu = doc["Details"]["CPU"]
    node = next(iter(cpu))
    first = json.dumps({node: cpu[node]})[1:-1]
    doc["Details"]["CPU"] = {}
    body = json.dumps(doc).replace('"CPU": {}', '"CPU": {' + first + ", " + first.replace("50", "51", 1) + "}")
    (d / "OverallSystemUsage.json").write_text(body)
    return {"rules": 11}


@case("rules_all_broken", exit=2, error="LowGPUUtilization.json: not UTF-8 text", rules_only=True)
def _(f):
    """The only rule output is not text: nothing to report, one line naming the file."""
    d = f / "profiler-reports"
    d.mkdir(parents=True)
    (d / "LowGPUUtilization.json").write_bytes(b"\xff\xfe\x00\x01")
    return {"rules": 0}


# ---- whole folder / output side

@case("empty_raw_folders", exit=2, error="No profiler data in")
def _(f):
    """system/ and framework/ exist but are empty (the job never started)."""
    (f / "system").mkdir()
    (f / "framework").mkdir()
    return {}


@case("output_folder_read_only", exit=2, error="cannot write", hook="readonly-output")
def _(f):
    """The output folder is read-only: one line, nothing written."""
    return {"system_values": good_system(f), "events": good_framework(f)}


@case("disk_full", exit=2, error="No space left on device", hook="disk-full")
def _(f):
    """The disk fills while outputs are written (ENOSPC simulated at the write boundary)."""
    return {"system_values": good_system(f), "events": good_framework(f)}


# ---- outputs (issue #20 items 2 and 7): checked before any work, written all together or not at all

@case("out_junit_equals_html", exit=2, error="-o and --junit both name the same file",
      args=["--junit", "{out}/report.html"])
def _(f):
    """--junit naming the HTML file: the HTML was replaced by XML (exit 0). Refused before any work."""
    return {"system_values": good_system(f), "events": good_framework(f)}


@case("out_html_named_json", exit=2, error="-o and --json both name the same file", args=[])
def _(f):
    """-o report.json: the HTML was written, then the JSON over it (exit 0). Refused before any work
    (the runner's -o is report.html, so --json names it here)."""
    return {"system_values": good_system(f), "events": good_framework(f)}


CASES["out_html_named_json"]["args"] = ["--json", "{out}/report.html"]


@case("out_json_is_a_folder", exit=2, error="is a folder", args=["--json", "{out}"])
def _(f):
    """--json naming a folder while -o is fine: report.html was replaced, then the run failed."""
    return {"system_values": good_system(f), "events": good_framework(f)}


@case("out_disk_full_after_first", exit=2, error="nothing was replaced", hook="disk-full-after-first",
      args=["--junit", "{out}/rules.xml", "--markdown", "{out}/summary.md"])
def _(f):
    """The disk fills after the first of four outputs is written: nothing is replaced, no temporary
    file is left (a new HTML stood beside an old JSON, or exit 2 after the pair was written)."""
    return {"system_values": good_system(f), "events": good_framework(f)}


# --------------------------------------------------------------------------------- driver


def build(out: Path) -> dict:
    """Write every case under ``out`` and return the manifest (also written to out/manifest.json)."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for name, spec in CASES.items():
        folder = out / name
        folder.mkdir()
        counts = spec["build"](folder)
        manifest[name] = {k: v for k, v in spec.items() if k != "build"}
        manifest[name].update(counts)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_corpus.py OUT_DIR")
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the checkout: tests/support/corpus/ -> ../../..
    m = build(Path(sys.argv[1]))
    print(f"{len(m)} cases in {sys.argv[1]}")
