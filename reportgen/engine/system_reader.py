"""System metrics (JSON lines, spec A.2) -> one per-tick table per node.

Fast path: one DuckDB ``read_json`` query per node (all of the node's files at once, scanned by
every thread) groups the records by series in C++ and hands back, per series, its identity, a numpy
array of timestamps, one of values and a count of anomalous rows, so no Python object is made per
record. The node's tick table is built right away and the raw records are dropped, so memory holds
one node's records at a time plus the (compact) tick tables. A node with any anomaly (DuckDB parse
error, empty file, missing field, unknown type, non-finite, negative or >100 % value) goes through
the batch path instead: batches of files, then file by file; a file that DuckDB rejects or that holds
anomalies is parsed line by line in Python (``_careful``) so every valid line is kept and every bad
one is recorded with its line number. Records of one sampling instant carry timestamps a few ms apart; they are
grouped into ticks by clustering the node's sorted distinct timestamps (gap > threshold = new tick),
which is robust to sampler drift.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.engine.problems import ProblemLog

SYSTEM_FILE_RE = re.compile(r"^(\d{10})\.([A-Za-z0-9_.\-]+)\.json$")
KNOWN_TYPES = ("cpu", "gpu", "memory", "i/o", "network")
PERCENT_DIMENSIONS = {"CPUUtilization", "I/OWaitPercentage", "GPUUtilization", "GPUMemoryUtilization"}
PERCENT_NAMES = {"MemoryUsedPercent"}
BATCH_FILES = 48
# Smaller files cannot hold one record (~100 bytes): they go to the careful path, which reports
# blank/whitespace-only files (DuckDB reads them as zero rows) and files that vanished.
MIN_RECORD_BYTES = 48

_COLUMNS = "{Type:'VARCHAR',Name:'VARCHAR',Dimension:'VARCHAR',Value:'DOUBLE',NodeId:'VARCHAR',Timestamp:'DOUBLE'}"
_TYPES_SQL = ", ".join(f"'{t}'" for t in KNOWN_TYPES)
_READ = f"read_json($files, format='newline_delimited', columns={_COLUMNS})"
# Python gets only numbers: a hash of the series identity (mapped to our series id with a sorted
# lookup), timestamp, value and a ``bad`` flag for rows the careful path must look at (missing
# fields, unknown type, non-finite or negative values). Row order is NOT guaranteed.
_FAST_SQL = f"""
SELECT hash(NodeId, Type, Name, Dimension) AS h,
       coalesce(Timestamp, 0.0) AS ts,
       coalesce(Value, 0.0) AS v,
       (NodeId IS NULL OR Type IS NULL OR Name IS NULL OR Dimension IS NULL OR Value IS NULL
        OR Timestamp IS NULL OR Type NOT IN ({_TYPES_SQL})
        OR NOT isfinite(Value) OR NOT isfinite(Timestamp) OR Value < 0)::TINYINT AS bad
FROM {_READ}
"""
# Per-node fast path: records grouped by series, timestamps and values as lists (numpy arrays in
# Python), anomalous rows counted (any count > 0 sends the node to the batch path).
_GROUPED_SQL = f"""
SELECT NodeId, Type, Name, Dimension,
       list(coalesce(Timestamp, 0.0)) AS ts,
       list(coalesce(Value, 0.0)) AS v,
       count_if(NodeId IS NULL OR Type IS NULL OR Name IS NULL OR Dimension IS NULL OR Value IS NULL
                OR Timestamp IS NULL OR Type NOT IN ({_TYPES_SQL})
                OR NOT isfinite(Value) OR NOT isfinite(Timestamp) OR Value < 0) AS bad
FROM {_READ}
GROUP BY ALL
"""
_CATALOG_SQL = f"""
SELECT DISTINCT hash(NodeId, Type, Name, Dimension) AS h, NodeId, Type, Name, Dimension
FROM {_READ}
WHERE NodeId IS NOT NULL AND Type IS NOT NULL AND Name IS NOT NULL AND Dimension IS NOT NULL
"""


def series_label(name: str, dimension: str) -> str:
    return f"{name}/{dimension}" if dimension else name


def _natural_key(s: str):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s)]


_SCALES = (100.0, 1.0)  # decimal scales tried for the integer encodings (100 covers 0-2 decimals)


def _encode_columns(values: np.ndarray) -> list[tuple[np.ndarray, float]]:
    """Per column the smallest LOSSLESS representation: ``(int16|int32 codes, scale)`` when every
    value is exactly ``code / scale`` (NaN = the dtype's minimum), else ``(float32, 0)`` when float32
    round-trips every value, else ``(float64, 0)``. Decoding gives back the identical float64 bits,
    so the rules see exactly the parsed values (real metrics have 0-2 decimals: 2 bytes per value)."""
    out: list = []
    for b in range(0, values.shape[1], _ENCODE_BLOCK):  # blocks bound the temporaries
        out += _encode_block(values[:, b : b + _ENCODE_BLOCK])
    return out


_ENCODE_BLOCK = 32


def _encode_block(values: np.ndarray) -> list[tuple[np.ndarray, float]]:
    n, k = values.shape
    out: list = [None] * k
    nan = np.isnan(values)
    todo = np.arange(k)
    with np.errstate(invalid="ignore", over="ignore"):
        negzero = ((values == 0) & np.signbit(values)).any(axis=0)
        for scale in _SCALES:
            if not len(todo):
                break
            m = values[:, todo]
            codes = np.rint(m * scale)
            exact = ((codes / scale == m) | nan[:, todo]).all(axis=0) & ~negzero[todo]
            lo = np.where(nan[:, todo], 0, codes).min(axis=0, initial=0)
            hi = np.where(nan[:, todo], 0, codes).max(axis=0, initial=0)
            for j in np.nonzero(exact)[0]:
                for dt in (np.int16, np.int32):
                    info = np.iinfo(dt)
                    if info.min < lo[j] and hi[j] <= info.max:
                        c = codes[:, j]
                        arr = np.where(nan[:, todo[j]], info.min, np.nan_to_num(c)).astype(dt)
                        out[todo[j]] = (arr, scale)
                        break
            todo = np.array([j for j in todo if out[j] is None], dtype=np.int64)
    for j in todo:
        col = values[:, j]
        f32 = col.astype(np.float32)
        with np.errstate(invalid="ignore"):
            same = (f32.astype(np.float64) == col) | nan[:, j]
        out[j] = (f32, 0.0) if same.all() else (np.ascontiguousarray(col), 0.0)
    return out


def _decode(arr: np.ndarray, scale: float, dst: np.ndarray) -> None:
    if scale:
        np.divide(arr, scale, out=dst, dtype=np.float64)
        dst[arr == np.iinfo(arr.dtype).min] = np.nan
    else:
        dst[:] = arr


class NodeSystem:
    """Per-tick table of one node: ``values[tick, column]``, NaN where a series has no sample.

    The table is stored column by column in a lossless compact encoding (see ``_encode_columns``);
    ``take(idx)`` / ``select(...)`` decode only the columns asked for, ``values`` decodes all."""

    def __init__(self, node: str, interval_s: float, tick_ts: np.ndarray, columns: list[str], types: list[str],
                 names: list[str], dims: list[str], values: np.ndarray, first_ts: float = math.nan,
                 last_ts: float = math.nan):
        self.node = node
        self.interval_s = interval_s
        self.tick_ts = tick_ts  # float64 seconds: earliest record timestamp of each tick (sorted)
        self.columns = columns  # e.g. "cpu0/CPUUtilization", "gpu1/GPUMemoryUtilization", "MemoryUsedPercent"
        self.types = types
        self.names = names
        self.dims = dims
        self.first_ts = first_ts  # earliest / latest raw record timestamp (s)
        self.last_ts = last_ts
        values = np.asarray(values, dtype=np.float64).reshape(len(tick_ts), len(columns))
        self._n = values.shape[0]
        self._store = _encode_columns(values)

    def __repr__(self) -> str:
        return f"NodeSystem({self.node!r}, ticks={self._n}, columns={len(self.columns)}, {self.nbytes / 1e6:.1f} MB)"

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a, _ in self._store) + self.tick_ts.nbytes)

    @property
    def shape(self) -> tuple[int, int]:
        return self._n, len(self.columns)

    def take(self, idx) -> np.ndarray:
        """float64 (ticks x len(idx)) matrix of the given column indices, Fortran-ordered exactly like
        the ``matrix[:, idx]`` copy it replaces, so reductions along rows add in the same order and
        give bit-identical results."""
        idx = list(idx)
        out = np.empty((self._n, len(idx)), dtype=np.float64, order="F")
        for k, j in enumerate(idx):
            _decode(*self._store[j], out[:, k])
        return out

    @property
    def values(self) -> np.ndarray:
        """The whole table as a C-ordered float64 array (a fresh copy on every access)."""
        return np.ascontiguousarray(self.take(range(len(self.columns))))

    def select(self, dimension: str | None = None, name: str | None = None) -> tuple[list[str], np.ndarray]:
        """Names and the sub-matrix of the columns with that dimension (and/or name)."""
        idx = [
            i
            for i in range(len(self.columns))
            if (dimension is None or self.dims[i] == dimension) and (name is None or self.names[i] == name)
        ]
        return [self.names[i] for i in idx], self.take(idx)


@dataclass
class SystemData:
    nodes: dict[str, NodeSystem] = field(default_factory=dict)
    first_file_key_us: int | None = None
    last_file_key_us: int | None = None
    files: int = 0
    files_read: int = 0  # system files actually parsed by this run (0 when all came from the cache)
    file_keys_us: list[int] = field(default_factory=list)  # minute key of every file (clock-jump check)


def list_system_files(root: Path) -> list[tuple[int, Path]]:
    """``(minute key in µs, path)`` sorted by key then path, for every ``<epoch>.<node>.json`` under system/."""
    out = []
    sysdir = root / "system"
    if not sysdir.is_dir():
        return out
    for p in sysdir.rglob("*.json"):
        m = SYSTEM_FILE_RE.match(p.name)
        if m and p.is_file():
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


class _Restart(Exception):
    """Records of a node turned up after its table was built (a file named for another node)."""


def _is_percent(key: tuple) -> bool:
    _, _, name, dim = key
    return dim in PERCENT_DIMENSIONS or name in PERCENT_NAMES


class SystemReader:
    def __init__(self, root: Path, problems: ProblemLog, streaming: bool = True):
        import duckdb

        self.root = root
        self.streaming = streaming
        self.out: dict[str, NodeSystem] = {}
        self.files_read = 0  # files handed to ``read`` (what incremental mode is checked by)
        self.problems = problems
        self.acc = _Accumulator(problems, root)
        self.con = duckdb.connect()
        self.con.execute("SET threads=2")
        self.con.execute("SET preserve_insertion_order=false")  # order is not relied upon
        try:  # no terminal output from a library; in Jupyter DuckDB refuses the change without ipywidgets
            self.con.execute("SET enable_progress_bar=false")
        except duckdb.Error:
            pass
        # DuckDB's error text quotes the bad line cut at a byte count; when the cut splits a UTF-8
        # character, building the message raises UnicodeDecodeError instead (found by fuzzing).
        self._duck_error = (duckdb.Error, UnicodeDecodeError)

    # -- per-node fast path ----------------------------------------------------------------------
    def _grouped(self, files: list[Path]):
        """``(sids, ts, values)`` of all ``files`` from one grouped query, or None when DuckDB
        rejects them or anything looks anomalous (then the batch path takes over)."""
        if not files or any(_size(f) < MIN_RECORD_BYTES for f in files):
            return None
        try:
            r = self.con.execute(_GROUPED_SQL, {"files": [str(f) for f in files]}).fetchnumpy()
        except self._duck_error:
            return None
        if np.asarray(r["bad"]).any():
            return None
        keys = list(zip(r["NodeId"].tolist(), r["Type"].tolist(), r["Name"].tolist(), r["Dimension"].tolist()))
        ts_l, v_l = list(r["ts"]), list(r["v"])
        if not keys:
            return None
        for key, v in zip(keys, v_l):
            if len(v) and _is_percent(key) and np.max(v) > 100.0:
                return None
        sids = np.array([self.acc.sid(k) for k in keys], dtype=np.int32)
        lens = np.array([len(t) for t in ts_l], dtype=np.int64)
        ts = np.concatenate(ts_l).astype(np.float64, copy=False)
        del ts_l, r
        vals = np.concatenate(v_l).astype(np.float64, copy=False)
        return np.repeat(sids, lens), ts, vals

    # -- batch path ------------------------------------------------------------------------------
    def _fast(self, files: list[Path], retry: bool = True):
        """Numeric columns for ``files`` or None if DuckDB rejects them or any row looks anomalous."""
        names = [str(f) for f in files]
        try:
            r = self.con.execute(_FAST_SQL, {"files": names}).fetchnumpy()
        except self._duck_error:
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
            except self._duck_error:
                return None
            for hh, node, typ, name, dim in new:
                self.acc.add_hash(int(hh), (node, typ, name, dim))
            return self._fast(files, retry=False)
        sids = cat_sid[pos]
        if (self.acc.pct_index()[sids] & (v > 100.0)).any():
            return None
        # No out-of-order check here: DuckDB does not guarantee row order across its parallel chunks,
        # and ticks are built from sorted timestamps anyway (the careful path does report it).
        return sids, ts, v

    # -- careful path ----------------------------------------------------------------------------
    def _careful(self, path: Path) -> None:
        """Line-by-line parse of one file: keep every valid line, record every bad one.

        Streams the file (one line in memory at a time) into compact arrays (20 bytes per record),
        so a multi-GB file with one bad line costs about what its records take, not 10x the file."""
        rel = self.acc.rel(path)
        sids, tss, vals = array("i"), array("d"), array("d")
        last_ts_of_node: dict[str, float] = {}
        seen_data = False
        try:
            with open(path, "rb") as fh:
                for i, raw in enumerate(fh, start=1):
                    if i == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark is not data
                        raw = raw[3:]
                    if not raw.strip():
                        continue
                    seen_data = True
                    rec = self._record(rel, i, raw, last_ts_of_node)
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

    def _record(self, rel: str, i: int, raw: bytes, last_ts_of_node: dict) -> tuple[int, float, float] | None:
        """One line -> (series id, timestamp, value), or None with the problem recorded."""
        is_last = not raw.endswith(b"\n")  # only the last line can lack its newline
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self.problems.add(rel, i, "non-UTF-8 bytes")
            return None
        try:
            rec = json.loads(text)
        except ValueError:
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
        if not _is_number(value) or not _is_number(ts):
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
        r = self._fast([path]) if size >= MIN_RECORD_BYTES else None
        if r is None:
            self._careful(path)
        else:
            self.acc.add(*r)

    def read(self, files: list[Path]) -> None:
        """Node by node (files grouped by the node in their name): one grouped query, or the batch
        path when it reports anomalies; in streaming mode each node's table is built right after."""
        self.files_read += len(files)
        groups: dict[str, list[Path]] = {}
        for f in files:
            m = SYSTEM_FILE_RE.match(f.name)
            groups.setdefault(m.group(2) if m else "", []).append(f)
        order = sorted(groups, key=_natural_key)
        for i, g in enumerate(order):
            r = self._grouped(groups[g])
            if r is None:
                self._read_batches(groups[g])
            else:
                self.acc.add(*r)
                del r
            if self.streaming:
                later = set(order[i + 1 :])
                for node in [n for n in self.acc.chunks if n not in later]:
                    self._finish(node)

    def _finish(self, node: str) -> None:
        chunks = self.acc.chunks.pop(node)
        self.acc.built.add(node)
        table = _build_table(node, chunks, self.acc.keys, self.problems)
        if table is not None:
            self.out[node] = table

    def _read_batches(self, files: list[Path]) -> None:
        for i in range(0, len(files), BATCH_FILES):
            batch = files[i : i + BATCH_FILES]
            nonempty = [f for f in batch if _size(f) >= MIN_RECORD_BYTES]
            r = self._fast(nonempty) if len(nonempty) == len(batch) else None
            if r is None:
                for f in batch:
                    self._single(f)
            else:
                self.acc.add(*r)

    # -- tick tables -----------------------------------------------------------------------------
    def tables(self) -> dict[str, NodeSystem]:
        for node in list(self.acc.chunks):
            self._finish(node)
        return {node: self.out[node] for node in sorted(self.out, key=_natural_key)}


def _size(path: Path) -> int:
    """Size in bytes, -1 when the file cannot be stat'ed (vanished, dangling link): the careful
    path then records it as unreadable."""
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


_TYPE_ORDER = {t: i for i, t in enumerate(KNOWN_TYPES)}


def _build_table(node, chunks: list, keys, problems: ProblemLog) -> NodeSystem | None:
    """Tick table from the node's record chunks (the list is emptied to free them early)."""
    if len(chunks) == 1:  # the per-node fast path: no copy
        sids, ts, vals = chunks[0]
    else:
        sids = np.concatenate([c[0] for c in chunks])
        ts = np.concatenate([c[1] for c in chunks])
        vals = np.concatenate([c[2] for c in chunks])
    chunks.clear()
    if len(sids) == 0:
        return None
    node_sids = np.unique(sids)
    order = sorted(
        node_sids.tolist(),
        key=lambda s: (_TYPE_ORDER.get(keys[s][1], 9), keys[s][3], _natural_key(keys[s][2])),
    )
    col_of_sid = np.full(len(keys), -1, np.int32)
    col_of_sid[order] = np.arange(len(order), dtype=np.int32)
    cols = col_of_sid[sids]

    uniq = np.sort(pd.unique(ts))
    gaps = np.diff(uniq)
    big = gaps[gaps > 0.02]
    interval = float(np.median(big)) if len(big) else 0.5
    # Records of one instant are a few ms apart (<= ~5 ms seen); instants are >= 100 ms apart.
    threshold = min(max(0.02, 0.25 * interval), 0.05)
    starts = uniq[np.r_[True, gaps > threshold]]
    if len(starts) > 1:
        interval = float(np.median(np.diff(starts)))
    tick = np.searchsorted(starts, ts, side="right") - 1
    del ts
    n_ticks, n_cols = len(starts), len(order)

    flat = tick.astype(np.int64) * n_cols + cols
    counts = np.bincount(flat, minlength=n_ticks * n_cols)
    dups = int((counts[counts > 1] - 1).sum())
    if dups:
        problems.add(f"system/{node}", None, "duplicate sample for a series within one tick (last kept)", dups)
    del counts, tick
    values = np.full((n_ticks, n_cols), np.nan)
    values.reshape(-1)[flat] = vals
    first_ts, last_ts = float(uniq[0]), float(uniq[-1])
    del flat, vals, sids, uniq, gaps, cols
    table = NodeSystem(
        node=node,
        interval_s=interval,
        tick_ts=starts.astype(np.float64),
        columns=[series_label(keys[s][2], keys[s][3]) for s in order],
        types=[keys[s][1] for s in order],
        names=[keys[s][2] for s in order],
        dims=[keys[s][3] for s in order],
        values=values,
        first_ts=first_ts,
        last_ts=last_ts,
    )
    del values
    _trim_heap()
    return table


def _trim_heap() -> None:
    """Give the freed heap pages of the node's raw records back to the OS (glibc keeps them
    otherwise, so the peak RSS would carry every node's temporaries); a no-op elsewhere."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        try:
            import ctypes

            _MALLOC_TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM = None


def read_system(root: Path, problems: ProblemLog, *, client=None, cache_root: Path | None = None,
                s3=None) -> SystemData:
    """All system metrics of ``root`` as per-node tick tables.

    Without options: this process reads node by node (below). ``client`` (a ``dask.distributed``
    Client), ``cache_root`` (``--incremental``: reuse the records of unchanged files) or ``s3``
    (objects the Dask workers fetch themselves) hand the work to ``reportgen.engine.distributed``,
    which reads the same pieces with the same reader and gives identical tables."""
    if client is not None or cache_root is not None or s3 is not None:
        from reportgen.engine.distributed import read_pieces

        data, _ = read_pieces(root, problems, client=client, cache_root=cache_root, s3=s3)
        return data
    files = list_system_files(root)
    data = SystemData(files=len(files), file_keys_us=[k for k, _ in files])
    if not files:
        return data
    data.first_file_key_us = files[0][0]
    data.last_file_key_us = files[-1][0]
    paths = [p for _, p in files]
    # Problems go to a local log first, so a restart does not report them twice.
    local = ProblemLog(cap=problems.cap)
    try:
        reader = SystemReader(root, local, streaming=True)
        reader.read(paths)
        data.nodes = reader.tables()
        data.files_read = reader.files_read
    except _Restart:
        # A node's records turned up in another node's files after its table was built: read
        # everything again and build all tables at the end (memory then grows with the data).
        local = ProblemLog(cap=problems.cap)
        first = reader.files_read
        reader = SystemReader(root, local, streaming=False)
        reader.read(paths)
        data.nodes = reader.tables()
        data.files_read = first + reader.files_read
    for reason, n in local.counts.items():
        problems.counts[reason] += n
    problems.items.extend(local.items[: max(problems.cap - len(problems.items), 0)])
    return data
