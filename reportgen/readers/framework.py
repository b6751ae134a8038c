"""Framework traces (spec A.3-A.6) -> one columnar event table (pandas, categorical text columns).

Trace files are Chrome-trace JSON arrays (smdebug writer, Horovod re-emission) or gzip'd TF profiler
traces. The trace layer (``reportgen.traces``) opens, decompresses, parses or streams and salvages
them; this module only maps their events to columns: a whole file's events are appended straight into
column lists (column-wise when the file has the common shape), a streamed file's in chunks of
``STREAM_EVENTS``, with the same result; the table is built once at the end.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.readers.framework_decode import (ARGS_FIELDS, EVENT_FIELDS, NO_ARGS, as_dict, column, decode_events,
                                                struct_columns)
from reportgen.readers.framework_files import file_key_us, list_framework_files  # noqa: F401  (their home before)
from reportgen.garbage_collector import paused
from reportgen.readers.heap import trim_heap
from reportgen.problems import DataProblem, ProblemLog
from reportgen.traces.numbers import FLOAT_MAX, hashable, is_number
from reportgen.traces.read import TraceRead
from reportgen.traces.spans import OpenSpans

FILE_TYPES = (
    ("pythontimeline.json", "PythontimelineMetrics"),
    ("model_timeline.json", "DetailedframeworkMetrics"),
    ("smdataparallel_timeline.json", "SMDataParallelMetrics"),
    ("horovod_timeline.json", ""),
    ("trace.json.gz", "TFProfilerMetrics"),
)
_NODE_RE = re.compile(r"(.*)-(algo.*)")
_METADATA_RE = re.compile(r"^(.+)_(\d+)_(\d+)\.metadata$")

COLUMNS = (
    "start_us", "end_us", "dur_us", "name", "phase", "node_id", "file_type", "step_num",
    "pid", "tid", "arg_pid", "num_workers", "pin_memory",
)
CATEGORICAL = ("name", "phase", "node_id", "file_type", "step_num")


def file_type_of(path: Path) -> str | None:
    for suffix, ftype in FILE_TYPES:
        if path.name.endswith(suffix):
            return ftype
    return None


def rewrite_node_id(raw: str) -> str:
    """``27-algo-1`` -> ``algo-1-27`` (framework node ids are per process, spec A.3)."""
    m = _NODE_RE.match(raw)
    return f"{m.group(2)}-{m.group(1)}" if m else raw


_TIME_LIMIT = 2**61  # µs; a base time or a column-wise time beyond it goes to the checked general path
# Event times beyond this (µs; ~146,000 years) cannot be held as int64 µs with their duration.
MAX_ABS_US = 2**62


def _base_time(x) -> bool:
    return is_number(x) and -_TIME_LIMIT < x < _TIME_LIMIT


_NUM_TYPES = {int, float}
_NUMERIC = {"start_us": np.int64, "end_us": np.int64, "dur_us": np.int64, "pid": np.int64, "tid": np.int64,
            "arg_pid": np.int64, "num_workers": np.float64, "pin_memory": np.int8}


def _numeric_array(vals, dtype) -> np.ndarray:
    try:
        return np.asarray(vals, dtype=dtype)
    except OverflowError:  # a pid/tid beyond int64 in the data (times are range-checked before): -1
        info = np.iinfo(dtype)
        return np.asarray([v if info.min <= v <= info.max else -1 for v in vals], dtype=dtype)


@dataclass
class FileEvents:
    """One trace file read on its own (by a Dask worker): its event columns in file order (numbers as
    numpy arrays, text as int32 codes into ``strings``, the file's own distinct values in the order
    it met them) and the problems its reading recorded. ``table_of_files`` merges them into the very
    table ``read_framework`` builds."""

    columns: dict  # column -> np.ndarray (COLUMNS)
    strings: dict  # text column -> list[str] (CATEGORICAL)
    problem_counts: dict
    problem_items: list  # (file, line, reason)
    stats: object = None  # cluster.task_stats.TaskStats, when read by a Dask task

    @property
    def n_events(self) -> int:
        return len(self.columns["start_us"])


class _Same:
    """A text column holding one value ``n`` times (node id and file type of one file)."""

    __slots__ = ("value", "n")

    def __init__(self, value: str, n: int):
        self.value, self.n = value, n


class _PhaseOfPid:
    """The phase column of a column-wise file whose pids are all ints: each event's phase is its pid's
    (``phase_of_pid``, "Unknown" when undeclared), so ``flush`` encodes it from the pid column's codes,
    one lookup per distinct pid instead of a string per event hashed again (medium profile: 332,000
    events, a few dozen pids)."""

    __slots__ = ("phase_of_pid",)

    def __init__(self, phase_of_pid: dict):
        self.phase_of_pid = phase_of_pid


_COMPACT_CHUNKS = 256  # ``_Columns.add``: chunks per column before they are joined into one


class _Columns:
    """Column lists for the file being read; ``flush()`` turns them into numpy chunks (numbers) and
    int32 codes into per-column string dictionaries (text), so memory holds ~40 bytes per event
    instead of a dozen Python objects, whatever the number of files."""

    def __init__(self):
        self.cols = {c: [] for c in COLUMNS}
        self.chunks = {c: [] for c in COLUMNS}
        self.dicts = {c: {} for c in CATEGORICAL}

    def flush(self) -> None:
        if not len(self.cols["start_us"]):
            # A column-wise file without events leaves empty arrays behind: reset them, the next
            # file may append event by event.
            self.cols = {c: [] for c in COLUMNS}
            return
        phase = self.cols["phase"]
        if isinstance(phase, _PhaseOfPid):
            self.cols["phase"] = self._phase_codes(phase.phase_of_pid)
        for c in COLUMNS:
            vals = self.cols[c]
            if isinstance(vals, np.ndarray) and vals.dtype == np.int32 and c in CATEGORICAL:
                self.chunks[c].append(vals)  # already coded (_phase_codes)
            elif c in _NUMERIC:
                self.chunks[c].append(_numeric_array(vals, _NUMERIC[c]))
            elif isinstance(vals, _Same):
                d = self.dicts[c]
                self.chunks[c].append(np.full(vals.n, d.setdefault(vals.value, len(d)), dtype=np.int32))
            else:
                d = self.dicts[c]
                codes, uniq = pd.factorize(np.asarray(vals, dtype=object))  # all str, never missing
                glob = np.array([d.setdefault(u, len(d)) for u in uniq], dtype=np.int32)
                self.chunks[c].append(glob[codes])
            self.cols[c] = []

    def _phase_codes(self, phase_of_pid: dict):
        """The phase column's codes from the pid column (all ints): the pids factorised, each distinct
        pid's phase looked up once, in the order the pids first appear, which is the order the phases
        first appear in, so the dictionary and codes are the ones the phase strings would give. A pid
        beyond int64: the phase strings, as before."""
        pids = self.cols["pid"]
        try:
            arr = np.asarray(pids, dtype=np.int64)
        except OverflowError:
            return [phase_of_pid.get(x, "Unknown") for x in pids]
        self.cols["pid"] = arr  # the pid column, converted once
        codes, upids = pd.factorize(arr)
        d = self.dicts["phase"]
        glob = np.array([d.setdefault(phase_of_pid.get(int(u), "Unknown"), len(d)) for u in upids], dtype=np.int32)
        return glob[codes] if len(codes) else np.zeros(0, np.int32)

    def table(self) -> pd.DataFrame:
        """The event table sorted by start time (stable). The sort order is computed once from the
        start column and each column is concatenated, permuted and its chunks dropped in turn, so
        the peak is about two copies of the events instead of four (concatenate, frame, sort,
        reset_index)."""
        self.flush()
        ch, dicts = self.chunks, self.dicts
        start = np.concatenate(ch["start_us"]) if ch["start_us"] else np.zeros(0, np.int64)
        order = np.argsort(start, kind="stable")
        del start
        cols = {}
        for c in COLUMNS:
            arr = np.concatenate(ch[c]) if ch[c] else np.zeros(0, _NUMERIC.get(c, np.int32))
            ch[c] = []
            trim_heap()  # the per-file chunks live on the heap: hand their pages back as they go
            arr = arr[order]
            if c in CATEGORICAL:
                # Sorted categories, exactly what pd.Categorical(list of str) builds.
                cats = np.array(list(dicts[c]), dtype=object)
                corder = np.argsort(cats.astype(str), kind="stable") if len(cats) else np.zeros(0, np.int64)
                remap = np.empty(len(cats), np.int32)
                remap[corder] = np.arange(len(cats), dtype=np.int32)
                arr = pd.Categorical.from_codes(remap[arr] if len(arr) else arr, categories=list(cats[corder]))
            cols[c] = arr
        del order
        # copy=False: the columns are fresh arrays; copying them into pandas blocks would double the peak.
        return pd.DataFrame({c: cols.pop(c) for c in COLUMNS}, copy=False)

    def add(self, fe: "FileEvents") -> None:
        """Append one file's columns (read elsewhere, e.g. on a Dask worker): its text codes are
        mapped onto this table's dictionaries in the order the file met them, as if read here."""
        self.flush()
        if not len(fe.columns["start_us"]):
            return
        for c in COLUMNS:
            arr = fe.columns[c]
            if c in CATEGORICAL:
                d = self.dicts[c]
                glob = np.array([d.setdefault(u, len(d)) for u in fe.strings[c]], dtype=np.int32)
                arr = glob[arr] if len(glob) else arr
            self.chunks[c].append(arr)
            if len(self.chunks[c]) >= _COMPACT_CHUNKS:
                # many small files: one array per column instead of thousands of small ones
                self.chunks[c] = [np.concatenate(self.chunks[c])]

    def append(self, start, end, name, phase, node, ftype, step, pid, tid, args):
        c = self.cols
        c["start_us"].append(start)
        c["end_us"].append(end)
        c["dur_us"].append(end - start)
        c["name"].append(name)
        c["phase"].append(phase)
        c["node_id"].append(node)
        c["file_type"].append(ftype)
        c["step_num"].append(step)
        c["pid"].append(pid)
        c["tid"].append(tid)
        if isinstance(args, dict):
            ap = args.get("pid")
            nw = args.get("num_workers")
            pm = args.get("pin_memory")
        else:
            ap = nw = pm = None
        c["arg_pid"].append(int(ap) if is_number(ap) else -1)
        c["num_workers"].append(float(nw) if is_number(nw) else np.nan)
        c["pin_memory"].append(-1 if pm is None else int(pm in (True, "True", "true", 1)))


def _int(x, default=0) -> int:
    if is_number(x):
        return int(x)
    if isinstance(x, str):
        try:
            return int(x)
        except ValueError:
            return default
    return default


# Trace files whose text is above traces.read.stream_bytes() (REPORTGEN_STREAM_TRACE_MB) come as a
# stream of events (traces.read.TraceRead), turned into columns this many at a time.
STREAM_EVENTS = 50_000


class _TraceState:
    """What the event-by-event path carries from one event to the next."""

    def __init__(self, base: int):
        self.base = base
        self.phase_of_pid: dict = {}
        self.spans = OpenSpans()  # B events waiting for their E, per pid



def _last_meta(phs: list) -> int:
    """The place of the last metadata event (-1 when there is none), found from the end in C: the
    metadata events of a file come before or among its first events."""
    try:
        return len(phs) - 1 - phs[::-1].index("M")
    except ValueError:
        return -1


def _metadata_leads(events: list, phs: list) -> bool:
    """Whether every metadata event comes before the events it describes, so that applying it to the
    whole file (the column-wise path) gives what applying it from its place on (the event-by-event
    and the streamed paths) gives. smdebug writes a pid's ``process_name`` just before its first
    event, mid-file: that is fine; a base time, or a pid's name, after events it applies to is not."""
    first_body = next((i for i, ph in enumerate(phs) if ph != "M"), len(phs))
    last_meta = _last_meta(phs)
    seen: set = set()  # pids of the events so far
    for i in range(first_body, last_meta + 1):
        e = events[i]
        if phs[i] != "M":
            seen.add(e.get("pid"))
            continue
        args = e.get("args")
        if e.get("name") == "process_name" and isinstance(args, dict):
            if _base_time(args.get("start_time_since_epoch_in_micros")) or ("name" in args and e.get("pid") in seen):
                return False
    return True


class FrameworkReader:
    def __init__(self, root: Path, problems: ProblemLog):
        self.root = root
        self.problems = problems
        self.out = _Columns()

    def rel(self, p: Path) -> str:
        try:
            return str(p.relative_to(self.root))
        except ValueError:
            return str(p)

    def _tf_base(self, path: Path) -> tuple[int, str | None]:
        """Base time (µs) from the ``<node>_<start>_<end>.metadata`` marker four levels up."""
        try:
            step_dir = path.parents[3]
        except IndexError:
            return 0, None
        for p in sorted(step_dir.glob("*.metadata")):
            m = _METADATA_RE.match(p.name)
            if m:
                return int(m.group(2)), m.group(1)
        self.problems.add(self.rel(path), None, "TF trace without .metadata file (base time 0)")
        return 0, None

    # -- events ----------------------------------------------------------------------------------
    def read_file(self, path: Path) -> None:
        try:
            self._read_file(path)
        finally:
            self.out.flush()

    def _read_file(self, path: Path) -> None:
        ftype = file_type_of(path)
        if ftype is None:
            return
        rel = self.rel(path)
        is_tf = ftype == "TFProfilerMetrics"
        if is_tf:
            base, _ = self._tf_base(path)
            node = path.name.split(".")[0]
        else:
            base = 0
            node = rewrite_node_id(path.name.split("_")[1])
        # a file of the common shape read whole goes straight to columns (``_read_typed``)
        whole = None if is_tf else functools.partial(self._read_typed, base=base, node=node, ftype=ftype)
        read = TraceRead(path, rel, gz=path.name.endswith(".gz"), cap=self.problems.cap, whole=whole)
        bad_events = ProblemLog(self.problems.cap)
        st = _TraceState(base)
        idx0 = 0
        for chunk in read.chunks(STREAM_EVENTS):
            if read.streamed:
                self._convert_chunk(chunk, idx0, st, rel, node, ftype, is_tf, bad_events)
            elif is_tf or not self._read_simple(chunk, base, node, ftype):
                self._general(chunk, idx0, st, rel, node, ftype, is_tf, bad_events)
            idx0 += len(chunk)
        read.finish(self.problems, bad_events)
        if read.error is None:
            self._unclosed(st, rel)

    def _convert_chunk(self, chunk: list, idx0: int, st: "_TraceState", rel: str, node: str, ftype: str,
                       is_tf: bool, problems: ProblemLog) -> None:
        """One chunk of a streamed file, in file order: a chunk without metadata events and of the
        common shape goes column-wise, any other chunk (and every chunk of a TF trace) event by
        event, so the table equals reading the file whole."""
        phs = [e.get("ph") if type(e) is dict and type(e.get("pid")) not in (list, dict) else None for e in chunk]
        if (is_tf or None in phs or "M" in phs
                or not self._simple_body(chunk, phs, st.base, st.phase_of_pid, node, ftype)):
            self._general(chunk, idx0, st, rel, node, ftype, is_tf, problems)
        self.out.flush()

    def _general(self, events: list, idx0: int, st: "_TraceState", rel: str, node: str, ftype: str, is_tf: bool,
                 problems: ProblemLog | None = None) -> None:
        """Event by event, in order (a metadata event applies to the events after it); problems are
        recorded (in ``problems``, by default the reader's log) with the event's position
        ``idx0 + index + 1``."""
        out = self.out
        log = self.problems if problems is None else problems
        for idx, e in enumerate(events, start=idx0):
            if not isinstance(e, dict):
                log.add(rel, idx + 1, "event is not a JSON object")
                continue
            ph = e.get("ph")
            args = e.get("args")
            pid = hashable(e.get("pid"))
            if ph == "M":
                if e.get("name") == "process_name" and isinstance(args, dict):
                    if _base_time(args.get("start_time_since_epoch_in_micros")):
                        st.base = int(args["start_time_since_epoch_in_micros"])
                    if "name" in args:
                        st.phase_of_pid[pid] = str(args["name"])
                continue
            ts = e.get("ts")
            if not is_number(ts):
                log.add(rel, idx + 1, "event without numeric ts")
                continue
            name = e.get("name")
            name = "" if name is None else str(name)
            tid = e.get("tid")
            if ph == "X":
                dur = e.get("dur", 0)
                if not is_number(dur) or dur < 0:
                    log.add(rel, idx + 1, "X event with missing or negative dur")
                    continue
                start = int(round(st.base + ts))
                end = start + int(round(dur))
            elif ph in ("i", "I"):
                start = end = int(round(st.base + ts))
            elif ph == "B":
                st.spans.begin(pid, e, ts)
                continue
            elif ph == "E":
                pair = st.spans.end(pid)
                if pair is None:
                    log.add(rel, idx + 1, "E event without matching B")
                    continue
                b, bts = pair
                if ts < bts:
                    log.add(rel, idx + 1, "B/E pair with negative duration")
                    continue
                start = int(round(st.base + bts))
                end = int(round(st.base + ts))
                bname = b.get("name")
                name = "" if bname is None else str(bname)
            else:
                log.add(rel, idx + 1, f"unknown event phase {ph!r}")
                continue
            if not (-MAX_ABS_US < start <= end < MAX_ABS_US):
                log.add(rel, idx + 1, "event time out of range")
                continue
            step = ""
            epid, etid = pid, tid
            if isinstance(args, dict):
                sn = args.get("step_num")
                if sn is not None:
                    step = str(sn)
                if is_tf:
                    epid = args.get("pid", pid)
                    etid = args.get("thread_id", tid)
            out.append(
                start, end, name, st.phase_of_pid.get(pid, "Unknown"), node, ftype, step,
                _int(epid, -1), _int(etid, -1), args,
            )

    def _unclosed(self, st: "_TraceState", rel: str) -> None:
        for b in st.spans.unclosed():
            self.problems.add(rel, None, f"unclosed B event {b.get('name')!r} (dropped)")

    def _read_typed(self, raw: bytes, base: int, node: str, ftype: str) -> int | None:
        """A whole file's text decoded into structs (``framework_decode``) and read column-wise: the
        number of its events, or None (nothing appended) when it does not decode so or does not have
        the common shape; ``TraceRead`` then decodes it as usual (the same columns or problems)."""
        with paused():
            events = decode_events(raw)
        if events is None or not self._read_simple(events, base, node, ftype, typed=True):
            return None
        return len(events)

    def _read_simple(self, events: list, base: int, node: str, ftype: str, typed: bool = False) -> bool:
        """Column-wise path for the common file shape (only well-formed X / i events after the
        metadata, each pid declared once, one base time): each column filled by one comprehension,
        times rounded with numpy. Returns False (nothing appended) when any event needs the general
        path's handling; the whole file then takes it. ``typed``: the events are ``framework_decode``
        structs instead of dicts."""
        if not typed and set(map(type, events)) - {dict}:
            return False
        cols = struct_columns(events, EVENT_FIELDS) if typed else None  # every field at once
        pids = cols["pid"] if typed else column(events, "pid", typed)
        if {list, dict} & set(map(type, pids)):
            return False
        phs = cols["ph"] if typed else column(events, "ph", typed)
        # Every event after the last metadata event is body: only the events up to it are filtered.
        head = _last_meta(phs) + 1
        lead = [as_dict(e) for e in events[:head]] if typed else events[:head]  # what the metadata checks read
        meta = [e for e, ph in zip(lead, phs[:head]) if ph == "M"]
        if meta and not _metadata_leads(lead, phs):
            return False
        if meta:
            keep = [ph != "M" for ph in phs[:head]]
            body = [e for e, k in zip(events[:head], keep) if k] + events[head:]
            if typed:
                cols = {f: [x for x, k in zip(vals[:head], keep) if k] + vals[head:] for f, vals in cols.items()}
                pids, phs = cols["pid"], cols["ph"]
            else:
                pids = [x for x, k in zip(pids[:head], keep) if k] + pids[head:]
                phs = [ph for ph, k in zip(phs[:head], keep) if k] + phs[head:]
        else:
            body = events
        phase_of_pid: dict = {}
        bases = 0
        for e in meta:
            args = e.get("args")
            if e.get("name") == "process_name" and isinstance(args, dict):
                if _base_time(args.get("start_time_since_epoch_in_micros")):
                    base = int(args["start_time_since_epoch_in_micros"])
                    bases += 1
                if "name" in args:
                    if e.get("pid") in phase_of_pid and phase_of_pid[e.get("pid")] != str(args["name"]):
                        return False
                    phase_of_pid[e.get("pid")] = str(args["name"])
        if bases > 1:
            return False
        return self._simple_body(body, phs, base, phase_of_pid, node, ftype, pids, typed, cols)

    def _simple_body(self, body: list, phs: list, base: int, phase_of_pid: dict, node: str, ftype: str,
                     pids: list | None = None, typed: bool = False, cols: dict | None = None) -> bool:
        """Columns of ``body`` (dicts, or structs with ``typed``, with their ``ph`` values in ``phs``, no
        metadata; ``pids``: their ``pid`` values when the caller has them; ``cols``: with ``typed``,
        every field of ``body`` as a list, ``struct_columns``) when every event is a well-formed X / i
        event; False (nothing appended) otherwise."""
        if typed and cols is None:
            cols = struct_columns(body, EVENT_FIELDS)
        try:
            kinds = set(phs)
        except TypeError:  # a list or object as "ph": the general path reports it
            return False
        if not kinds <= {"X", "i", "I"}:
            return False
        num = (int, float)
        ts = cols["ts"] if typed else column(body, "ts", typed)
        dur = cols["dur"] if typed else column(body, "dur", typed, 0)
        if kinds != {"X"}:
            dur = [d if ph == "X" else 0 for d, ph in zip(dur, phs)]
        if not set(map(type, ts)) <= _NUM_TYPES or not set(map(type, dur)) <= _NUM_TYPES:
            return False
        if dur and min(dur) < 0:  # (a NaN that hides a negative from min() fails the magnitude test below)
            return False
        names = cols["name"] if typed else column(body, "name", typed)
        if set(map(type, names)) - {str}:
            names = [x if type(x) is str else ("" if x is None else str(x)) for x in names]
        if pids is None:
            pids = cols["pid"] if typed else column(body, "pid", typed)
        if set(map(type, pids)) - {int}:
            get_phase = phase_of_pid.get
            phases = [get_phase(x, "Unknown") for x in pids]
            pids = [x if type(x) is int else _int(x, -1) for x in pids]
        else:
            phases = _PhaseOfPid(phase_of_pid)  # encoded from the pids' codes in flush()
        tids = cols["tid"] if typed else column(body, "tid", typed)
        if set(map(type, tids)) <= {type(None)}:  # no thread ids at all (smdebug's Python timeline)
            tids = [-1] * len(tids)
        elif set(map(type, tids)) - {int}:
            tids = [x if type(x) is int else -1 if x is None else _int(x, -1) for x in tids]
        args_l = cols["args"] if typed else column(body, "args", typed)
        args_type, empty = (type(NO_ARGS), NO_ARGS) if typed else (dict, {})
        if set(map(type, args_l)) - {args_type}:
            args_l = [a if type(a) is args_type else empty for a in args_l]
        acols = struct_columns(args_l, ARGS_FIELDS) if typed else None
        steps = acols["step_num"] if typed else column(args_l, "step_num", typed)
        if set(map(type, steps)) - {str}:
            steps = ["" if x is None else x if type(x) is str else str(x) for x in steps]
        # As _Columns.append: NaN, Infinity and integers beyond a float are no pid / worker count.
        # The common columns first checked whole (all ints in range, or all absent), each element only
        # when they are not: the element-wise tests were a fifth of the reading (medium profile).
        fmax = FLOAT_MAX
        n = len(body)
        apids = acols["pid"] if typed else column(args_l, "pid", typed)
        if not (set(map(type, apids)) <= {int} and (not n or -fmax <= min(apids) and max(apids) <= fmax)):
            apids = [int(x) if type(x) in num and -fmax <= x <= fmax else -1 for x in apids]
        nan = np.nan
        nws = acols["num_workers"] if typed else column(args_l, "num_workers", typed)
        if set(map(type, nws)) <= {type(None)}:
            nws = [nan] * n
        else:
            nws = [float(x) if type(x) in num and -fmax <= x <= fmax else nan for x in nws]
        pms = acols["pin_memory"] if typed else column(args_l, "pin_memory", typed)
        if set(map(type, pms)) <= {type(None)}:
            pms = [-1] * n
        else:
            pms = [-1 if x is None else int(x in (True, "True", "true", 1)) for x in pms]
        # int(round(base + t)) exactly: float64 holds base + t exactly below 2**53 (int t), and
        # float t is added in float64 like Python does; np.rint rounds half to even like round().
        try:
            ts_a = np.asarray(ts, dtype=np.float64)
            dur_a = np.asarray(dur, dtype=np.float64)
        except OverflowError:  # an integer beyond any float: the general path reports the event
            return False
        if n and not (np.abs(ts_a).max() < _TIME_LIMIT and dur_a.max() < _TIME_LIMIT):
            return False  # NaN, infinity or absurd magnitudes: the general path reports them
        if n and (np.abs(ts_a).max() + abs(base) >= 2.0**52 or dur_a.max() >= 2.0**52):
            starts = [int(round(base + t)) for t in ts]
            ends = [st + int(round(d)) for st, d in zip(starts, dur)]
            durs = [en - st for st, en in zip(starts, ends)]
        else:
            starts = np.rint(base + ts_a).astype(np.int64)
            ends = starts + np.rint(dur_a).astype(np.int64)
            durs = ends - starts
        # read_file flushes after every file, so the column buffers are empty here: hand over whole
        # columns (arrays, lists, or one repeated value) for flush() to encode.
        if len(self.out.cols["start_us"]):
            self.out.flush()
        c = self.out.cols
        c.update(start_us=starts, end_us=ends, dur_us=durs, name=names, phase=phases, node_id=_Same(node, n),
                 file_type=_Same(ftype, n), step_num=steps, pid=pids, tid=tids, arg_pid=apids, num_workers=nws,
                 pin_memory=pms)
        return True

    def table(self) -> pd.DataFrame:
        """The event table of every file read (see ``_Columns.table``)."""
        return self.out.table()

    def file_events(self) -> "FileEvents":
        """What ``read_file`` made of the one file read since the last call, for the client's merge
        (``table_of_files``); the reader's problems travel with it."""
        self.out.flush()
        ch, dicts = self.out.chunks, self.out.dicts
        cols = {}
        for c in COLUMNS:
            cols[c] = np.concatenate(ch[c]) if len(ch[c]) > 1 else ch[c][0] if ch[c] else np.zeros(0, _NUMERIC.get(c, np.int32))
            ch[c] = []
            if len(cols[c]) > STREAM_EVENTS:
                trim_heap()  # a streamed file's chunks live on the heap: hand their pages back (as table() does)
        strings = {c: list(dicts[c]) for c in CATEGORICAL}
        self.out.dicts = {c: {} for c in CATEGORICAL}
        return FileEvents(cols, strings, dict(self.problems.counts),
                          [(p.file, p.line, p.reason) for p in self.problems.items])


def events_frame(cols: dict) -> pd.DataFrame:
    """Column lists -> DataFrame sorted by start time (categorical text, int64 times)."""
    df = pd.DataFrame(
        {
            "start_us": np.asarray(cols["start_us"], dtype=np.int64),
            "end_us": np.asarray(cols["end_us"], dtype=np.int64),
            "dur_us": np.asarray(cols["dur_us"], dtype=np.int64),
            **{c: pd.Categorical(cols[c]) for c in CATEGORICAL},
            "pid": np.asarray(cols["pid"], dtype=np.int64),
            "tid": np.asarray(cols["tid"], dtype=np.int64),
            "arg_pid": np.asarray(cols["arg_pid"], dtype=np.int64),
            "num_workers": np.asarray(cols["num_workers"], dtype=np.float64),
            "pin_memory": np.asarray(cols["pin_memory"], dtype=np.int8),
        }
    )
    return df.sort_values("start_us", kind="stable").reset_index(drop=True)


def empty_events() -> pd.DataFrame:
    return events_frame({c: [] for c in COLUMNS})


def read_trace_file(root: Path, path: Path, cap: int) -> FileEvents:
    """One trace file under ``root`` on its own (a Dask task's work, see ``readers.distributed``)."""
    return read_trace_files(root, [path], cap)


def read_trace_files(root: Path, paths: list[Path], cap: int, stop=None) -> FileEvents:
    """Trace files under ``root`` read one after the other into one reader: their events in file order as
    one ``FileEvents``, what ``read_trace_file`` gives for each of them, joined (and their problems, the
    first ``cap`` of them listed). ``stop``: checked between files, as in ``read_framework``."""
    return _read_run(root, paths, cap, stop)[0]


def _read_run(root: Path, paths: list[Path], cap: int, stop=None, max_events: int | None = None):
    """``read_trace_files`` of the first of ``paths``, ending after the file that brings the events past
    ``max_events``: (their ``FileEvents``, how many files were read)."""
    reader = FrameworkReader(root, ProblemLog(cap=cap))
    read = 0
    with paused():  # as in read_framework
        for path in paths:
            if stop is not None and stop.is_set():
                break
            reader.read_file(path)
            read += 1
            if max_events is not None and sum(map(len, reader.out.chunks["start_us"])) > max_events:
                break
    return reader.file_events(), read


# ``reduce_framework`` reads consecutive files together up to this many bytes (a bigger file alone) and reduces
# them as one: the reduction and the merge cost about a millisecond a file whatever its size (a few dozen numpy
# calls, dictionaries, the summaries), which the medium benchmark profile's 465 files of ~85 KB paid 465 times
# (its traces: 1.47 -> 1.15 CPU s with 256 KB batches, 1.85 -> 1.40 s with 1 MB ones, the same summaries).
REDUCE_BATCH_BYTES = 1 << 20
# ... and a run ends after the file that brings its events past this many, whatever the files' sizes said: a
# compressed trace's size says nothing of its events (a 10 KB gzip can hold millions), and a run holds its files'
# columns together until it is reduced, where one file at a time did (1 MB of smdebug JSON: ~10,000 events).
REDUCE_BATCH_EVENTS = 16_384


def _batches(files: list[Path], stop=None):
    """``files`` in runs of consecutive files of at most REDUCE_BATCH_BYTES together (a bigger file alone)."""
    batch: list[Path] = []
    size = 0
    for path in files:
        if stop is not None and stop.is_set():
            return
        try:
            n = path.stat().st_size
        except OSError:  # gone or unreadable: the reader records it when it gets there
            n = 0
        if batch and size + n > REDUCE_BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(path)
        size += n
    if batch:
        yield batch


def table_of_files(files, problems: ProblemLog) -> pd.DataFrame:
    """The event table of ``FileEvents`` given in file order (an iterable: each is merged and can be
    dropped before the next arrives), with their problems recorded in ``problems`` in that order:
    the same table and problems as ``read_framework`` over the same files."""
    out = _Columns()
    for fe in files:
        for reason, n in fe.problem_counts.items():
            problems.counts[reason] += n
        room = max(problems.cap - len(problems.items), 0)
        problems.items.extend(DataProblem(f, line, reason) for f, line, reason in fe.problem_items[:room])
        out.add(fe)
    return out.table()


def reduce_framework(root: Path, problems: ProblemLog, reduce, merge, stop=None, files: list[Path] | None = None):
    """Every framework trace under ``root``, a run of consecutive files after another (``_batches``: up to
    REDUCE_BATCH_BYTES, a bigger file alone): each run read on its own (``read_trace_files``), reduced by
    ``reduce(FileEvents)`` and handed to ``merge(iterable, problems)`` before the next is read, so memory holds
    one run's events at a time. A run reduces to what its files' reductions merged give: the merge keeps a
    group's first event by (start, file, row), and a run's rows come in its files' order. ``stop``: as in
    ``read_framework``; ``files``: ``list_framework_files``'s listing when the caller made it."""
    files = files if files is not None else list_framework_files(root, problems)

    def reduced():
        for batch in _batches(files, stop):
            while batch and not (stop is not None and stop.is_set()):
                fe, read = _read_run(root, batch, problems.cap, stop, REDUCE_BATCH_EVENTS)
                yield reduce(fe)
                batch = batch[read:]

    return merge(reduced(), problems)


def read_framework(root: Path, problems: ProblemLog, stop=None) -> pd.DataFrame:
    """Every framework trace under ``root`` as one event table. ``stop`` (a ``threading.Event``):
    checked between files, so a caller reading this in a thread can abandon it (Ctrl-C)."""
    reader = FrameworkReader(root, problems)
    # Decoding makes millions of short-lived dicts and lists, none in a reference cycle: with the
    # cyclic garbage collector paused they are still freed (reference counting), and the collector
    # does not rescan the growing heap over and over (a third of the reading time on big traces).
    with paused():
        for p in list_framework_files(root, problems):
            if stop is not None and stop.is_set():
                break
            reader.read_file(p)
    return reader.table()
