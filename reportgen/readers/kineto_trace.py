"""PyTorch profiler (Kineto) Chrome traces, one file per rank, read into the trace model
(:mod:`reportgen.readers.trace_model`).

A file is decoded once and turned into a few numpy columns, one row per complete event: category
code, interned name, start and duration in µs, GPU device and bytes moved. What is kept is only what
the analysis needs. A whole file (text up to ``REPORTGEN_STREAM_TRACE_MB``) is decoded into msgspec
structs of just those fields (``kineto_decode``) and its columns built a field at a time
(``_typed_columns``: 2-3x the speed of a Python call per event). Its events are decoded a run of 1 MB of
whole events at a time (``_stream_typed``, ``traces.stream.ArrayRuns``: the array cut in place; the document
around it split off by ``kineto_decode.split_document``, read whole by ``frame_document`` where that is unsure);
a text the runs do not fit is decoded all at once. A streamed file goes the same way (``traces.stream.FramedEvents``:
4-6x the speed of the event-by-event path, ~35 bytes an event); a file those do not fit goes event by event
through the trace layer's dicts (``_columns_of``). All end in ``_assemble``, so they give the same trace.

Bad input never raises: a damaged gzip stream keeps what decompressed before the damage, a broken
JSON array keeps the events before the break, unclosed ``B`` events and events without a numeric
time are skipped; each case is counted in the shared :class:`~reportgen.problems.ProblemLog`.

Timestamps: the Chrome trace format says µs, and Kineto writes µs (recent versions with a
fractional part, i.e. ns resolution). A file whose timestamps are larger than 1e17 can only be
ns since the epoch (as µs that would be the year 5138), so it is scaled to µs. ``baseTimeNanoseconds``
(written by newer Kineto, with timestamps relative to it) is added to make times absolute.
"""

from __future__ import annotations

import itertools
from array import array
from itertools import compress, repeat
from operator import attrgetter, eq, is_not, itemgetter, or_
from pathlib import Path

import msgspec
import numpy as np

from reportgen.garbage_collector import paused
from reportgen.problems import ProblemLog
from reportgen.readers.framework_decode import struct_columns
from reportgen.readers.kineto_decode import (EVENT_FIELDS, NO_ARGS, UNSET, decode_events, decode_trace,
                                             FLOAT64_TYPE, float64_tensor, frame_document, has_float64_input, input_dims,
                                             split_document)
from reportgen.readers.trace_model import (CATEGORY_CODES, CPU_OP, GPU_ANNOTATION, GPU_CATEGORIES, KERNEL,
                                           MAX_ABS_TS_US, MAX_DURATION_US, MEMCPY, MEMSET, OTHER, OUT_OF_RANGE,
                                           Float64Ops, FlopEvents, MemoryEvents, TraceColumns, file_label,
                                           rank_from_name,
                                           times_in_range)
from reportgen.traces.numbers import as_float, hashable
from reportgen.traces.read import TraceRead, Wording, meta_of
from reportgen.traces.spans import OpenSpans
from reportgen.traces.stream import ArrayRuns, FramedEvents

NS_THRESHOLD = 1e17
_META_KEYS = ("deviceProperties", "distributedInfo", "baseTimeNanoseconds")


# element sizes of the ``dtype`` torch writes on a collective's kernel (``Collective name``, ``In msg nelems``...)
DTYPE_BYTES = {"Float": 4, "BFloat16": 2, "Half": 2, "Double": 8, "Long": 8, "Int": 4, "Short": 2, "Char": 1,
               "Byte": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1, "ComplexFloat": 8}


def message_bytes(args: dict) -> float | None:
    """A collective kernel's message in bytes (``In msg nelems`` x its dtype's size; None when either is odd)."""
    return _message_bytes(args.get("In msg nelems"), args.get("dtype"))


def _message_bytes(nelems, dtype) -> float | None:
    nelems, size = as_float(nelems, text=True), DTYPE_BYTES.get(str(dtype))
    return nelems * size if nelems is not None and size is not None and 0 <= nelems < 1e15 else None


def _capability(props: dict) -> float | None:
    """``computeMajor``.``computeMinor`` of a deviceProperties entry (8.0 for an A100), None when absent."""
    major, minor = props.get("computeMajor"), props.get("computeMinor", 0)
    if not isinstance(major, int) or isinstance(major, bool) or not 0 <= major < 100:
        return None
    return major + (minor / 10.0 if isinstance(minor, int) and not isinstance(minor, bool) and 0 <= minor < 10 else 0.0)


def _device_memory(props: list) -> dict[int, float]:
    """deviceProperties' ``id`` -> ``totalGlobalMem`` (bytes) where both are plain numbers."""
    out = {}
    for p in props:
        if isinstance(p, dict):
            device, total = _int_arg(p.get("id"), -1, 2**31), as_float(p.get("totalGlobalMem"))
            if device >= 0 and total is not None and 0 < total < 2.0**53:
                out[device] = float(total)
    return out


# The Kineto reader's words for a file's outcomes (the trace layer's defaults are the framework reader's).
WORDING = Wording(unreadable="unreadable file ({})", broken_gzip="broken gzip stream",
                  object_without_events="not a Chrome trace (no traceEvents array)",
                  no_events_array="not a Chrome trace (no traceEvents array)", no_events_line=None,
                  cut_line="event")
# Event times pass the trace model's one sanity rule (``trace_model.times_in_range``; Kineto writes dur = 2**64 ns,
# 584 years, for a kernel whose end it never saw). Checked twice: while reading, in the file's own unit, not
# yet known (a ns file is told by its median time), with bounds that hold for both (2**63 ns is the year 2262;
# 30 days in ns); then in µs once the unit is known.
_RAW_MAX_DURATION = MAX_DURATION_US * 1000
_RAW_MAX_ABS_TS = 2.0**63


def _int_arg(value, default: int, bound: int = 2**62) -> int:
    """An integer argument as given, ``default`` for anything else (a bool, a float, a string, one out of range)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and -bound < value < bound else default


class _MemoryRows:
    """The ``[memory]`` instant events of a file as they are read (``profile_memory=True``): a row per event with
    a numeric time and byte count; the others are counted."""

    def __init__(self) -> None:
        self.time, self.nbytes, self.allocated, self.reserved = array("d"), array("d"), array("d"), array("d")
        self.device_type, self.device_id, self.addr, self.tid = array("h"), array("i"), array("q"), array("q")
        self.bad = 0

    def add(self, e: dict) -> None:
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        ts, moved = as_float(e.get("ts"), text=True), as_float(args.get("Bytes"), text=True)
        if ts is None or moved is None or not _in_range(ts, 0.0) or abs(moved) >= 2.0**53:
            self.bad += 1
            return
        for column, key in ((self.allocated, "Total Allocated"), (self.reserved, "Total Reserved")):
            total = as_float(args.get(key), text=True)
            column.append(total if total is not None and 0 <= total < 2.0**53 else float("nan"))
        self.time.append(ts)
        self.nbytes.append(moved)
        self.device_type.append(_int_arg(args.get("Device Type"), -1, 2**15))
        self.device_id.append(_int_arg(args.get("Device Id"), -1, 2**31))
        self.addr.append(_int_arg(args.get("Addr"), -1))
        self.tid.append(_int_arg(e.get("tid"), -1))

    def table(self, scale: float, offset: float, tid_ids: dict) -> MemoryEvents:
        """The rows with their times in µs (``time / scale + offset``: the file's unit and base), sorted by time;
        rows whose time is out of range after that are dropped and counted in ``bad``. ``tid_ids``: the ids the
        events' text tids were given (torch 1.8 wrote an operator's tid as text, its memory events' as a number)."""
        time = np.asarray(self.time, dtype=np.float64) / scale + offset
        if tid_ids:
            self.tid = array("q", (tid_ids.get(str(t), t) for t in self.tid))
        keep = np.abs(time) < MAX_ABS_TS_US
        self.bad += int((~keep).sum())
        table = MemoryEvents(time, np.asarray(self.nbytes, np.float64), np.asarray(self.allocated, np.float64),
                             np.asarray(self.reserved, np.float64), np.asarray(self.device_type, np.int16),
                             np.asarray(self.device_id, np.int32), np.asarray(self.addr, np.int64),
                             np.asarray(self.tid, np.int64), np.zeros(time.size, np.int32))
        rows = np.flatnonzero(keep)
        return table.take(rows[np.argsort(time[rows], kind="stable")])


# matrix multiplications whose FLOPs the shapes give (torch's own count for them): the operand positions in
# ``Input Dims`` of the (M, K) and (K, N) operands, batched or not. aten::matmul and aten::linear call these.
MATMULS = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1), "aten::baddbmm": (1, 2)}


def matmul_flops(name: str, args: dict) -> float | None:
    """2·M·K·N (times the batch) of a matrix multiplication from its ``Input Dims``; None when they do not say."""
    dims = args.get("Input Dims")
    a, b = MATMULS[name]
    if not isinstance(dims, list) or len(dims) <= b:
        return None
    left, right = dims[a], dims[b]
    if not (isinstance(left, list) and isinstance(right, list) and len(left) == len(right) and len(left) in (2, 3)
            and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**31 for x in left + right)
            and left[-1] == right[-2]):
        return None
    batch = left[0] if len(left) == 3 else 1
    return 2.0 * batch * left[-2] * left[-1] * right[-1]


def _in_range(ts: float, dur: float) -> bool:
    return -_RAW_MAX_ABS_TS < ts < _RAW_MAX_ABS_TS and dur <= _RAW_MAX_DURATION


CHUNK_EVENTS = 50_000  # a streamed file's events held at a time
WHOLE_IN_RUNS = True  # a whole file's events decoded a run at a time (``whole`` in ``read_trace``)


def read_trace(path: Path, problems: ProblemLog | None = None) -> TraceColumns:
    """Read one Kineto trace file (the trace layer opens, streams and salvages it); never raises on
    bad content."""
    path = Path(path)
    problems = problems if problems is not None else ProblemLog()
    bad_events = ProblemLog(problems.cap)
    typed: list[TraceColumns] = []

    def whole(text: bytes) -> int | None:
        """A whole file's text read through structs (``kineto_decode``), when it fits them: its events a run at
        a time as a streamed file's (``_stream_typed``: structs for 1 MB of events at a time), else all at once."""
        with paused():
            framed = split_document(text) if WHOLE_IN_RUNS else None  # (the events not yet checked)
            if framed is None and WHOLE_IN_RUNS:
                framed = frame_document(text)  # (the document checked whole)
            trace = (_stream_typed(path, ArrayRuns(framed[0], decode_events), bad_events, framed[1])
                     if framed is not None else None)
            if trace is None:
                decoded = decode_trace(text)
                trace = _typed_columns(path, *decoded, bad_events) if decoded is not None else None
                if trace is not None:
                    trace.events_in_file = len(decoded[0])
        if trace is None:
            return None
        typed.append(trace)
        return trace.events_in_file

    def framed(src) -> int | None:
        """A streamed file's text read a run of whole events at a time through structs (``_stream_typed``)."""
        trace = _stream_typed(path, FramedEvents(src, decode_events), bad_events, None, src)
        if trace is None:
            return None
        typed.append(trace)
        return trace.events_in_file

    read = TraceRead(path, path, WORDING, cap=problems.cap, whole=whole, framed=framed)
    chunks = read.chunks(CHUNK_EVENTS)
    first = next(chunks, [])
    if typed:
        trace = typed[0]
    else:
        events = itertools.chain(first, itertools.chain.from_iterable(chunks))
        trace = _columns_of(path, lambda: read.meta(_META_KEYS), events, bad_events)
    read.finish(problems, bad_events)
    if read.error is not None:
        return TraceColumns(path, file_label(path), rank_from_name(path), complete=False)
    trace.events_in_file, trace.complete = read.count, read.complete
    if not len(trace.start_us):
        problems.add(path, None, "no complete events in the trace")
    return trace


# a streamed file's columns as they grow (the typecodes of ``_columns_of``'s: ~46 bytes an event)
_STREAM_TYPECODES = {"cat": "b", "name": "i", "start": "d", "dur": "d", "device": "i", "nbytes": "d", "tids": "q",
                     "corrs": "q"}


def _stream_typed(path: Path, framing, problems: ProblemLog, meta: dict | None = None,
                  src=None) -> TraceColumns | None:
    """The columns of a file whose events ``framing`` cuts in runs (``FramedEvents`` over a streamed file's source
    ``src``, ``ArrayRuns`` over a whole file's events array) and ``_TypedRows`` takes, run after run (the runs'
    structs freed as their rows are kept), or None: the file is then read another way (a whole file's events
    decoded at once, a streamed file event by event from the start: ``TraceRead``). Its ``events_in_file`` is
    the events decoded. Nothing is noted before it is sure. ``meta``: the document's metadata when known (a
    whole file's), else looked for in the text around the events (``framing.head``, ``framing.tail``)."""
    rows = _TypedRows()
    columns = {key: array(code) for key, code in _STREAM_TYPECODES.items()}
    with paused():
        for events in framing:
            chunk = rows.chunk(events)
            if chunk is None:
                return None
            del events
            for key, values in chunk.items():
                columns[key].frombytes(values.astype(columns[key].typecode, copy=False).tobytes())
    if not framing.ok or getattr(src, "broken", False) or getattr(src, "capped", False):
        return None
    meta = meta if meta is not None else meta_of(framing.head, framing.tail, _META_KEYS)
    trace = rows.assemble(path, meta, columns, problems)
    trace.events_in_file = framing.count
    return trace


_GPU_ROWS = np.array(sorted(set(GPU_CATEGORIES) | {GPU_ANNOTATION}), np.int8)
_PH, _CORRELATION = attrgetter("ph"), attrgetter("correlation")
_DEVICE, _MSG_NELEMS = attrgetter("device"), attrgetter("msg_nelems")
_INPUT_TYPE, _FLOPS = attrgetter("input_type"), attrgetter("flops")
_ROW_ID_BOUND = 2**62  # a tid or correlation id is kept when an integer in [0, this)
_NONE_AS_ABSENT = {None: -1}  # ``.get(v, v)``: a correlation id with None as -1


def _pick(items, rows: list) -> list | tuple:
    """``items[i]`` for each of ``rows`` (an ``itemgetter``: one C call, not a Python step per row)."""
    return itemgetter(*rows)(items) if len(rows) > 1 else [items[i] for i in rows]


def _correlations(values: list) -> np.ndarray:
    """``_ids(values, lambda c: -1, absent=-1)``: correlation ids as int64, -1 for any that is not an integer in
    [0, 2**62). The usual run (integers and None) is done whole, in C; anything else by ``_ids``."""
    if set(map(type, values)) <= {int, type(None)}:
        try:
            plain = np.array(list(map(_NONE_AS_ABSENT.get, values, values)), np.int64)
        except OverflowError:  # an integer beyond 64 bits
            plain = None
        if plain is not None:
            plain[(plain < 0) | (plain >= _ROW_ID_BOUND)] = -1
            return plain
    return _ids(values, lambda c: -1, absent=-1)


def _ids(values: list, others, absent: int | None = None) -> np.ndarray:
    """``values`` (tids or correlation ids) as int64: each kept when an integer in [0, 2**62), else
    ``others(value)``, called in row order; ``absent``: what ``others`` gives a None, when that does not
    depend on the call. The plain integers are checked whole (min, max), only the others one by one (the
    span Kineto adds at a trace's end has a text tid; most events have no correlation id)."""
    odd = [i for i, v in enumerate(values) if type(v) is not int] if set(map(type, values)) - {int} else []
    plain = values.copy() if odd else values
    for i in odd:
        plain[i] = 0
    if plain and (min(plain) < 0 or max(plain) >= _ROW_ID_BOUND):  # rare: every row in turn
        return np.array([v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < _ROW_ID_BOUND
                         else others(v) for v in values], np.int64)
    for i in odd:
        value = values[i]
        plain[i] = absent if value is None and absent is not None else others(value)
    return np.array(plain, np.int64)


def _typed_columns(path: Path, events: list, meta: dict, problems: ProblemLog) -> TraceColumns | None:
    """The columns of a whole file's ``KinetoEvent`` structs, built column by column (what ``_columns_of``
    makes of the same events, row for row), or None when the file needs the event-by-event path (see
    ``_typed_rows``). Nothing is noted in ``problems`` before it is sure."""
    rows = _TypedRows()
    columns = rows.chunk(events)
    if columns is None:
        return None
    return rows.assemble(path, meta, columns, problems)


MAX_SHAPES = 4096  # matmul shapes whose FLOPs ``_TypedRows.shape_flops`` remembers (~200 B each)


class _TypedRows:
    """The rows of ``KinetoEvent`` structs, a list of them at a time: a whole file's in one list, a streamed
    file's chunk after chunk (``_stream_typed``). What is shared across chunks (names and odd tids in the order
    first seen, FLOP counts, memory rows, dropped counts) is kept here, so that the rows are those of one list."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.tid_ids: dict = {}
        self.memory = _MemoryRows()
        self.flop_time, self.flop_count = array("d"), array("d")
        self.f64_start, self.f64_dur = array("d"), array("d")
        self.negative = self.out_of_range = 0
        self.flops_of: dict[tuple[str, bytes], float | None] = {}  # a matmul's FLOPs by its name and Input Dims' text

    def shape_flops(self, label: str, args) -> float | None:
        """``matmul_flops`` of a matrix multiplication's ``Input Dims``, remembered by their text: a training step
        repeats the same few shapes, whose decoding and checks were ~0.1 CPU s of 2 x 100 MB. At most
        ``MAX_SHAPES`` kept (a trace of ever new shapes: the memo starts again)."""
        key = (label, bytes(args.input_dims))
        try:
            return self.flops_of[key]
        except KeyError:  # a shape not seen yet (or since the memo started again)
            pass
        if len(self.flops_of) >= MAX_SHAPES:
            self.flops_of.clear()
        found = self.flops_of[key] = matmul_flops(label, {"Input Dims": input_dims(args)})
        return found

    def chunk(self, events: list) -> dict | None:
        """The columns (numpy) of ``events``' complete events, or None when they need the event-by-event path:
        B/E pairs (their rows go in where each E closes), a complete event whose time or duration is no plain
        number."""
        phs = list(map(_PH, events))
        try:
            kinds = set(phs)
        except TypeError:  # a list or object as "ph"
            return None
        if "B" in kinds or "E" in kinds:
            return None
        complete = events if kinds == {"X"} else list(compress(events, map(eq, phs, repeat("X"))))
        cols = struct_columns(complete, EVENT_FIELDS)
        ts, dur = cols["ts"], cols["dur"]
        if not set(map(type, ts)) | set(map(type, dur)) <= {int, float}:
            return None
        try:
            ts_x, dur_x = np.array(ts, np.float64), np.array(dur, np.float64)
        except OverflowError:  # an integer beyond a float
            return None
        negative = dur_x < 0
        in_range = (np.abs(ts_x) < _RAW_MAX_ABS_TS) & (dur_x <= _RAW_MAX_DURATION)
        keep = ~negative & in_range
        if keep.all():
            cats, labels, args, pids, tids = cols["cat"], cols["name"], cols["args"], cols["pid"], cols["tid"]
        else:
            rows = keep.tolist()
            cats, labels, args, pids, tids = (list(compress(cols[k], rows)) for k in ("cat", "name", "args", "pid",
                                                                                       "tid"))
        if set(map(type, labels)) - {str}:
            labels = [str(x) for x in labels]
        n = len(cats)
        if set(map(type, cats)) <= {str}:
            codes = {c: CATEGORY_CODES.get(c.lower(), OTHER) for c in set(cats)}
            cat = np.fromiter(map(codes.__getitem__, cats), np.int8, n)
        else:  # (each in turn: as dict keys 1 and true would be one)
            cat = np.array([CATEGORY_CODES.get(str(c).lower(), OTHER) for c in cats], np.int8)
        names = self.names
        for label in dict.fromkeys(labels):
            names.setdefault(label, len(names))
        if None in args:
            args = [a if a is not None else NO_ARGS for a in args]
        device = self.devices(cat, args, pids)
        nbytes = np.zeros(n, np.float64)
        for i in np.flatnonzero((cat == MEMCPY) | (cat == MEMSET)).tolist():
            nbytes[i] = as_float(args[i].bytes, text=True) or 0.0
        kernels = np.flatnonzero(cat == KERNEL).tolist()
        kernel_args = _pick(args, kernels)
        for i, a in compress(zip(kernels, kernel_args), map(is_not, map(_MSG_NELEMS, kernel_args), repeat(UNSET))):
            nbytes[i] = _message_bytes(a.msg_nelems, a.dtype) or 0.0
        start = ts_x[keep]
        durs = dur_x[keep]
        ops = np.flatnonzero(cat == CPU_OP).tolist()
        op_args, op_labels = _pick(args, ops), _pick(labels, ops)
        flop_time, flop_count = array("d"), array("d")
        try:
            if FLOAT64_TYPE in b"\n".join(map(_INPUT_TYPE, op_args)):  # else no operator has one: none checked
                for i, a in zip(ops, op_args):
                    if len(a.input_type) > 4 and has_float64_input(a):  # "null" when absent
                        self.f64_start.append(start[i])
                        self.f64_dur.append(durs[i])
            counted_rows = map(or_, map(MATMULS.__contains__, op_labels), map(is_not, map(_FLOPS, op_args),
                                                                                repeat(UNSET)))
            for i, a, label in compress(zip(ops, op_args, op_labels), counted_rows):
                counted = a.flops if a.flops is not UNSET else None
                counted = (float(counted) if isinstance(counted, (int, float)) and not isinstance(counted, bool)
                           and 0 < counted < 1e18 else
                           self.shape_flops(label, a) if label in MATMULS else None)
                if counted:
                    flop_time.append(start[i])
                    flop_count.append(counted)
        except (msgspec.MsgspecError, ValueError, RecursionError):  # Input Dims only a full decode would reject
            return None
        tid_ids = self.tid_ids
        tids = _ids(tids, lambda t: tid_ids.setdefault(hashable(t), -1 - len(tid_ids)))
        corrs = _correlations(list(map(_CORRELATION, args)))
        if "i" in kinds:
            for e, ph in zip(events, phs):
                if ph == "i" and e.name == "[memory]":
                    self.memory.add(_memory_event(e))
        self.flop_time.extend(flop_time)
        self.flop_count.extend(flop_count)
        self.negative += int(negative.sum())
        self.out_of_range += int((~negative & ~in_range).sum())
        return {"cat": cat, "name": np.fromiter(map(names.__getitem__, labels), np.int32, n), "start": start,
                "dur": dur_x[keep], "device": device, "nbytes": nbytes, "tids": tids, "corrs": corrs}

    @staticmethod
    def devices(cat: np.ndarray, args: list, pids: list) -> np.ndarray:
        """The GPU device of each GPU row (``args.device``, else the pid; -1 when no integer in (-2**31, 2**31)),
        -1 for the others. Integers are checked whole (numpy), anything else a row at a time."""
        device = np.full(len(cat), -1, np.int32)
        gpu = np.flatnonzero(np.isin(cat, _GPU_ROWS))
        rows = gpu.tolist()
        values = list(map(_DEVICE, _pick(args, rows)))
        if UNSET in values:
            values = [v if v is not UNSET else pids[i] for v, i in zip(values, rows)]
        if set(map(type, values)) <= {int}:
            try:
                plain = np.array(values, np.int64)
            except OverflowError:  # an integer beyond 64 bits: the rows in turn
                plain = None
            if plain is not None:
                fine = (plain > -2**31) & (plain < 2**31)
                device[gpu[fine]] = plain[fine]
                return device
        for i, value in zip(rows, values):
            if isinstance(value, int) and not isinstance(value, bool) and -2**31 < value < 2**31:
                device[i] = value
        return device

    def assemble(self, path: Path, meta: dict, columns: dict, problems: ProblemLog) -> TraceColumns:
        """The trace of ``columns`` (every chunk's, in file order) with what the chunks left here."""
        return _assemble(path, meta, self.names, columns,
                         (self.flop_time, self.flop_count, self.f64_start, self.f64_dur), self.memory,
                         self.tid_ids, (0, self.negative, self.out_of_range), problems)


def _memory_event(e) -> dict:
    """A ``[memory]`` event struct as the dict ``_MemoryRows.add`` reads."""
    a = e.args
    args = {} if a is None else {"Bytes": a.mem_bytes, "Total Allocated": a.total_allocated,
                                 "Total Reserved": a.total_reserved, "Device Type": a.device_type,
                                 "Device Id": a.device_id, "Addr": a.addr}
    return {"ts": e.ts, "tid": e.tid, "args": args}


def _columns_of(path: Path, meta, events, problems: ProblemLog) -> TraceColumns:
    """``events`` as columns. ``meta``: a function giving the document's metadata once the events
    are read (a trace's metadata may follow its events)."""
    names: dict[str, int] = {}
    # compact columns (~37 bytes per event instead of Python objects), for huge traces
    cat, name, start, dur, device, nbytes = array("b"), array("i"), array("d"), array("d"), array("i"), array("d")
    tids, corrs = array("q"), array("q")
    tid_ids: dict = {}  # a tid that is no 64-bit integer (a string, a list) gets a negative id of its own
    spans = OpenSpans()  # B events waiting for their E, per (pid, tid)
    bad_time = 0
    negative = 0
    out_of_range = 0
    memory = _MemoryRows()
    flop_time, flop_count = array("d"), array("d")
    f64_start, f64_dur = array("d"), array("d")

    def add(e: dict, ts: float, d: float) -> None:
        c = CATEGORY_CODES.get(str(e.get("cat", "")).lower(), OTHER)
        label = str(e.get("name", ""))
        idx = names.get(label)
        if idx is None:
            idx = names[label] = len(names)
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        dev = -1
        if c in GPU_CATEGORIES or c == GPU_ANNOTATION:
            value = args.get("device", e.get("pid"))
            dev = int(value) if isinstance(value, int) and not isinstance(value, bool) and -2**31 < value < 2**31 else -1
        moved = (as_float(args.get("bytes"), text=True) if c in (MEMCPY, MEMSET)
                 else message_bytes(args) if c == KERNEL and "In msg nelems" in args else None)
        if c == CPU_OP and (label in MATMULS or "flops" in args):
            counted = args.get("flops")
            counted = (float(counted) if isinstance(counted, (int, float)) and not isinstance(counted, bool)
                       and 0 < counted < 1e18 else matmul_flops(label, args) if label in MATMULS else None)
            if counted:
                flop_time.append(ts)
                flop_count.append(counted)
        if c == CPU_OP and float64_tensor(args.get("Input type"), args.get("Input Dims")):
            f64_start.append(ts)
            f64_dur.append(d)
        tid = e.get("tid")
        if not (isinstance(tid, int) and not isinstance(tid, bool) and 0 <= tid < 2**62):
            tid = tid_ids.setdefault(hashable(tid), -1 - len(tid_ids))
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
            ts, d = as_float(e.get("ts"), text=True), as_float(e.get("dur"), text=True)
            if ts is None or d is None:
                bad_time += 1
                continue
            if d < 0:
                negative += 1
                continue
            if not _in_range(ts, d):
                out_of_range += 1
                continue
            add(e, ts, d)
        elif ph == "B":
            ts = as_float(e.get("ts"), text=True)
            if ts is None:
                bad_time += 1
                continue
            spans.begin((hashable(e.get("pid")), hashable(e.get("tid"))), e, ts)
        elif ph == "E":
            ts = as_float(e.get("ts"), text=True)
            pair = spans.end((hashable(e.get("pid")), hashable(e.get("tid")))) if ts is not None else None
            if pair is None:
                problems.add(path, None, "E event without matching B")
                continue
            begin, bts = pair
            if ts < bts:
                negative += 1
            elif not _in_range(bts, ts - bts):
                out_of_range += 1
            else:
                add(begin, bts, ts - bts)
        elif ph == "i" and e.get("name") == "[memory]":
            memory.add(e)
    unclosed = len(spans.unclosed())
    if unclosed:
        problems.add(path, None, "unclosed B event (no matching E; dropped)", count=unclosed)
    columns = {"cat": cat, "name": name, "start": start, "dur": dur, "device": device, "nbytes": nbytes,
               "tids": tids, "corrs": corrs}
    return _assemble(path, meta(), names, columns, (flop_time, flop_count, f64_start, f64_dur), memory, tid_ids,
                     (bad_time, negative, out_of_range), problems)


def _assemble(path: Path, meta: dict, names: dict, columns: dict, flops: tuple, memory: _MemoryRows, tid_ids: dict,
              dropped: tuple, problems: ProblemLog) -> TraceColumns:
    """The trace of a file's rows (``columns``: ``cat``, ``name``, ``start``, ``dur``, ``device``, ``nbytes``,
    ``tids``, ``corrs``, one entry per complete event in the order read, in the file's own time unit), its
    metadata, matrix FLOPs (times, counts), float64 operators (starts, durations) and memory rows: the unit and base applied, out-of-range events
    dropped, sorted by start. ``dropped``: events already dropped (without a numeric time, negative, out
    of range), counted in ``problems`` with the rest."""
    bad_time, negative, out_of_range = dropped
    cat, name, start, dur, device, nbytes, tids, corrs = (columns[k] for k in (
        "cat", "name", "start", "dur", "device", "nbytes", "tids", "corrs"))
    flop_time, flop_count, f64_start, f64_dur = flops
    if bad_time:
        problems.add(path, None, "event without numeric ts/dur (dropped)", count=bad_time)
    if negative:
        problems.add(path, None, "negative duration (dropped)", count=negative)
    info = meta.get("distributedInfo") if isinstance(meta.get("distributedInfo"), dict) else {}
    rank = info.get("rank") if isinstance(info.get("rank"), int) and not isinstance(info.get("rank"), bool) else None
    if rank is None:
        rank = rank_from_name(path)
    props = meta.get("deviceProperties") if isinstance(meta.get("deviceProperties"), list) else []
    trace = TraceColumns(
        path=path, label=str(rank) if rank is not None else file_label(path), rank=rank,
        world_size=info.get("world_size") if isinstance(info.get("world_size"), int) else None,
        backend=str(info["backend"]) if info.get("backend") else None,
        devices=[str(p.get("name", "?")) for p in props if isinstance(p, dict)],
        compute_capability=[_capability(p) for p in props if isinstance(p, dict)],
        device_memory=_device_memory(props),
    )
    ts_arr = np.asarray(start, dtype=np.float64)
    dur_arr = np.asarray(dur, dtype=np.float64)
    # the unit by the typical time, not the largest: one absurd time must not make a µs file a ns one
    if ts_arr.size and float(np.median(ts_arr)) > NS_THRESHOLD:
        trace.time_unit = "ns"
        ts_arr = ts_arr / 1000.0
        dur_arr = dur_arr / 1000.0
    base = as_float(meta.get("baseTimeNanoseconds"), text=True)
    relative = base is not None and ts_arr.size and float(ts_arr.max()) < 1e15
    if relative:  # relative to the base
        ts_arr = ts_arr + base / 1000.0
    if len(flop_time):  # the same unit and base as the events' times; out-of-range rows go with their events
        times = np.asarray(flop_time) / (1000.0 if trace.time_unit == "ns" else 1.0) + (base / 1000.0 if relative else 0.0)
        fine = times_in_range(times, np.zeros_like(times))
        order = np.argsort(times[fine], kind="stable")
        trace.flops = FlopEvents(times[fine][order], np.asarray(flop_count)[fine][order],
                                 np.zeros(int(fine.sum()), np.int32))
    if len(f64_start):  # as the FLOPs: the events' unit and base
        scale = 1000.0 if trace.time_unit == "ns" else 1.0
        times = np.asarray(f64_start) / scale + (base / 1000.0 if relative else 0.0)
        ends = times + np.asarray(f64_dur) / scale
        fine = times_in_range(times, ends - times)
        order = np.argsort(times[fine], kind="stable")
        trace.float64 = Float64Ops(times[fine][order], ends[fine][order], np.zeros(int(fine.sum()), np.int32))
    if len(memory.time):
        trace.memory = memory.table(1000.0 if trace.time_unit == "ns" else 1.0, base / 1000.0 if relative else 0.0,
                                    tid_ids)
        if memory.bad:
            problems.add(path, None, "memory event without numeric time or bytes, or out of range (dropped)",
                         count=memory.bad)
    keep = times_in_range(ts_arr, dur_arr)
    out_of_range += int((~keep).sum())
    if out_of_range:
        problems.add(path, None, OUT_OF_RANGE, count=out_of_range)
    if not keep.all():  # in µs now: dur = 2**64 ns (584 years) of a kernel whose end Kineto never saw
        ts_arr, dur_arr = ts_arr[keep], dur_arr[keep]
        cat, name, device, nbytes, tids, corrs = (np.asarray(a)[keep] for a in (cat, name, device, nbytes, tids, corrs))
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
    return trace
