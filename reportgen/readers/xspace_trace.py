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
* **device planes** ``/device:GPU:N`` (its ``Stream …`` lines: kernels, memcpy (CUDA's ``Memcpy…``, ROCm's
  ``CopyDeviceToDevice`` …), memset) and
  ``/device:TPU:N`` (its ``XLA Ops`` line, each op named by its HLO text: XLA's asynchronous ``copy-start`` /
  ``copy-done`` are copies, by their opcode, :mod:`reportgen.readers.hlo_names`); the derived lines (XLA Modules, Steps, …) repeat those
  events and are skipped. A CPU-only run has no device plane: no kernels, no GPU time.

Times: an event starts ``offset_ps`` after its line's ``timestamp_ns``; lines written relative to the
profile's start (``Task Environment``'s ``profile_start_time``, ns since the epoch) are made absolute.
Every event then passes the trace model's one time sanity rule (``trace_model.times_in_range``, as Kineto's
events do): longer than 30 days or starting beyond year 2255 is dropped and counted, and so is an event
starting more than 30 days into its line (the same bound, checked as the events are walked).

Bad input never raises: the file is read whole up to :func:`max_bytes` (a gzip'd ``.xplane.pb.gz`` is
decompressed up to the trace layer's cap); a damaged protobuf keeps every plane, line and event before
the damage; each problem is counted in the :class:`~reportgen.problems.ProblemLog`.

Speed: the events of all a plane's lines and their step stats are decoded with numpy, many at once
(:mod:`reportgen.traces.protovec`, 65,536 events at a time, a fast path for the usual layout of fields 1, 2, 3
then stats; only the stats that may hold a ``step_num`` id are handed out); planes, metadata and line headers,
which are few, field by field (:mod:`reportgen.traces.protowire`), which also names any damage found.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from reportgen.readers import trace_model as k
from reportgen.readers.hlo_names import is_hlo_copy
from reportgen.environment import SIZES_MB, megabytes
from reportgen.problems import ProblemLog
from reportgen.traces.gunzip import MAGIC, GunzipStream
from reportgen.traces.protovec import PAD, Buffer, repeated, scan
from reportgen.traces.protovec import events as decode
from reportgen.traces.protowire import LEN, VARINT, WireError, field_at, fields, signed64, text
from reportgen.traces.read import text_cap
from reportgen.user_file import UserFileError, open_user_file

MAX_MB = SIZES_MB["REPORTGEN_XSPACE_MAX_MB"]  # the most of one file read (REPORTGEN_XSPACE_MAX_MB): the file is held whole while read


def max_bytes() -> int:
    return megabytes("REPORTGEN_XSPACE_MAX_MB")


_DEVICE = re.compile(r"^/device:(GPU|TPU):(\d+)$")
# a device's copies: CUDA's (MemcpyH2D, MemcpyD2H, …) and ROCm's (CopyDeviceToDevice, on a ``Stream #N(MemcpyOther)``)
_COPY = re.compile(r"memcpy|^Copy(Host|Device)To(Host|Device)$", re.I)
_DERIVED_FREE = {"GPU": re.compile(r"^Stream\b"), "TPU": re.compile(r"^XLA Ops$")}
CHUNK = 1 << 16  # events decoded at once (the decoder's arrays take ~200 bytes an event while they live)
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


def _load(path: Path, problems: ProblemLog) -> Buffer | None:
    """The file's bytes (gunzipped), at most MAX_BYTES, padded for the vectorised decoder; None when unreadable."""
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
                return _read_padded(fh, size)
            stream = GunzipStream(fh, min(text_cap(os.fstat(fh.fileno()).st_size), max_bytes()))
            data = stream.read()
            if stream.broken:
                problems.add(path, None, "broken gzip stream")
            if stream.capped:
                problems.add(path, None, f"gzip'd XSpace cut at {stream.produced >> 20} MiB (a decompression bomb?): "
                                         "the rest was not read")
            return Buffer.of(data)
    except UserFileError as err:
        problems.add(path, None, str(err))
        return None
    except OSError as err:
        problems.add(path, None, f"unreadable file ({err.strerror or err})")
        return None


def _read_padded(fh, size: int) -> Buffer:
    """A plain file read straight into the padded buffer (no second copy of its bytes); a file that grew
    since its size was taken is read to the size taken, one that shrank to its end."""
    padded = np.zeros(size + PAD, np.uint8)
    into, got = memoryview(padded), 0
    while got < size:
        n = fh.readinto(into[got:size])
        if not n:
            break
        got += n
    return Buffer(padded, got)


class _Damage(Exception):
    """Where the protobuf stopped making sense (the reader keeps what came before)."""


def _walk(buf):
    """fields(), with a wire error turned into :class:`_Damage` after the good fields."""
    try:
        yield from fields(buf)
    except WireError as err:
        raise _Damage(str(err)) from None


def _spans(view: memoryview, start: int, end: int, number: int):
    """(start, end) of each length-delimited field ``number`` of the message ``start:end`` of ``view``;
    raises :class:`_Damage` after the good ones."""
    pos = start
    try:
        while pos < end:
            got, wire, value, pos = field_at(view, pos, end)
            if got == number and wire == LEN:
                yield pos - len(value), pos
    except WireError as err:
        raise _Damage(str(err)) from None


def _map_entry(buf: memoryview) -> tuple[int | None, memoryview | None]:
    """(key, value) of a metadata map entry; walked by ``field_at`` itself (hundreds an XPlane: no generators)."""
    key = value = None
    pos, end = 0, len(buf)
    try:
        while pos < end:
            number, wire, v, pos = field_at(buf, pos, end)
            if number == 1 and wire == VARINT and isinstance(v, int):
                key = signed64(v)
            elif number == 2 and wire == LEN and isinstance(v, memoryview):
                value = v
    except WireError as err:
        raise _Damage(str(err)) from None
    return key, value


def _name_of(buf: memoryview) -> str:
    """``name`` (field 2, the first) of an XEventMetadata / XStatMetadata."""
    pos, end = 0, len(buf)
    try:
        while pos < end:
            number, wire, v, pos = field_at(buf, pos, end)
            if number == 2 and wire == LEN:
                return text(v)
    except WireError as err:
        raise _Damage(str(err)) from None
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
    """The columns of one file, as numpy parts (one per chunk of a line), and the names in the order first met."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.parts: list[list[np.ndarray]] = [[] for _ in range(6)]  # cat, name, start, dur, device, tid

    def label_ids(self, labels: list[str]) -> np.ndarray:
        """The name index of each label, new ones numbered in the order given."""
        ids = np.empty(len(labels), np.int32)
        for i, label in enumerate(labels):
            idx = self.names.get(label)
            if idx is None:
                idx = self.names[label] = len(self.names)
            ids[i] = idx
        return ids

    def add(self, *columns: np.ndarray) -> None:
        """One block of every column (cat, name, start, dur, device, tid)."""
        if columns[1].size:
            for part, column in zip(self.parts, columns):
                part.append(column)

    def column(self, i: int, dtype, order: np.ndarray | None = None) -> np.ndarray:
        """Column ``i`` whole (in ``order``); its blocks are freed."""
        whole = np.concatenate(self.parts[i]) if self.parts[i] else np.zeros(0, dtype)
        self.parts[i] = []
        return whole if order is None else whole[order]


def read_xspace(path: Path, problems: ProblemLog | None = None) -> k.TraceColumns:
    """Read one ``.xplane.pb`` (or ``.xplane.pb.gz``) into trace columns; never raises on bad content."""
    path = Path(path)
    problems = problems if problems is not None else ProblemLog()
    label = _file_label(path)
    buf = _load(path, problems)
    if buf is None:
        return k.TraceColumns(path, label, None, complete=False)
    cols = _Columns()
    state = {"complete": True, "events": 0, "negative": 0, "late": 0, "start_ns": None, "tids": 0}
    planes = []
    try:
        for span in _spans(buf.view, 0, buf.size, 1):
            planes.append(span)
    except _Damage as err:
        state["complete"] = False
        problems.add(path, None, f"XSpace protobuf damaged ({err}): the planes before the damage kept")
    if not planes and state["complete"]:
        problems.add(path, None, "not an XSpace protobuf (no planes)")
        state["complete"] = False
    parsed = [_plane(buf.view, start, end, path, problems, state) for start, end in planes]
    start_ns = state["start_ns"]
    devices: list[str] = []
    for plane_name, lines, event_names, stat_names in parsed:
        match = _DEVICE.match(plane_name)
        if plane_name == "/host:CPU":
            step_stat = {i for i, n in stat_names.items() if n == "step_num"}
            _lines(buf, lines, _Kind(event_names, step_stat, None, None), cols, start_ns, state, path, problems)
        elif match:
            devices.append(plane_name)
            own, device = _DERIVED_FREE[match.group(1)], int(match.group(2))
            _lines(buf, lines, _Kind(event_names, set(), own, device), cols, start_ns, state, path, problems)
    if state["negative"]:
        problems.add(path, None, "negative duration (dropped)", count=state["negative"])
    trace = k.TraceColumns(path=path, label=label, rank=None, devices=devices, cpu_collectives=CPU_COLLECTIVES)
    trace.events_in_file, trace.complete = state["events"], state["complete"]
    del buf, planes, parsed  # the file's bytes go before the columns are sorted
    start = np.concatenate(cols.parts[2]) if cols.parts[2] else np.zeros(0)
    order = np.argsort(start, kind="stable")
    keep = k.times_in_range(start, np.concatenate(cols.parts[3]) if cols.parts[3] else np.zeros(0))
    dropped = state["late"] + int(keep.size - np.count_nonzero(keep))
    if dropped:  # the trace model's one sanity rule, as for Kineto: dropped and counted
        problems.add(path, None, k.OUT_OF_RANGE, count=dropped)
        order = order[keep[order]]
    del start, keep
    trace.names = list(cols.names)
    for attr, i, dtype in (("cat", 0, np.int8), ("name", 1, np.int32), ("start_us", 2, np.float64),
                           ("dur_us", 3, np.float64), ("device", 4, np.int32), ("tid", 5, np.int64)):
        setattr(trace, attr, cols.column(i, dtype, order))  # each sorted into its own copy, its blocks freed
    size = int(order.size)
    del order
    trace.nbytes, trace.corr = np.zeros(size, np.float64), np.full(size, -1, np.int64)
    if not trace.start_us.size:
        problems.add(path, None, "no complete events in the trace")
    return trace


def _plane(view: memoryview, start: int, end: int, path: Path, problems: ProblemLog, state: dict):
    """(name, lines as (start, end), event names by id, stat names by id) of one XPlane; the profile's start
    from the ``Task Environment`` plane goes into ``state``."""
    name, lines, event_names, stat_names, stats = "", [], {}, {}, []
    pos = start
    try:
        while pos < end:
            try:
                number, wire, value, pos = field_at(view, pos, end)
            except WireError as err:
                raise _Damage(str(err)) from None
            if wire != LEN:
                continue
            if number == 2:
                name = text(value)
            elif number == 3:
                lines.append((pos - len(value), pos))
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


class _Kind:
    """How a plane's lines are read: its event names, its ``step_num`` stat ids (host), and for a device
    plane the pattern of the lines that are its own (the others repeat their events) and its number."""

    def __init__(self, event_names: dict, step_stat: set, own, device: int | None) -> None:
        self.event_names, self.step_stat, self.own, self.device = event_names, step_stat, own, device
        self.step_ids = tuple(sorted(step_stat)) or None  # the stats the decoder hands out: those that may be steps


def _lines(buf: Buffer, lines: list[tuple[int, int]], kind: _Kind, cols: _Columns, start_ns, state: dict,
           path: Path, problems: ProblemLog) -> None:
    """A plane's XLines' events into the columns: every event of a line before its first damage, those the
    time rules drop counted. The events of all the plane's lines are decoded together, :data:`CHUNK` at a
    time: a line of a few hundred events costs no round of numpy calls of its own."""
    names, tids, bases, found = [], [], [], []
    for start, end in lines:
        line = repeated(buf, start, end, 4)
        name, ts_ns = "", 0
        for number, wire, value in line.others:
            if number == 2 and wire == LEN:
                name = text(value)
            elif number == 3 and wire == VARINT:
                ts_ns = signed64(int(value))
        tid = state["tids"]
        state["tids"] += 1
        if kind.own is None or kind.own.search(name):
            names.append(name)
            tids.append(tid)
            bases.append(_base_us(ts_ns, start_ns))
            found.append(line)
    if not found:
        return
    errors = [line.error for line in found]
    starts = np.concatenate([line.starts for line in found])
    ends = np.concatenate([line.ends for line in found])
    bounds = np.cumsum([line.starts.size for line in found])  # where each line's events end
    del found  # each line's own arrays: the concatenation holds them
    tid_of, base_of = np.array(tids, np.int64), np.array(bases, np.float64)
    broken = np.zeros(len(errors), bool)  # a damaged event met: the rest of its line is not read
    device = -1 if kind.device is None else kind.device
    for first in range(0, starts.size, CHUNK):  # a chunk at a time: the decoder's arrays stay small
        which = np.searchsorted(bounds, np.arange(first, min(first + CHUNK, starts.size)), side="right")
        events = decode(buf, starts[first:first + CHUNK], ends[first:first + CHUNK], kind.step_ids)
        valid = ~broken[which]
        bad = np.flatnonzero(events.damaged & valid)
        if bad.size:  # a line's first damaged event ends it, as a walk one event at a time would stop there
            hit, at = np.unique(which[bad], return_index=True)
            cut = np.full(len(errors), which.size, np.int64)
            cut[hit] = bad[at]
            valid &= np.arange(which.size) < cut[which]
            broken[hit] = True
            for i, e in zip(hit.tolist(), bad[at].tolist()):
                errors[i] = _error_of(buf.view[int(starts[first + e]):int(ends[first + e])])
        meta, offset, dur = (v.view(np.int64) for v in (events.meta, events.offset, events.duration))
        negative = dur < 0
        late = ~negative & ((offset < -_MAX_OFFSET_PS) | (offset > _MAX_OFFSET_PS))
        negative &= valid
        late &= valid
        state["events"] += int(np.count_nonzero(valid))
        state["negative"] += int(np.count_nonzero(negative))
        state["late"] += int(np.count_nonzero(late))
        drop = negative | late | ~valid
        if drop.any():
            kept = np.flatnonzero(~drop)
            meta, offset, dur, which = meta[kept], offset[kept], dur[kept], which[kept]
        else:  # the usual chunk: every event kept, no copies
            kept = np.arange(drop.size)
        steps = _steps(buf, events, kept, kind.step_stat) if kind.step_stat else {}
        cat, name_ids = _labels(meta, steps, kind, cols)
        if which.size and which[0] == which[-1]:  # one line: its base and tid
            base, tid = base_of[which[0]], np.full(which.size, tid_of[which[0]], np.int64)
        else:
            base, tid = base_of[which], tid_of[which]
        cols.add(cat, name_ids, base + offset / 1e6, dur / 1e6, np.full(kept.size, device, np.int32), tid)
    for name, error in zip(names, errors):
        if error is not None:
            state["complete"] = False
            problems.add(path, None, f"XSpace line {name!r} damaged ({error}): the events before the damage kept")


def _error_of(event: memoryview) -> str:
    """What protowire says is wrong with a message the vectorised scan found damaged."""
    try:
        for _ in fields(event):
            pass
    except WireError as err:
        return str(err)
    return "damaged"  # not reached: both apply the same rules


def _steps(buf: Buffer, events, kept: np.ndarray, step_stat: set) -> dict[int, str]:
    """``ProfilerStep#<n>`` by position in ``kept`` (ascending) for each kept event with an integer ``step_num``
    stat (its first such stat that is whole)."""
    msg, begin, finish = events.records
    if not msg.size:
        return {}
    wanted = np.zeros(events.damaged.size, bool)
    wanted[kept] = True
    take = wanted[msg]
    msg, begin, finish = msg[take], begin[take], finish[take]
    if not msg.size:
        return {}
    stats = scan(buf, begin, finish, (1, 3, 4))
    signed = stats.values[4].view(np.int64)
    has_value = (stats.rounds[3] >= 0) | (stats.rounds[4] >= 0)
    is_step = (stats.rounds[1] >= 0) & np.isin(stats.values[1].view(np.int64), np.array(sorted(step_stat), np.int64))
    good = np.flatnonzero(~stats.damaged & has_value & is_step)
    if not good.size:
        return {}
    firsts = good[np.unique(msg[good], return_index=True)[1]]
    at = np.searchsorted(kept, msg[firsts]).tolist()
    out = {}
    for s, position in zip(firsts.tolist(), at):
        value = int(signed[s]) if stats.rounds[4][s] > stats.rounds[3][s] else int(stats.values[3][s])
        out[position] = f"ProfilerStep#{value}"
    return out


def _labels(meta: np.ndarray, steps: dict[int, str], kind: _Kind, cols: _Columns) -> tuple[np.ndarray, np.ndarray]:
    """(category, name index) of each event: named by its metadata, or a step; names numbered in the order the
    events first show them."""
    ids, first, inverse = _distinct(meta)
    cats, labels = np.zeros(ids.size + len(steps), np.int8), []
    for i, meta_id in enumerate(ids.tolist()):
        label = kind.event_names.get(meta_id, f"<event {meta_id}>")
        labels.append(label)
        cats[i] = _category(label, kind)
    code = inverse.astype(np.int64)
    firsts = first.tolist()
    for j, (position, label) in enumerate(steps.items()):  # a step's own code, after the metadata's
        code[position] = ids.size + j
        labels.append(label)
        cats[ids.size + j] = k.USER_ANNOTATION
        firsts.append(position)
    if steps:  # the first sight of a metadata id may now be a step: count only the events it names
        plain = np.ones(meta.size, bool)
        plain[list(steps)] = False
        seen = np.full(ids.size, meta.size, np.int64)
        np.minimum.at(seen, inverse[plain], np.flatnonzero(plain))
        firsts[:ids.size] = seen.tolist()
    order = sorted((i for i in range(len(labels)) if firsts[i] < meta.size), key=firsts.__getitem__)  # named ones
    numbers = np.zeros(len(labels), np.int32)
    numbers[order] = cols.label_ids([labels[i] for i in order])
    return cats[code], numbers[code]


def _distinct(meta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(meta, return_index=True, return_inverse=True)``; for the usual small non-negative metadata ids
    by a table indexed by id (no sort: 20x faster on a chunk)."""
    if meta.size and 0 <= int(meta.min()) and int(meta.max()) < 4 * meta.size + 65536:
        top = int(meta.max()) + 1
        first = np.full(top, meta.size, np.int64)
        np.minimum.at(first, meta, np.arange(meta.size))
        ids = np.flatnonzero(first < meta.size)
        code = np.zeros(top, np.int64)
        code[ids] = np.arange(ids.size)
        return ids, first[ids], code[meta]
    ids, first, inverse = np.unique(meta, return_index=True, return_inverse=True)
    return ids, first, inverse.reshape(-1)


def _category(label: str, kind: _Kind) -> int:
    if kind.device is None:
        return k.PYTHON if label.startswith("$") else k.CPU_OP
    if _COPY.search(label) or is_hlo_copy(label):  # a TPU's XLA copy-start / copy-done: a copy, no kernel
        return k.MEMCPY
    return k.MEMSET if "memset" in label.lower() else k.KERNEL


def _base_us(ts_ns: int, start_ns: int | None) -> float:
    if start_ns is not None and abs(ts_ns) < _ABSOLUTE_NS:
        return (start_ns + ts_ns) / 1000.0
    return ts_ns / 1000.0
