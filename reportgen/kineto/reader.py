"""Columnar reader for PyTorch profiler (Kineto) Chrome traces, one file per rank.

A file is decoded once (stdlib JSON) and turned into a few numpy columns, one row per complete
event: category code, interned name, start and duration in µs, GPU device and bytes moved. What is
kept is only what the analysis needs; the decoded dicts are dropped file by file.

Bad input never raises: a damaged gzip stream keeps what decompressed before the damage, a broken
JSON array keeps the events before the break, unclosed ``B`` events and events without a numeric
time are skipped; each case is counted in the shared :class:`~reportgen.engine.problems.ProblemLog`.

Timestamps: the Chrome trace format says µs, and Kineto writes µs (recent versions with a
fractional part, i.e. ns resolution). A file whose timestamps are larger than 1e17 can only be
ns since the epoch (as µs that would be the year 5138), so it is scaled to µs. ``baseTimeNanoseconds``
(written by newer Kineto, with timestamps relative to it) is added to make times absolute.
"""

from __future__ import annotations

import json
import re
import sys
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reportgen.engine.gunzip import MAGIC, GunzipStream
from reportgen.engine.json_stream import TraceStream, events_array_start, is_big
from reportgen.engine.problems import ProblemLog

# Canonical categories. Kineto's 2021 traces use Operator/Runtime/Kernel/Memcpy/Memset.
CPU_OP, USER_ANNOTATION, KERNEL, MEMCPY, MEMSET, RUNTIME, DRIVER, SYNC, GPU_ANNOTATION, PYTHON, OTHER = range(11)
CATEGORY_NAMES = ("cpu_op", "user_annotation", "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime",
                  "cuda_driver", "cuda_sync", "gpu_user_annotation", "python_function", "other")
_CATEGORIES = {
    "cpu_op": CPU_OP, "operator": CPU_OP,
    "user_annotation": USER_ANNOTATION,
    "kernel": KERNEL,
    "gpu_memcpy": MEMCPY, "memcpy": MEMCPY,
    "gpu_memset": MEMSET, "memset": MEMSET,
    "cuda_runtime": RUNTIME, "runtime": RUNTIME,
    "cuda_driver": DRIVER,
    "cuda_sync": SYNC,
    "gpu_user_annotation": GPU_ANNOTATION,
    "python_function": PYTHON,
}
GPU_CATEGORIES = (KERNEL, MEMCPY, MEMSET, SYNC)
NS_THRESHOLD = 1e17
_META_KEYS = ("deviceProperties", "distributedInfo", "baseTimeNanoseconds")


@dataclass
class KinetoTrace:
    """One trace file as columns (one row per complete event, sorted by start)."""

    path: Path
    label: str  # how the report names this rank: its rank number, or the file's stem
    rank: int | None
    world_size: int | None = None
    backend: str | None = None
    devices: list[str] = field(default_factory=list)  # deviceProperties names
    time_unit: str = "us"  # unit found in the file ("ns" files are scaled to µs)
    names: list[str] = field(default_factory=list)  # interned names; ``name`` indexes into it
    cat: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    name: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    start_us: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    dur_us: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    device: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # GPU id, -1 for CPU events
    nbytes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))  # memcpy/memset bytes, else 0
    tid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # thread (CPU) or stream (GPU)
    corr: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # args.correlation, -1 when absent
    events_in_file: int = 0
    complete: bool = True  # False when the file was truncated or broken

    @property
    def end_us(self) -> np.ndarray:
        return self.start_us + self.dur_us

    def rows(self, *cats: int) -> np.ndarray:
        return np.isin(self.cat, np.asarray(cats, dtype=np.int8))


def _file_label(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json", ".pt.trace", ".trace"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or path.name


def rank_from_name(path: Path) -> int | None:
    match = re.search(r"rank[-_]?(\d+)", path.name, re.IGNORECASE)
    return int(match.group(1)) if match else None


def _read_bytes(path: Path, problems: ProblemLog) -> tuple[bytes, bool]:
    """The file's bytes, gunzipped when gzip; a broken stream keeps what was decompressed before the
    damage (``gunzip.GunzipStream``, the same steps as a streamed read)."""
    with open(path, "rb") as fh:
        if fh.peek(2)[:2] != MAGIC:
            raw = fh.read()
            if not raw:
                problems.add(path, None, "empty file")
                return b"", False
            return raw, True
        src = GunzipStream(fh)
        data = src.read()
    if src.broken:
        problems.add(path, None, "broken gzip stream")
    return data, not src.broken


def _salvage(text: str, path: Path, problems: ProblemLog) -> tuple[dict, list]:
    """Events before the first break in the ``traceEvents`` array, plus the metadata we can find."""
    decoder = json.JSONDecoder()
    meta: dict = {}
    for key in _META_KEYS:
        match = re.search(r'"%s"\s*:\s*' % key, text)
        if match:
            try:
                meta[key], _ = decoder.raw_decode(text, match.end())
            except (json.JSONDecodeError, RecursionError):
                pass
    start = events_array_start(text)
    if start is None:
        problems.add(path, None, "not a Chrome trace (no traceEvents array)")
        return meta, []
    pos = start + 1
    events = []
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if pos < n and text[pos] == "]":
            return meta, events  # closed: only single events were corrupt
        if pos >= n:
            break
        try:
            event, pos = decoder.raw_decode(text, pos)
        except (json.JSONDecodeError, RecursionError):
            # Kineto writes one event per line: skip to the next line that starts an object.
            nxt = _NEXT_EVENT.search(text, pos)
            if nxt is None:
                break
            problems.add(path, text.count("\n", 0, pos) + 1, "corrupt JSON event (skipped)")
            pos = nxt.start() + 1
            continue
        events.append(event)
    problems.add(path, len(events) + 1, f"truncated or corrupt JSON array ({len(events)} events before the break kept)")
    return meta, events


_NEXT_EVENT = re.compile(r"\n[ \t]*\{")


def _key(value):
    """A pid/tid usable as a dict key (a list or object in the data becomes its JSON text)."""
    return value if value is None or isinstance(value, (str, int, float)) else json.dumps(value, sort_keys=True, default=str)


_FLOAT_MAX = sys.float_info.max


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):  # an integer of 400 digits is no float (np.isfinite raises on it)
        return float(value) if -_FLOAT_MAX <= value <= _FLOAT_MAX else None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if np.isfinite(number) else None
    return None


def read_trace(path: Path, problems: ProblemLog | None = None) -> KinetoTrace:
    """Read one Kineto trace file; never raises on bad content."""
    path = Path(path)
    problems = problems if problems is not None else ProblemLog()
    if is_big(path):
        return _read_streamed(path, problems)
    try:
        data, complete = _read_bytes(path, problems)
    except OSError as err:
        problems.add(path, None, f"unreadable file ({err.strerror or err})")
        return KinetoTrace(path, _file_label(path), rank_from_name(path), complete=False)
    text = data.decode("utf-8", errors="replace")
    del data
    meta, events, whole = _parse(path, text, problems)
    del text
    return _columns_of(path, meta, events, complete and whole, problems)


def _parse(path: Path, text: str, problems: ProblemLog) -> tuple[dict, list, bool]:
    """The metadata and events of a trace's text, and whether it parsed whole (else it was salvaged).
    Also judges a streamed file in which no events array was found, from its whole text."""
    if "\ufffd" in text:
        problems.add(path, None, "non-UTF-8 bytes (replaced)")
    try:
        doc = json.loads(text) if text.strip() else {}
    except (json.JSONDecodeError, RecursionError):  # RecursionError: nesting too deep for the stdlib parser
        meta, events = _salvage(text, path, problems)
        return meta, events, False
    if isinstance(doc, list):
        return {}, doc, True
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents", []), list):
        return doc, doc.get("traceEvents", []), True
    problems.add(path, None, "not a Chrome trace (no traceEvents array)")
    return {}, [], True


def _read_streamed(path: Path, problems: ProblemLog) -> KinetoTrace:
    """A trace above the streaming threshold (plain or gzip'd): events decoded one at a time (bounded
    memory, ``reportgen.engine.json_stream``); the metadata is looked for before and after the
    events. The result equals the whole-file read's: problems found on the way are held in two capped
    logs and recorded at the end in its order (gzip damage, non-UTF-8 bytes, JSON breaks, events)."""
    breaks, bad_events = ProblemLog(problems.cap), ProblemLog(problems.cap)
    stream = TraceStream(path, breaks, path, cut_line="event")
    try:
        trace = _columns_of(path, lambda: _stream_meta(stream), stream, True, bad_events)
    except OSError as err:
        problems.merge(breaks)
        problems.merge(bad_events)
        problems.add(path, None, f"unreadable file ({err.strerror or err})")
        return KinetoTrace(path, _file_label(path), rank_from_name(path), complete=False)
    if stream.broken:
        problems.add(path, None, "broken gzip stream")
    if not stream.found:  # then the head is the whole text (up to json_stream.MAX_EVENT_BYTES)
        meta, events, whole = _parse(path, stream.head, problems)
        return _columns_of(path, meta, events, whole and not stream.broken, problems)
    if stream.replaced:
        problems.add(path, None, "non-UTF-8 bytes (replaced)")
    problems.merge(breaks)
    problems.merge(bad_events)
    trace.complete = stream.complete and not stream.skipped and not stream.broken
    return trace


def _stream_meta(stream: TraceStream) -> dict:
    """``_META_KEYS`` from the text before the events and from the text after them."""
    decoder = json.JSONDecoder()
    meta: dict = {}
    for key in _META_KEYS:
        for text in (stream.head, stream.tail):
            match = re.search(r'"%s"\s*:\s*' % key, text)
            if match:
                try:
                    meta[key], _ = decoder.raw_decode(text, match.end())
                    break
                except (json.JSONDecodeError, RecursionError):
                    pass
    return meta


def _columns_of(path: Path, meta, events, complete: bool, problems: ProblemLog) -> KinetoTrace:
    """``events`` as columns. ``meta``: the document's metadata, or a function giving it once the
    events are read (a stream: a trace's metadata may follow its events)."""
    names: dict[str, int] = {}
    # compact columns (~37 bytes per event instead of Python objects), for huge traces
    cat, name, start, dur, device, nbytes = array("b"), array("i"), array("d"), array("d"), array("i"), array("d")
    tids, corrs = array("q"), array("q")
    tid_ids: dict = {}  # a tid that is no 64-bit integer (a string, a list) gets a negative id of its own
    open_b: dict[tuple, list] = {}
    bad_time = 0
    negative = 0

    def add(e: dict, ts: float, d: float) -> None:
        c = _CATEGORIES.get(str(e.get("cat", "")).lower(), OTHER)
        label = str(e.get("name", ""))
        idx = names.get(label)
        if idx is None:
            idx = names[label] = len(names)
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        dev = -1
        if c in GPU_CATEGORIES or c == GPU_ANNOTATION:
            value = args.get("device", e.get("pid"))
            dev = int(value) if isinstance(value, int) and not isinstance(value, bool) and -2**31 < value < 2**31 else -1
        moved = _number(args.get("bytes")) if c in (MEMCPY, MEMSET) else None
        tid = e.get("tid")
        if not (isinstance(tid, int) and not isinstance(tid, bool) and 0 <= tid < 2**62):
            tid = tid_ids.setdefault(_key(tid), -1 - len(tid_ids))
        corr = args.get("correlation")
        tids.append(tid)
        corrs.append(corr if isinstance(corr, int) and not isinstance(corr, bool) and 0 <= corr < 2**62 else -1)
        cat.append(c)
        name.append(idx)
        start.append(ts)
        dur.append(d)
        device.append(dev)
        nbytes.append(moved or 0.0)

    for e in events:
        if not isinstance(e, dict):
            bad_time += 1
            continue
        ph = e.get("ph")
        if ph == "X":
            ts, d = _number(e.get("ts")), _number(e.get("dur"))
            if ts is None or d is None:
                bad_time += 1
                continue
            if d < 0:
                negative += 1
                continue
            add(e, ts, d)
        elif ph == "B":
            ts = _number(e.get("ts"))
            if ts is None:
                bad_time += 1
                continue
            open_b.setdefault((_key(e.get("pid")), _key(e.get("tid"))), []).append((e, ts))
        elif ph == "E":
            stack = open_b.get((_key(e.get("pid")), _key(e.get("tid"))))
            ts = _number(e.get("ts"))
            if not stack or ts is None:
                problems.add(path, None, "E event without matching B")
                continue
            begin, bts = stack.pop()
            if ts >= bts:
                add(begin, bts, ts - bts)
            else:
                negative += 1
    unclosed = sum(len(stack) for stack in open_b.values())
    if unclosed:
        problems.add(path, None, "unclosed B event (no matching E; dropped)", count=unclosed)
    if bad_time:
        problems.add(path, None, "event without numeric ts/dur (dropped)", count=bad_time)
    if negative:
        problems.add(path, None, "negative duration (dropped)", count=negative)
    if callable(meta):
        meta = meta()
    info = meta.get("distributedInfo") if isinstance(meta.get("distributedInfo"), dict) else {}
    rank = info.get("rank") if isinstance(info.get("rank"), int) and not isinstance(info.get("rank"), bool) else None
    if rank is None:
        rank = rank_from_name(path)
    props = meta.get("deviceProperties") if isinstance(meta.get("deviceProperties"), list) else []
    trace = KinetoTrace(
        path=path, label=str(rank) if rank is not None else _file_label(path), rank=rank,
        world_size=info.get("world_size") if isinstance(info.get("world_size"), int) else None,
        backend=str(info["backend"]) if info.get("backend") else None,
        devices=[str(p.get("name", "?")) for p in props if isinstance(p, dict)],
        events_in_file=len(events) if isinstance(events, list) else events.count, complete=complete,
    )
    ts_arr = np.asarray(start, dtype=np.float64)
    dur_arr = np.asarray(dur, dtype=np.float64)
    if ts_arr.size and float(np.nanmax(ts_arr)) > NS_THRESHOLD:
        trace.time_unit = "ns"
        ts_arr = ts_arr / 1000.0
        dur_arr = dur_arr / 1000.0
    base = _number(meta.get("baseTimeNanoseconds"))
    if base is not None and ts_arr.size and float(ts_arr.max()) < 1e15:  # relative to the base
        ts_arr = ts_arr + base / 1000.0
    order = np.argsort(ts_arr, kind="stable")
    trace.names = list(names)
    trace.cat = np.asarray(cat, dtype=np.int8)[order]
    trace.name = np.asarray(name, dtype=np.int32)[order]
    trace.start_us = ts_arr[order]
    trace.dur_us = dur_arr[order]
    trace.device = np.asarray(device, dtype=np.int32)[order]
    trace.nbytes = np.asarray(nbytes, dtype=np.float64)[order]
    trace.tid = np.asarray(tids, dtype=np.int64)[order]
    trace.corr = np.asarray(corrs, dtype=np.int64)[order]
    if not len(order):
        problems.add(path, None, "no complete events in the trace")
    return trace
