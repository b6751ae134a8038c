"""JAX and TensorFlow profiler output (XSpace protobuf, ``<host>.xplane.pb``) as trace columns.

``jax.profiler.trace`` and ``tf.profiler.experimental`` both write ``plugins/profile/<run>/<host>.xplane.pb``:
an XSpace (planes -> lines -> events, names and stats in per-plane metadata tables). This reader maps it
onto the columns of :class:`~reportgen.readers.kineto_trace.TraceColumns`, so the ranks table, top operators,
step statistics, input share, diagnosis and compare work unchanged:

* **host plane** ``/host:CPU``: one line per thread (its ``tid``); events are CPU operators, except
  Python-tracer frames (``$file.py:line fn``, ``$builtins next``), which are Python functions as in
  Kineto's ``python_function``;
* **steps**: an event with an integer ``step_num`` stat (``jax.profiler.StepTraceAnnotation``,
  ``tf.profiler.experimental.Trace(..., step_num=i, _r=1)``) becomes ``ProfilerStep#<step_num>``, the
  trace model's step;
* **input pipeline**: TF's ``IteratorGetNext`` on the training thread, JAX's ``$builtins next`` (the
  Python tracer's call that fetches the next batch) — ``trace_analysis.regions`` counts them as data loading;
* **collectives** on the host: XLA's (``all-reduce.N``, ``all-gather-start``, …) and TensorFlow's
  (``CollectiveReduceV2``, …) by :data:`CPU_COLLECTIVES` (torch's pattern would take XLA's
  ``broadcast_*`` fusions and TF's ``BroadcastTo`` for collectives);
* **device planes** ``/device:GPU:N`` (its ``Stream …`` lines: kernels, memcpy, memset) and
  ``/device:TPU:N`` (its ``XLA Ops`` line); the derived lines (XLA Modules, Steps, …) repeat those
  events and are skipped. A CPU-only run has no device plane: no kernels, no GPU time.

Times: an event starts ``offset_ps`` after its line's ``timestamp_ns``; lines written relative to the
profile's start (``Task Environment``'s ``profile_start_time``, ns since the epoch) are made absolute.
Every event then passes the trace model's one time sanity rule (``trace_model.times_in_range``, as Kineto's
events do): longer than 30 days or starting beyond year 2255 is dropped and counted, and so is an event
starting more than 30 days into its line (the same bound, checked as the events are walked).

Bad input never raises: the file is read whole up to :func:`max_bytes` (a gzip'd ``.xplane.pb.gz`` is
decompressed up to the trace layer's cap); a damaged protobuf keeps every plane, line and event before
the damage; each problem is counted in the :class:`~reportgen.problems.ProblemLog`.
"""

from __future__ import annotations

import os
import re
from array import array
from pathlib import Path

import numpy as np

from reportgen.readers import trace_model as k
from reportgen.environment import SIZES_MB, megabytes
from reportgen.problems import ProblemLog
from reportgen.traces.gunzip import MAGIC, GunzipStream
from reportgen.traces.protowire import LEN, VARINT, WireError, fields, signed64, text
from reportgen.traces.read import text_cap
from reportgen.user_file import UserFileError, open_user_file

MAX_MB = SIZES_MB["REPORTGEN_XSPACE_MAX_MB"]  # the most of one file read (REPORTGEN_XSPACE_MAX_MB): the file is held whole while read


def max_bytes() -> int:
    return megabytes("REPORTGEN_XSPACE_MAX_MB")


_DEVICE = re.compile(r"^/device:(GPU|TPU):(\d+)$")
_DERIVED_FREE = {"GPU": re.compile(r"^Stream\b"), "TPU": re.compile(r"^XLA Ops$")}
_ABSOLUTE_NS = 10**15  # a line timestamp below this is relative to the profile's start
# The trace model's sanity rule for an event timed from its line's start: no line of a job is longer than
# an event may be (2^63-1 ps after a sane line start is still before 2255, yet 107 days into the line).
_MAX_OFFSET_PS = int(k.MAX_DURATION_US * 10**6)
# Collectives by XLA's HLO names (all-reduce.3, all-gather-start) and TensorFlow's ops; torch's pattern would
# take XLA's tensor ops broadcast_* and TF's BroadcastTo for collectives.
CPU_COLLECTIVES = re.compile(r"^(all-reduce|all-gather|reduce-scatter|all-to-all|ragged-all-to-all|collective-permute|"
                             r"collective-broadcast)(-start|-done)?(\.\d+)?$|Collective(Reduce|Gather|Bcast|AllToAll|"
                             r"Permute)|NcclAllReduce")


def _file_label(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".pb", ".xplane"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or path.name


def _load(path: Path, problems: ProblemLog) -> bytes | None:
    """The file's bytes (gunzipped), at most MAX_BYTES; None when unreadable."""
    try:
        with open_user_file(path) as fh:  # the one guard of user files: a FIFO named .xplane.pb never hangs
            head = fh.read(2)
            fh.seek(0)
            if head != MAGIC:
                size = os.fstat(fh.fileno()).st_size
                if size > max_bytes():
                    problems.add(path, None, f"XSpace file of {size >> 20} MiB, over the {max_bytes() >> 20} MiB read "
                                             "(REPORTGEN_XSPACE_MAX_MB): not read")
                    return None
                return fh.read()
            stream = GunzipStream(fh, min(text_cap(os.fstat(fh.fileno()).st_size), max_bytes()))
            data = stream.read()
            if stream.broken:
                problems.add(path, None, "broken gzip stream")
            if stream.capped:
                problems.add(path, None, f"gzip'd XSpace cut at {stream.produced >> 20} MiB (a decompression bomb?): "
                                         "the rest was not read")
            return data
    except UserFileError as err:
        problems.add(path, None, str(err))
        return None
    except OSError as err:
        problems.add(path, None, f"unreadable file ({err.strerror or err})")
        return None


class _Damage(Exception):
    """Where the protobuf stopped making sense (the reader keeps what came before)."""


def _walk(buf):
    """fields(), with a wire error turned into :class:`_Damage` after the good fields."""
    try:
        yield from fields(buf)
    except WireError as err:
        raise _Damage(str(err)) from None


def _map_entry(buf) -> tuple[int | None, memoryview | None]:
    key = value = None
    for number, wire, v in _walk(buf):
        if number == 1 and wire == VARINT:
            key = signed64(v)
        elif number == 2 and wire == LEN:
            value = v
    return key, value


def _name_of(buf) -> str:
    """``name`` (field 2) of an XEventMetadata / XStatMetadata."""
    for number, wire, v in _walk(buf):
        if number == 2 and wire == LEN:
            return text(v)
    return ""


def _int_stat(buf) -> tuple[int | None, int | None]:
    """(metadata id, integer value) of an XStat; the value None unless it is an int64 / uint64."""
    meta = value = None
    for number, wire, v in _walk(buf):
        if number == 1 and wire == VARINT:
            meta = signed64(v)
        elif number in (3, 4) and wire == VARINT:
            value = signed64(v) if number == 4 else v
    return meta, value


class _Columns:
    """The growing columns of one file (compact arrays, as the Kineto reader keeps them)."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.cat, self.name, self.device = array("b"), array("i"), array("i")
        self.start, self.dur, self.nbytes = array("d"), array("d"), array("d")
        self.tid, self.corr = array("q"), array("q")

    def add(self, cat: int, label: str, start_us: float, dur_us: float, device: int, tid: int) -> None:
        idx = self.names.get(label)
        if idx is None:
            idx = self.names[label] = len(self.names)
        self.cat.append(cat)
        self.name.append(idx)
        self.start.append(start_us)
        self.dur.append(dur_us)
        self.device.append(device)
        self.nbytes.append(0.0)
        self.tid.append(tid)
        self.corr.append(-1)


def read_xspace(path: Path, problems: ProblemLog | None = None) -> k.TraceColumns:
    """Read one ``.xplane.pb`` (or ``.xplane.pb.gz``) into trace columns; never raises on bad content."""
    path = Path(path)
    problems = problems if problems is not None else ProblemLog()
    label = _file_label(path)
    data = _load(path, problems)
    if data is None:
        return k.TraceColumns(path, label, None, complete=False)
    cols = _Columns()
    state = {"complete": True, "events": 0, "negative": 0, "late": 0, "start_ns": None, "tids": 0}
    planes = []
    try:
        for number, wire, value in _walk(data):
            if number == 1 and wire == LEN:
                planes.append(value)
    except _Damage as err:
        state["complete"] = False
        problems.add(path, None, f"XSpace protobuf damaged ({err}): the planes before the damage kept")
    if not planes and state["complete"]:
        problems.add(path, None, "not an XSpace protobuf (no planes)")
        state["complete"] = False
    parsed = [_plane(plane, path, problems, state) for plane in planes]
    start_ns = state["start_ns"]
    devices: list[str] = []
    for plane_name, lines, event_names, stat_names in parsed:
        match = _DEVICE.match(plane_name)
        if plane_name == "/host:CPU":
            _host_events(lines, event_names, stat_names, cols, start_ns, state, path, problems)
        elif match:
            devices.append(plane_name)
            _device_events(lines, event_names, match.group(1), int(match.group(2)), cols, start_ns, state, path,
                           problems)
    if state["negative"]:
        problems.add(path, None, "negative duration (dropped)", count=state["negative"])
    trace = k.TraceColumns(path=path, label=label, rank=None, devices=devices, cpu_collectives=CPU_COLLECTIVES)
    trace.events_in_file, trace.complete = state["events"], state["complete"]
    del data, planes, parsed  # the file's bytes go before the columns are sorted
    start = np.frombuffer(cols.start, dtype=np.float64)
    order = np.argsort(start, kind="stable")
    keep = k.times_in_range(start, np.frombuffer(cols.dur, dtype=np.float64))
    dropped = state["late"] + int(keep.size - np.count_nonzero(keep))
    if dropped:  # the trace model's one sanity rule, as for Kineto: dropped and counted
        problems.add(path, None, k.OUT_OF_RANGE, count=dropped)
        order = order[keep[order]]
    del start, keep
    trace.names = list(cols.names)
    for attr, column, dtype in (("cat", "cat", np.int8), ("name", "name", np.int32), ("start_us", "start", np.float64),
                                ("dur_us", "dur", np.float64), ("device", "device", np.int32),
                                ("nbytes", "nbytes", np.float64), ("tid", "tid", np.int64), ("corr", "corr", np.int64)):
        # a zero-copy view of the growing array, sorted into its own copy; the array is freed at once
        setattr(trace, attr, np.frombuffer(getattr(cols, column), dtype=dtype)[order] if len(order) else
                np.zeros(0, dtype))
        setattr(cols, column, None)
    if not trace.start_us.size:
        problems.add(path, None, "no complete events in the trace")
    return trace


def _plane(buf, path: Path, problems: ProblemLog, state: dict):
    """(name, lines, event names by id, stat names by id) of one XPlane; the profile's start from the
    ``Task Environment`` plane goes into ``state``."""
    name, lines, event_names, stat_names, stats = "", [], {}, {}, []
    try:
        for number, wire, value in _walk(buf):
            if wire != LEN:
                continue
            if number == 2:
                name = text(value)
            elif number == 3:
                lines.append(value)
            elif number in (4, 5):
                key, meta = _map_entry(value)
                if key is not None and meta is not None:
                    (event_names if number == 4 else stat_names)[key] = _name_of(meta)
            elif number == 6:
                stats.append(value)
    except _Damage as err:
        state["complete"] = False
        problems.add(path, None, f"XSpace plane {name!r} damaged ({err}): what came before kept")
    if name == "Task Environment":
        for stat in stats:
            try:
                meta, value = _int_stat(stat)
            except _Damage:
                continue
            if stat_names.get(meta) == "profile_start_time" and value and value > 0:
                state["start_ns"] = value
    return name, lines, event_names, stat_names


def _line_head(buf) -> tuple[str, int]:
    """(name, timestamp ns) of one XLine (damage is reported when its events are walked)."""
    name, ts_ns = "", 0
    try:
        for number, wire, value in _walk(buf):
            if number == 2 and wire == LEN:
                name = text(value)
            elif number == 3 and wire == VARINT:
                ts_ns = signed64(value)
    except _Damage:
        pass
    return name, ts_ns


def _line_events(buf):
    """Each XEvent of one XLine as (metadata id, offset ps, duration ps, stats), one at a time (a line
    may hold millions: none is kept here); raises :class:`_Damage` after the good ones."""
    for number, wire, value in _walk(buf):
        if number != 4 or wire != LEN:
            continue
        meta = offset = duration = 0
        stats = []
        for n, w, v in _walk(value):
            if w == VARINT and n == 1:
                meta = signed64(v)
            elif w == VARINT and n == 2:
                offset = signed64(v)
            elif w == VARINT and n == 3:
                duration = signed64(v)
            elif w == LEN and n == 4:
                stats.append(v)
        yield meta, offset, duration, stats


def _each_event(buf, path: Path, problems: ProblemLog, state: dict):
    """:func:`_line_events` with damage counted (the events before it kept) and events counted."""
    try:
        for event in _line_events(buf):
            state["events"] += 1
            yield event
    except _Damage as err:
        state["complete"] = False
        problems.add(path, None, f"XSpace line {_line_head(buf)[0]!r} damaged ({err}): the events before the "
                                 "damage kept")


def _base_us(ts_ns: int, start_ns: int | None) -> float:
    if start_ns is not None and abs(ts_ns) < _ABSOLUTE_NS:
        return (start_ns + ts_ns) / 1000.0
    return ts_ns / 1000.0


def _host_events(lines, event_names, stat_names, cols, start_ns, state, path, problems) -> None:
    step_stat = {i for i, n in stat_names.items() if n == "step_num"}
    for buf in lines:
        _, ts_ns = _line_head(buf)
        tid = state["tids"]
        state["tids"] += 1
        base = _base_us(ts_ns, start_ns)
        for meta, offset, duration, stats in _each_event(buf, path, problems, state):
            if duration < 0:
                state["negative"] += 1
                continue
            if not -_MAX_OFFSET_PS <= offset <= _MAX_OFFSET_PS:
                state["late"] += 1
                continue
            label = event_names.get(meta, f"<event {meta}>")
            cat = k.PYTHON if label.startswith("$") else k.CPU_OP
            for stat in stats if step_stat else ():
                try:
                    stat_id, value = _int_stat(stat)
                except _Damage:
                    continue
                if stat_id in step_stat and value is not None:
                    label, cat = f"ProfilerStep#{value}", k.USER_ANNOTATION
                    break
            cols.add(cat, label, base + offset / 1e6, duration / 1e6, -1, tid)


def _device_events(lines, event_names, kind, device, cols, start_ns, state, path, problems) -> None:
    own = _DERIVED_FREE[kind]
    for buf in lines:
        name, ts_ns = _line_head(buf)
        tid = state["tids"]
        state["tids"] += 1
        if not own.search(name):
            continue
        base = _base_us(ts_ns, start_ns)
        for meta, offset, duration, _ in _each_event(buf, path, problems, state):
            if duration < 0:
                state["negative"] += 1
                continue
            if not -_MAX_OFFSET_PS <= offset <= _MAX_OFFSET_PS:
                state["late"] += 1
                continue
            label = event_names.get(meta, f"<event {meta}>")
            lower = label.lower()
            cat = k.MEMCPY if "memcpy" in lower else k.MEMSET if "memset" in lower else k.KERNEL
            cols.add(cat, label, base + offset / 1e6, duration / 1e6, device, tid)
