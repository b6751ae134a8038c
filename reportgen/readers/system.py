"""System metrics (JSON lines, spec A.2) -> one per-tick table per node.

Fast path: per node, DuckDB ``read_json`` (all of the node's files, scanned by every thread) hands
back three numbers per record in file order - a hash of its series identity, its timestamp and its
value - and numpy groups them by series, so no Python object is made per record. The node's tick
table is built right away and the raw records are dropped, so memory holds one node's records at
a time plus the (compact) tick tables. A node with any anomaly (DuckDB parse error, empty file,
missing field, unknown type, non-finite, negative or >100 % value) goes through the batch path
instead: batches of files, then file by file; a file that DuckDB rejects or that holds anomalies is
parsed line by line in Python (``_careful``) so every valid line is kept and every bad one is
recorded with its line number. Records of one sampling instant carry timestamps a few ms apart; they
are grouped into ticks by clustering the node's sorted distinct timestamps (gap > threshold = new
tick), which is robust to sampler drift.
"""

from __future__ import annotations

import json
import math
import re
import threading
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reportgen import interrupts
from reportgen.json_values import is_plain_number
from reportgen.readers.heap import trim_heap
from reportgen.readers.listing import walk_files
from reportgen.readers.tick_build import KNOWN_TYPES, SeriesChunk, SlicedSeries, build_table, natural_key
from reportgen.readers.tick_table import ColumnSpill, NodeSystem, SystemData, TableBudget
from reportgen.problems import ProblemLog

# ``<epoch seconds>.<node>.json``. The epoch has 10 digits from 2001-09-09 on; a node whose clock
# was set to the 1990s (or to 1970 after a reset) writes 8 or 9 digits, and such files are still
# the job's data. The node part is any text (spaces, non-ASCII, a newline, U+202E: a copied or
# renamed file is still data, and the node in the report comes from the records' NodeId).
SYSTEM_FILE_RE = re.compile(r"^(\d{1,11})\.(.+)\.json$", re.DOTALL)
# Characters DuckDB reads as a glob pattern in a file name: such a file goes line by line (a name
# like ``1700000040.algo*.json`` would otherwise read every matching file).
_GLOB_CHARS = frozenset("*?[]{}\\")
# A longer line is no record (a real one is ~150 bytes): the careful path skips it (reading it in
# bounded pieces) instead of holding it whole, so a 2 GB file without a newline costs one piece.
MAX_LINE_BYTES = 1 << 20
PERCENT_DIMENSIONS = {"CPUUtilization", "I/OWaitPercentage", "GPUUtilization", "GPUMemoryUtilization",
                      "GPUMemoryUsedPercent"}
PERCENT_NAMES = {"MemoryUsedPercent"}
BATCH_FILES = 48
# In a folder of many nodes (SMALL_NODES_FROM or more), a node whose files hold at most SMALL_NODE_BYTES in
# all (a few hundred records) is read line by line in Python: a DuckDB query costs ~7 ms of CPU whatever its
# size, so 10,000 one-line nodes took ~75 s of CPU in queries alone, and the line parse of 64 KiB costs
# ~1 ms. The records and problems are the fast path's (out-of-order lines are re-sorted without a note, as
# there). A few nodes keep the fast path: their queries cost little and overlap the traces' decoding.
SMALL_NODE_BYTES = 64 << 10
SMALL_NODES_FROM = 256
# Bytes of JSON lines per grouped query (a node's files are queried in slices of about this size): small
# enough that a feed thread joining the read (``_RowFeed``) finds work at once and the two end together
# (medium profile, 141 MB a node: 192 MB slices, one a node, left one core idle at the end of the read).
GROUPED_QUERY_BYTES = 64 << 20
# Smaller files cannot hold one record (~100 bytes): they go to the careful path, which reports
# blank/whitespace-only files (DuckDB reads them as zero rows) and files that vanished.
MIN_RECORD_BYTES = 48

_COLUMNS = "{Type:'VARCHAR',Name:'VARCHAR',Dimension:'VARCHAR',Value:'DOUBLE',NodeId:'VARCHAR',Timestamp:'DOUBLE'}"
_TYPES_SQL = ", ".join(f"'{t}'" for t in KNOWN_TYPES)
_READ = f"read_json($files, format='newline_delimited', columns={_COLUMNS})"
# Python gets only numbers: a hash of the series identity (mapped to our series id with a sorted
# lookup), timestamp, value and a ``bad`` flag for rows the careful path must look at (missing
# fields, unknown type, non-finite or negative values). Row order is not relied upon.
_FAST_SQL = f"""
SELECT hash(NodeId, Type, Name, Dimension) AS h,
       coalesce(Timestamp, 0.0) AS ts,
       coalesce(Value, 0.0) AS v,
       (NodeId IS NULL OR Type IS NULL OR Name IS NULL OR Dimension IS NULL OR Value IS NULL
        OR Timestamp IS NULL OR Type NOT IN ({_TYPES_SQL})
        OR NOT isfinite(Value) OR NOT isfinite(Timestamp) OR Value < 0)::TINYINT AS bad
FROM {_READ}
"""
# Per-node fast path: every record as three numbers, in file order (DuckDB's default
# ``preserve_insertion_order``): a hash of the series identity, the timestamp and the value. numpy
# groups them by series (``_group_rows``): a sampler writes its series in the same order at every
# instant, so the hashes usually repeat with a fixed period and the grouping is a reshape. This
# costs ~25 % less CPU than a ``GROUP BY ... list()`` query (3.0 -> 2.3 CPU s per 760 MB node). The
# identities of the hashes come from ``_CATALOG_SQL`` over the node's first file (all its files when
# a series starts later). NULL numbers come back masked; a NULL or unknown identity field gives a
# hash with no catalog entry; both send the node to the batch path, which reports them line by line.
_ROWS_SQL = f"""
SELECT hash(NodeId, Type, Name, Dimension) AS h, Timestamp AS ts, Value AS v
FROM {_READ}
"""
# The catalog reads the fields as JSON: DuckDB casts a number, a boolean or an object to the VARCHAR
# the row queries declare (NodeId 12 would become a node "12") and a numeric string or a boolean to
# their DOUBLE ("16.4" -> 16.4, true -> 1.0). ``typed`` says whether, in the files the catalog reads,
# the identity fields were all JSON strings and Value / Timestamp JSON numbers; a series for which
# they were not sends the node to the batch path, which reports the lines. The hash is the same as
# the row queries' (``->> '$'`` unescapes a string as the VARCHAR cast does).
_CATALOG_COLUMNS = "{Type:'JSON',Name:'JSON',Dimension:'JSON',Value:'JSON',NodeId:'JSON',Timestamp:'JSON'}"
_NUMBER = "('UBIGINT', 'BIGINT', 'DOUBLE')"
_CATALOG_SQL = f"""
SELECT hash(NodeId ->> '$', Type ->> '$', Name ->> '$', Dimension ->> '$') AS h,
       NodeId ->> '$' AS node, Type ->> '$' AS typ, Name ->> '$' AS name, Dimension ->> '$' AS dim,
       bool_and(json_type(NodeId) = 'VARCHAR' AND json_type(Type) = 'VARCHAR' AND json_type(Name) = 'VARCHAR'
                AND json_type(Dimension) = 'VARCHAR' AND coalesce(json_type(Value) IN {_NUMBER}, true)
                AND coalesce(json_type(Timestamp) IN {_NUMBER}, true)) AS typed
FROM read_json($files, format='newline_delimited', columns={_CATALOG_COLUMNS})
WHERE NodeId IS NOT NULL AND Type IS NOT NULL AND Name IS NOT NULL AND Dimension IS NOT NULL
GROUP BY ALL
"""


def list_system_files(root: Path, problems: ProblemLog | None = None) -> list[tuple[int, Path]]:
    """``(minute key in µs, path)`` sorted by key then path, for every ``<epoch>.<node>.json`` under system/.

    A folder that cannot be listed (an ``<hour>/`` folder of mode 000 copied from another user) is
    recorded in ``problems`` as an unreadable folder: its files would otherwise vanish unnoticed."""
    out = []
    sysdir = root / "system"
    if not sysdir.is_dir():
        return out
    for p in walk_files(sysdir, root, problems):
        m = SYSTEM_FILE_RE.match(p.name)
        if m and p.name.endswith(".json") and p.is_file():
            out.append((int(m.group(1)) * 1_000_000, p))
    out.sort(key=lambda kp: (kp[0], str(kp[1])))
    return out


class _Accumulator:
    """Collects (series id, timestamp, value) chunks per node and the series catalog."""

    def __init__(self, problems: ProblemLog, root: Path):
        self.problems = problems
        self.root = root
        self.sid_of_key: dict[tuple, int] = {}
        self.keys: list[tuple] = []  # sid -> (node, type, name, dim)
        self.node_names: list[str] = []
        self._hash_sid: dict[int, int] = {}
        self._lookup = None
        self._node_of_sid: list[int] = []
        self.chunks: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        self.built: set[str] = set()  # nodes whose tick table is final (streaming mode)

    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def sid(self, key: tuple) -> int:
        s = self.sid_of_key.get(key)
        if s is None:
            s = len(self.keys)
            self.sid_of_key[key] = s
            self.keys.append(key)
        return s

    def add_hash(self, h: int, key: tuple) -> None:
        self._hash_sid[h] = self.sid(key)
        self._lookup = None

    def hash_lookup(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted series hashes and their series ids (for ``np.searchsorted``)."""
        if self._lookup is None:
            hs = np.array(sorted(self._hash_sid), dtype=np.uint64)
            self._lookup = (hs, np.array([self._hash_sid[int(x)] for x in hs], dtype=np.int32))
        return self._lookup

    def pct_index(self) -> np.ndarray:
        return np.array([_is_percent(k) for k in self.keys], dtype=bool)

    def node_index(self) -> np.ndarray:
        """sid -> small integer node code (position in ``node_names``)."""
        if len(self._node_of_sid) != len(self.keys):
            for key in self.keys[len(self._node_of_sid):]:
                if key[0] not in self.node_names:
                    self.node_names.append(key[0])
                self._node_of_sid.append(self.node_names.index(key[0]))
        return np.array(self._node_of_sid, dtype=np.int32)

    def add(self, sids: np.ndarray, ts: np.ndarray, vals: np.ndarray) -> None:
        if not len(sids):
            return
        node_codes = self.node_index()[sids]
        present = np.unique(node_codes)
        for n in present:
            if self.node_names[n] in self.built:
                raise _Restart(self.node_names[n])
            m = slice(None) if len(present) == 1 else node_codes == n
            self.chunks.setdefault(self.node_names[n], []).append((sids[m], ts[m], vals[m]))


    def add_series(self, chunk: "SeriesChunk | SlicedSeries") -> None:
        """Records of the grouped queries, series by series. Kept as they are when they are the node's
        first records (then ``build_table`` places whole series at once); otherwise flattened into
        ``(sids, ts, values)`` like every other chunk."""
        nodes = {self.keys[s][0] for s in chunk.sids.tolist()}
        node = next(iter(nodes))
        if len(nodes) > 1 or node in self.chunks:
            self.add(*chunk.flat())
            return
        if node in self.built:
            raise _Restart(node)
        self.chunks[node] = [chunk]


def _group_rows(h: np.ndarray, ts, v) -> tuple[np.ndarray, list[np.ndarray] | np.ndarray, list[np.ndarray] | np.ndarray] | None:
    """One query slice's records grouped by series: the distinct hashes in order of first
    appearance and, per hash, its timestamps and values in file order: two lists, or, when the
    hashes repeat with a period, two (instants x series) matrices whose column ``g`` is series ``g``
    (``SlicedSeries.add`` takes both). None when a timestamp or a value is NULL (DuckDB hands those
    columns back masked)."""
    if isinstance(ts, np.ma.MaskedArray) or isinstance(v, np.ma.MaskedArray):
        return None
    h, ts, v = np.asarray(h), np.asarray(ts, dtype=np.float64), np.asarray(v, dtype=np.float64)
    period = _period(h)
    if period:  # the common case: the same series in the same order at every instant
        # views of the slice's columns: ``SlicedSeries.add`` copies what it keeps
        return h[:period].copy(), ts.reshape(-1, period), v.reshape(-1, period)
    import pandas as pd  # hashing beats sorting the records

    codes, uniq = pd.factorize(h)
    if len(uniq) < 2**15:  # a 16-bit key is sorted by radix sort
        codes = codes.astype(np.int16)
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(uniq)))[:-1]
    return np.asarray(uniq, dtype=np.uint64), np.split(ts[order], bounds), np.split(v[order], bounds)


_MAX_PERIOD = 1 << 16  # series per node and instant, far above any real sampler (~200 on 96 cores)


def _period(h: np.ndarray) -> int:
    """``p`` when the hashes repeat with period ``p`` (``h[i] == h[i % p]``, the first ``p``
    distinct, whole periods only); 0 otherwise."""
    if not len(h):
        return 0
    hits = np.flatnonzero(h[: _MAX_PERIOD + 1] == h[0])
    p = int(hits[1]) if len(hits) > 1 else len(h) if len(h) <= _MAX_PERIOD else 0
    if not p or len(h) % p or len(set(h[:p].tolist())) != p:
        return 0
    return p if (h.reshape(-1, p) == h[:p]).all() else 0


def _rows(con, sql: str, files: list[str], bound=None) -> dict:
    """A row query's columns as numpy arrays, through a relation (``con.sql``): the same arrays as
    ``con.execute(...).fetchnumpy()``, for ~0.2 CPU s less over the medium profile's 4 nodes (12
    alternated rounds in one process, 2 threads: medians 2.57 against 2.78 CPU s). A statement run on
    the same cursor before it must be fetched to its end: DuckDB 2.0 refuses the relation while an
    ``execute`` result is unfinished (``ResourceInUseException``, a ``duckdb.Error``: the node would go
    to the batch path). ``bound``: called once the query is bound (or its binding failed), before it runs."""
    try:
        relation = con.sql(sql, params={"files": files})
    finally:
        if bound is not None:
            bound()
    return relation.fetchnumpy()


def _catalog_of(rows, hashes: list[int]) -> dict[int, tuple] | None:
    """Identity of each of ``hashes`` from ``_CATALOG_SQL`` rows; None when two identities share a
    hash or a series had fields of the wrong JSON type (see ``_CATALOG_SQL``)."""
    wanted = set(hashes)
    out: dict[int, tuple] = {}
    for hh, *key, typed in rows:
        if hh in wanted and (not typed or out.setdefault(hh, tuple(key)) != tuple(key)):
            return None
    return out


TAIL_BYTES = 4096  # how much of a file's end ``_ends_with_a_record`` reads


def _ends_with_a_record(path: Path, size: int) -> bool:
    """True when the file's last line is a whole JSON object. DuckDB (2.0, several threads, several
    files) now and then drops a cut or garbage last line of a file that is not the query's last
    without raising, which would lose it silently (found by fuzzing, 10-17 % of runs): such a file
    goes to the careful path, which reports the line. Reads only the file's last TAIL_BYTES."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, size - TAIL_BYTES))
            tail = fh.read(TAIL_BYTES).rstrip()
    except OSError:
        return False
    cut = tail.rfind(b"\n")
    if cut < 0 and size > TAIL_BYTES:
        return False  # a last line longer than TAIL_BYTES: let the careful path look at it
    try:
        return isinstance(json.loads(tail[cut + 1:]), dict)
    except (ValueError, RecursionError):
        return False


def _plain(path: Path, size: int) -> bool:
    """Whether a DuckDB query may take the file: big enough to hold a record, whole at its end, and
    named without glob characters (DuckDB expands them)."""
    return (size >= MIN_RECORD_BYTES and _GLOB_CHARS.isdisjoint(str(path))
            and _ends_with_a_record(path, size))


def _slices(files: list[Path], last: bool = False) -> list[list[str]] | None:
    """A node's files in slices of about equal size, each at most GROUPED_QUERY_BYTES (or one bigger file),
    one row query each (which bounds the memory whatever the job length); None when a file is too small to
    hold a record or is gone. ``last``: the read's last node, in twice as many slices, so that the feed
    threads end their last queries closer together. Equal slices, where the cut was once at every full
    64 MB: a medium node (141 MB) went in 64 + 64 + 13 MB, and at the read's end one feed thread idled for
    ~0.2 s while the other parsed a 64 MB slice."""
    sizes = [_size(f) for f in files]
    if not files or not all(_plain(f, n) for f, n in zip(files, sizes)):
        return None
    count = max(1, -(-sum(sizes) // GROUPED_QUERY_BYTES)) * (2 if last else 1)
    target = sum(sizes) / count
    slices, cur, acc = [], [], 0
    for f, n in zip(files, sizes):
        # a new slice where this file's middle would pass the target, or its end the cap
        if cur and (acc + n / 2 > target or acc + n > GROUPED_QUERY_BYTES):
            slices.append(cur)
            cur, acc = [], 0
        cur.append(str(f))
        acc += n
    slices.append(cur)
    return slices


DUCKDB_THREADS = 2  # the single-machine reader's DuckDB queries at once (one fewer while it shares the cores: SharedCores)
# Row queries run or held ahead of the one whose rows the reading thread groups: two feed threads query while a
# third result waits, so a thread never idles for the reading thread (four 64 MB slices of records at most,
# where the one-thread feed held three 192 MB ones). A node's catalog query (a few rows) does not count: counted,
# it kept a feed thread idle while the other's slice, which the reading thread waited for, ran on (~0.1 s at a
# medium node's end).
FEED_AHEAD = 3


@dataclass
class SharedCores:
    """How the system read shares the process's cores with another thread of its caller (the framework
    traces' reading, ``readers.ingest``). ``parsing`` is set once DuckDB has bound the first node's
    row query (or when the read ends before): the other thread's Python work, started earlier, holds the
    GIL that the reader's own Python needs to start its first query (~40-50 ms later on the medium
    profile), and its first import (pandas) holds pandas' module lock, which DuckDB's bind waits for when
    pandas is already partly imported (it checks pandas' types among a query's parameters): in 3 of 12
    runs of the medium profile the bind took 160-224 ms instead of 8 ms, with no core parsing meanwhile.
    ``alone``, set by the caller once the other thread is done: until then one feed thread fewer queries
    (``_RowFeed``), so that two busy threads share two cores instead of three (medium profile, 12
    interleaved whole-process rounds: CPU 2.06x the floor query's against 2.15x, wall 2.28x against 2.44x,
    medians of the per-round ratios)."""

    parsing: threading.Event = field(default_factory=threading.Event)
    alone: threading.Event = field(default_factory=threading.Event)


class _RowFeed:
    """DuckDB's side of the fast path: the row query of every slice of every node, then each node's
    catalog query, in that order, run by up to ``threads`` helper threads with a cursor of their
    own, each query on one DuckDB thread (the calling one). The reading thread takes the results in the
    same order (``next_node``), grouping a slice and building a node's table while the next slices are
    parsed without the GIL. One query per core rather than one query on every core: a thread that joins
    (``SharedCores.alone``) starts on the next slice at once, where a query already running kept the
    threads it started with (the medium profile's last node then ran on one core for ~0.5 s while the
    other was idle). At most ``FEED_AHEAD`` row queries are run or held ahead of the one being grouped."""

    def __init__(self, con, nodes: list[list[Path]], duck_error, sharing: SharedCores | None = None,
                 threads: int = DUCKDB_THREADS):
        self._sharing = sharing
        self._duck_error = duck_error
        self._nodes = nodes
        self._lock = threading.Condition()
        self._stop = False
        self._tasks: list[tuple[int, str, object]] = []  # (node, kind, files or exception) in the order handed over
        self._planned = 0  # nodes whose tasks are listed
        self._taken = 0  # tasks taken by a feed thread
        self._handed = 0  # tasks handed to the reading thread
        self._done: dict[int, tuple] = {}  # task -> its result, until handed over
        self._next = 0  # the next node for ``next_node``
        self._cursors = [con.cursor() for _ in range(max(1, threads))]  # a cursor is not shared between threads
        self._threads = [threading.Thread(target=self._run, args=(i,), name=f"reportgen-duckdb-{i}", daemon=True)
                         for i in range(len(self._cursors))]
        for t in self._threads:
            t.start()

    def _plan(self) -> bool:
        """List the next node's tasks (its slices' row queries, then its catalog; one ``fail`` when a file is
        too small or gone, one ``error`` carrying what listing them raised); False when every node is listed.
        Called with the lock held."""
        if self._planned == len(self._nodes):
            return False
        node = self._planned
        self._planned += 1
        try:
            slices = _slices(self._nodes[node], last=node == len(self._nodes) - 1)
        except Exception as e:  # noqa: BLE001 - raised by the reading thread when it reaches this node
            self._tasks.append((node, "error", e))
            return True
        if slices is None:
            self._tasks.append((node, "fail", []))
        else:
            self._tasks.extend((node, "rows", names) for names in slices)
            self._tasks.append((node, "catalog", slices[0][:1]))
        return True

    def _take(self, joins_later: bool) -> int | None:
        """The next task's index for a feed thread, once the reading thread is close enough; None at the end."""
        with self._lock:
            while True:
                if self._stop:
                    return None
                if self._taken == len(self._tasks) and not self._plan():
                    return None
                if self._rows_ahead() < FEED_AHEAD and not (joins_later and not self._alone()):
                    self._taken += 1
                    return self._taken - 1
                self._lock.wait(0.05)

    def _rows_ahead(self) -> int:
        """Row queries taken and not yet handed to the reading thread (``FEED_AHEAD``). Called with the lock held."""
        return sum(self._tasks[t][1] == "rows" for t in range(self._handed, self._taken))

    def _alone(self) -> bool:
        return self._sharing is None or self._sharing.alone.is_set()

    def _run(self, worker: int) -> None:
        """A feed thread: tasks in order until none is left (the second one starts once ``alone``)."""
        cursor = self._cursors[worker]
        while True:
            task = self._take(joins_later=worker > 0)
            if task is None:
                return
            node, kind, names = self._tasks[task]
            try:
                if kind == "error":
                    item = ("error", names)
                elif kind == "rows":
                    item = ("rows", _rows(cursor, _ROWS_SQL, names, self._bound))
                elif kind == "catalog":
                    item = ("catalog", cursor.execute(_CATALOG_SQL, {"files": names}).fetchall())
                else:
                    item = ("fail", None)
            except self._duck_error:
                item = ("fail", None)
            except BaseException as e:  # noqa: BLE001 - handed to the reading thread, which raises it
                item = ("error", e)
            self._finish(task, item)

    def _finish(self, task: int, item: tuple) -> None:
        with self._lock:
            self._done[task] = item
            self._lock.notify_all()

    def _bound(self) -> None:
        """Each row query bound: ``parsing`` set (see ``SharedCores``)."""
        if self._sharing is not None:
            self._sharing.parsing.set()

    def _result(self) -> tuple[str, tuple]:
        """The next task's kind and result, in task order."""
        with self._lock:
            while self._handed not in self._done:
                if not any(t.is_alive() for t in self._threads):  # cannot happen: every task gets a result
                    raise RuntimeError("the DuckDB feed ended early")
                self._lock.wait(0.05)
            task = self._handed
            item = self._done.pop(task)
            self._handed += 1
            self._lock.notify_all()
        if item[0] == "error":
            raise item[1]
        return self._tasks[task][1], item

    def next_node(self):
        """``(its records as a SlicedSeries, catalog rows of its first file, its files)`` for the next
        node, or None when DuckDB rejected a file or a number is NULL. Each slice is grouped and
        encoded as it arrives: the node's records are never held as 16 bytes a record."""
        files = self._nodes[self._next]
        self._next += 1
        series: SlicedSeries | None = SlicedSeries()
        while True:
            kind, (got, payload) = self._result()
            if got == "fail":
                series = None
            elif kind == "rows" and series is not None:
                part = _group_rows(payload["h"], payload["ts"], payload["v"])
                if part is None:
                    series = None
                else:
                    series.add(*part)
                del part
            if kind != "rows":  # the node's last task: its catalog (or its one ``fail``)
                break
            del payload
        if series is None:
            return None
        return series, payload, [str(f) for f in files]

    def close(self) -> None:
        """Stop the feed threads (interrupting their running queries) and wait for them."""
        with self._lock:
            self._stop = True
            self._lock.notify_all()
        for cursor, thread in zip(self._cursors, self._threads):
            if thread.is_alive():
                try:
                    cursor.interrupt()
                except Exception:  # noqa: BLE001 - best effort: the query then runs to its end
                    pass
        for thread in self._threads:
            thread.join()
        for cursor in self._cursors:
            cursor.close()


class _Restart(Exception):
    """Records of a node turned up after its table was built (a file named for another node)."""


def _is_percent(key: tuple) -> bool:
    _, _, name, dim = key
    return dim in PERCENT_DIMENSIONS or name in PERCENT_NAMES


class SystemReader:
    def __init__(self, root: Path, problems: ProblemLog, streaming: bool = True, budget: TableBudget | None = None,
                 sharing: SharedCores | None = None, threads: int | None = None):
        """``threads``: the DuckDB threads (and row queries at once) of this read (default ``DUCKDB_THREADS``)."""
        import duckdb

        self.root = root
        self.sharing = sharing  # the cores shared with the caller's other thread (``SharedCores``)
        self.streaming = streaming
        self.budget = budget  # tables past it spilled as they are built (None: all kept in memory)
        self.out: dict[str, NodeSystem] = {}
        self.files_read = 0  # files handed to ``read`` (what incremental mode is checked by)
        self.problems = problems
        self.acc = _Accumulator(problems, root)
        self.threads = max(1, int(threads or DUCKDB_THREADS))
        self.con = duckdb.connect()
        self.con.execute(f"SET threads={self.threads}")
        try:  # no terminal output from a library; in Jupyter DuckDB refuses the change without ipywidgets
            self.con.execute("SET enable_progress_bar=false")
        except duckdb.Error:
            pass
        # DuckDB's error text quotes the bad line cut at a byte count; when the cut splits a UTF-8
        # character, building the message raises UnicodeDecodeError instead (found by fuzzing).
        self._duck_error = (duckdb.Error, UnicodeDecodeError)
        self._interrupt_error = duckdb.InterruptException

    def _not_an_interrupt(self, err: Exception) -> None:
        """A DuckDB error that is really Ctrl-C (DuckDB turns the KeyboardInterrupt raised inside a query
        into ``InterruptException``) must stop the run, not send the files to the careful path."""
        if isinstance(err, self._interrupt_error) or interrupts.pending():
            raise KeyboardInterrupt from None

    # -- per-node fast path ----------------------------------------------------------------------
    def _node_rows(self, feed: "_RowFeed"):
        """The next node's records from ``feed``, grouped by series: ``(keys, records)``, with one
        key per series of the ``SlicedSeries`` (its identity tuple, or None when no catalog knows its
        hash), or None when DuckDB rejected the files or a number is NULL (the batch path then reads
        them)."""
        got = feed.next_node()
        if got is None:
            return None
        series, catalog_rows, files = got
        hashes = series.hashes
        if not hashes:
            return None  # no records at all: the batch path reports the files
        catalog = _catalog_of(catalog_rows, hashes)
        if catalog is not None and len(catalog) < len(hashes):  # a series that starts after the first file
            try:
                catalog = _catalog_of(self.con.execute(_CATALOG_SQL, {"files": files}).fetchall(), hashes)
            except self._duck_error as err:
                self._not_an_interrupt(err)
                return None
        if catalog is None:
            return None
        return [catalog.get(hh) for hh in hashes], series

    def _grouped(self, r) -> bool:
        """Add the records of one node's grouped rows; False (nothing added) when DuckDB rejected
        the files or anything looks anomalous (then the batch path takes over)."""
        if r is None:
            return False
        keys, series = r
        del r
        if any(k is None or k[1] not in KNOWN_TYPES for k in keys) or not series.finite:
            return False
        if any(_is_percent(key) and vmax > 100.0 for key, vmax in zip(keys, series.vmax)):
            return False
        series.sids = np.array([self.acc.sid(k) for k in keys], dtype=np.int32)
        self.acc.add_series(series)
        return True

    # -- batch path ------------------------------------------------------------------------------
    def _fast(self, files: list[Path], retry: bool = True):
        """Numeric columns for ``files`` or None if DuckDB rejects them or any row looks anomalous."""
        names = [str(f) for f in files]
        try:
            r = _rows(self.con, _FAST_SQL, names)
        except self._duck_error as err:
            self._not_an_interrupt(err)
            return None
        h = np.asarray(r["h"])
        ts = np.asarray(r["ts"], dtype=np.float64)
        v = np.asarray(r["v"], dtype=np.float64)
        if np.asarray(r["bad"]).any():
            return None
        cat_h, cat_sid = self.acc.hash_lookup()
        pos = np.searchsorted(cat_h, h)
        pos[pos >= len(cat_h)] = 0
        known = (cat_h[pos] == h) if len(cat_h) else np.zeros(len(h), bool)
        if not known.all():
            if not retry:
                return None
            # New series in this batch: extend the catalog, then read the batch again.
            try:
                new = self.con.execute(_CATALOG_SQL, {"files": names}).fetchall()
            except self._duck_error as err:
                self._not_an_interrupt(err)
                return None
            for hh, node, typ, name, dim, typed in new:
                if typed:  # a series with fields of the wrong JSON type stays unknown: careful path
                    self.acc.add_hash(int(hh), (node, typ, name, dim))
            return self._fast(files, retry=False)
        sids = cat_sid[pos]
        if (self.acc.pct_index()[sids] & (v > 100.0)).any():
            return None
        # No out-of-order check here: DuckDB does not guarantee row order across its parallel chunks,
        # and ticks are built from sorted timestamps anyway (the careful path does report it).
        return sids, ts, v

    # -- careful path ----------------------------------------------------------------------------
    def _careful(self, path: Path, note_order: bool = True) -> None:
        """Line-by-line parse of one file: keep every valid line, record every bad one (``note_order``:
        out-of-order lines too; they are re-sorted either way).

        Streams the file (one line in memory at a time) into compact arrays (20 bytes per record),
        so a multi-GB file with one bad line costs about what its records take, not 10x the file."""
        rel = self.acc.rel(path)
        sids, tss, vals = array("i"), array("d"), array("d")
        last_ts_of_node: dict[str, float] = {}
        seen_data = False
        try:
            with open(path, "rb") as fh:
                for i, raw in enumerate(_bounded_lines(fh), start=1):
                    if raw is None:  # longer than MAX_LINE_BYTES: skipped without being held
                        seen_data = True
                        self.problems.add(rel, i, f"line longer than {MAX_LINE_BYTES >> 20} MiB (skipped)")
                        continue
                    if i == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark is not data
                        raw = raw[3:]
                    if not raw.strip():
                        continue
                    seen_data = True
                    rec = self._record(rel, i, raw, last_ts_of_node if note_order else None)
                    if rec is not None:
                        sids.append(rec[0])
                        tss.append(rec[1])
                        vals.append(rec[2])
        except OSError as e:
            self.problems.add(rel, None, f"unreadable file: {e.strerror or e}")
            if not seen_data:
                return
        if not seen_data:
            self.problems.add(rel, None, "empty file")
            return
        self.acc.add(np.frombuffer(sids, np.int32) if len(sids) else np.zeros(0, np.int32),
                     np.frombuffer(tss, np.float64) if len(tss) else np.zeros(0),
                     np.frombuffer(vals, np.float64) if len(vals) else np.zeros(0))

    def _record(self, rel: str, i: int, raw: bytes, last_ts_of_node: dict | None) -> tuple[int, float, float] | None:
        """One line -> (series id, timestamp, value), or None with the problem recorded."""
        is_last = not raw.endswith(b"\n")  # only the last line can lack its newline
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self.problems.add(rel, i, "non-UTF-8 bytes")
            return None
        try:
            rec = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nesting too deep for the stdlib parser
            self.problems.add(rel, i, "truncated last line" if is_last else "malformed JSON line")
            return None
        if not isinstance(rec, dict):
            self.problems.add(rel, i, "record is not a JSON object")
            return None
        typ, name, dim, node = rec.get("Type"), rec.get("Name"), rec.get("Dimension"), rec.get("NodeId")
        value, ts = rec.get("Value"), rec.get("Timestamp")
        if not all(isinstance(x, str) for x in (typ, name, dim, node)):
            self.problems.add(rel, i, "missing or non-string Type/Name/Dimension/NodeId")
            return None
        if typ not in KNOWN_TYPES:
            self.problems.add(rel, i, "unknown record type")
            return None
        if not is_plain_number(value) or not is_plain_number(ts):
            self.problems.add(rel, i, "missing or non-numeric Value/Timestamp")
            return None
        try:
            value, ts = float(value), float(ts)
        except OverflowError:  # an integer literal beyond any float (1 followed by 400 digits)
            value = ts = math.inf
        if not (math.isfinite(value) and math.isfinite(ts)):
            self.problems.add(rel, i, "non-finite value (dropped)")
            return None
        key = (node, typ, name, dim)
        if value < 0 or (_is_percent(key) and value > 100.0):
            self.problems.add(rel, i, "out-of-range value (kept)")
        if last_ts_of_node is not None:
            prev = last_ts_of_node.get(node)
            if prev is not None and ts < prev - 0.05:
                self.problems.add(rel, i, "out-of-order timestamp (kept, re-sorted)")
            last_ts_of_node[node] = ts if prev is None else max(prev, ts)
        return self.acc.sid(key), ts, value

    def _single(self, path: Path) -> None:
        size = _size(path)
        if size == 0:
            self.problems.add(self.acc.rel(path), None, "empty file")
            return
        r = self._fast([path]) if _plain(path, size) else None
        if r is None:
            self._careful(path)
        else:
            self.acc.add(*r)

    def read(self, files: list[Path]) -> None:
        """Node by node (files grouped by the node in their name): the row queries, or the batch
        path when they show an anomaly; in streaming mode each node's table is built right after.
        DuckDB runs the queries in helper threads (``_RowFeed``) while this thread groups the
        records and builds the tables. While they run, DuckDB has one thread a query, the batch path's
        included (the feed threads keep the other cores busy meanwhile); ``self.threads`` after."""
        self.files_read += len(files)
        groups: dict[str, list[Path]] = {}
        for f in files:
            m = SYSTEM_FILE_RE.match(f.name)
            groups.setdefault(m.group(2) if m else "", []).append(f)
        order = sorted(groups, key=natural_key)
        if not order:
            return
        small = set() if len(order) < SMALL_NODES_FROM else {
            g for g in order if sum(max(_size(f), 0) for f in groups[g]) <= SMALL_NODE_BYTES}
        self.con.execute("SET threads=1")  # each feed thread's query on its own thread (``_RowFeed``)
        feed = _RowFeed(self.con, [groups[g] for g in order if g not in small], self._duck_error, self.sharing,
                        self.threads)
        try:
            for i, g in enumerate(order):
                if g in small:
                    self._read_small(groups[g])
                    taken = True
                else:
                    taken = self._grouped(self._node_rows(feed))
                if not taken:
                    self._read_batches(groups[g])
                if self.streaming:
                    later = set(order[i + 1 :])
                    for node in [n for n in self.acc.chunks if n not in later]:
                        self._finish(node)
        finally:
            feed.close()
            try:
                self.con.execute(f"SET threads={self.threads}")  # the batch path's queries use every core
            except Exception:  # noqa: BLE001 - an interrupted connection: nothing more runs on it
                pass

    def _finish(self, node: str) -> None:
        chunks = self.acc.chunks.pop(node)
        self.acc.built.add(node)
        table = build_table(node, chunks, self.acc.keys, self.problems)
        if table is not None:
            self.out[node] = table if self.budget is None else self.budget.hold(table)

    def _read_small(self, files: list[Path]) -> None:
        """A small node (``SMALL_NODE_BYTES``) line by line, file by file, with the fast path's notes."""
        for path in files:
            if _size(path) == 0:
                self.problems.add(self.acc.rel(path), None, "empty file")
            else:
                self._careful(path, note_order=False)

    def _read_batches(self, files: list[Path]) -> None:
        for i in range(0, len(files), BATCH_FILES):
            batch = files[i : i + BATCH_FILES]
            plain = [f for f in batch if _plain(f, _size(f))]
            r = self._fast(plain) if len(plain) == len(batch) else None
            if r is None:
                for f in batch:
                    self._single(f)
            else:
                self.acc.add(*r)

    # -- tick tables -----------------------------------------------------------------------------
    def tables(self) -> dict[str, NodeSystem]:
        for node in list(self.acc.chunks):
            self._finish(node)
        return {node: self.out[node] for node in sorted(self.out, key=natural_key)}


def _bounded_lines(fh):
    """The lines of a binary file, as iterating it gives them, except that a line longer than
    MAX_LINE_BYTES is read in MAX_LINE_BYTES pieces to its end and given as None."""
    while True:
        raw = fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = fh.readline(MAX_LINE_BYTES)
            yield None
            continue
        yield raw


def _size(path: Path) -> int:
    """Size in bytes, -1 when the file cannot be stat'ed (vanished, dangling link): the careful
    path then records it as unreadable."""
    try:
        return path.stat().st_size
    except OSError:
        return -1


def read_system(root: Path, problems: ProblemLog, files: list[tuple[int, Path]] | None = None, *,
                sharing: SharedCores | None = None, spill: ColumnSpill | None = None) -> SystemData:
    """All system metrics of ``root`` as per-node tick tables, read node by node in this process.
    ``files``: ``list_system_files``'s listing when the caller made it already (one listing per run).
    ``sharing``: how the read shares the cores with another thread of the caller (``SharedCores``).
    ``spill``: where tables past the memory budget go (``TableBudget``; made when first needed if None).

    (Reading on a Dask cluster or from the ``--incremental`` cache is ``readers.distributed``'s
    work, with this module's reader; ``readers.ingest`` chooses.)"""
    try:
        return _read_system(root, problems, files, sharing, spill)
    finally:
        if sharing is not None:
            sharing.parsing.set()


def _read_system(root: Path, problems: ProblemLog, files, sharing, spill) -> SystemData:
    files = files if files is not None else list_system_files(root, problems)
    data = SystemData(files=len(files), file_keys_us=[k for k, _ in files])
    if not files:
        return data
    data.first_file_key_us = files[0][0]
    data.last_file_key_us = files[-1][0]
    paths = [p for _, p in files]
    # Problems go to a local log first, so a restart does not report them twice.
    local = ProblemLog(cap=problems.cap)
    try:
        # Past REPORTGEN_TABLES_MEMORY_MB of tables, the next nodes' columns go to a temporary file
        # (read back per use): memory no longer grows with the job's duration (benchmarks/HISTORY.md).
        reader = SystemReader(root, local, streaming=True, budget=TableBudget(spill=spill), sharing=sharing)
        reader.read(paths)
        data.nodes = reader.tables()
        data.files_read = reader.files_read
    except _Restart:
        # A node's records turned up in another node's files after its table was built: read
        # everything again and build all tables at the end (memory then grows with the data).
        local = ProblemLog(cap=problems.cap)
        first = reader.files_read
        reader = SystemReader(root, local, streaming=False, budget=TableBudget(spill=spill))
        reader.read(paths)
        data.nodes = reader.tables()
        data.files_read = first + reader.files_read
    problems.merge(local)
    trim_heap()  # the last nodes' records: give their pages back before the rules run
    return data
