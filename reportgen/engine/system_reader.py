"""System metrics (JSON lines, spec A.2) -> one per-tick table per node.

Fast path: DuckDB's ``read_json`` parses batches of files in C++ and hands back four numeric columns
(series hash, timestamp, value, "bad row" flag), so no Python object is made per record. A batch with
any anomaly is re-read file by file; a file that DuckDB rejects or that holds anomalies is parsed
line by line in Python (``_careful_parse``) so every valid line is kept and every bad one is recorded
with its line number. Records of one sampling instant carry timestamps a few ms apart; they are
grouped into ticks by clustering the node's sorted distinct timestamps (gap > threshold = new tick),
which is robust to sampler drift.
"""

from __future__ import annotations

import json
import math
import re
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
_CATALOG_SQL = f"""
SELECT DISTINCT hash(NodeId, Type, Name, Dimension) AS h, NodeId, Type, Name, Dimension
FROM {_READ}
WHERE NodeId IS NOT NULL AND Type IS NOT NULL AND Name IS NOT NULL AND Dimension IS NOT NULL
"""


def series_label(name: str, dimension: str) -> str:
    return f"{name}/{dimension}" if dimension else name


def _natural_key(s: str):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s)]


@dataclass
class NodeSystem:
    """Per-tick table of one node: ``values[tick, column]``, NaN where a series has no sample."""

    node: str
    interval_s: float
    tick_ts: np.ndarray  # float64 seconds: earliest record timestamp of each tick (sorted)
    columns: list[str]  # e.g. "cpu0/CPUUtilization", "gpu1/GPUMemoryUtilization", "MemoryUsedPercent"
    types: list[str]
    names: list[str]
    dims: list[str]
    values: np.ndarray  # float64 (ticks x columns)
    first_ts: float = math.nan  # earliest / latest raw record timestamp (s)
    last_ts: float = math.nan

    def select(self, dimension: str | None = None, name: str | None = None) -> tuple[list[str], np.ndarray]:
        """Names and the sub-matrix of the columns with that dimension (and/or name)."""
        idx = [
            i
            for i in range(len(self.columns))
            if (dimension is None or self.dims[i] == dimension) and (name is None or self.names[i] == name)
        ]
        return [self.names[i] for i in idx], self.values[:, idx]


@dataclass
class SystemData:
    nodes: dict[str, NodeSystem] = field(default_factory=dict)
    first_file_key_us: int | None = None
    last_file_key_us: int | None = None
    files: int = 0


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
            m = slice(None) if len(present) == 1 else node_codes == n
            self.chunks.setdefault(self.node_names[n], []).append((sids[m], ts[m], vals[m]))


def _is_percent(key: tuple) -> bool:
    _, _, name, dim = key
    return dim in PERCENT_DIMENSIONS or name in PERCENT_NAMES


class SystemReader:
    def __init__(self, root: Path, problems: ProblemLog):
        import duckdb

        self.root = root
        self.problems = problems
        self.acc = _Accumulator(problems, root)
        self.con = duckdb.connect()
        self.con.execute("SET threads=2")
        self.con.execute("SET preserve_insertion_order=false")  # order is not relied upon
        self._duck_error = duckdb.Error

    # -- fast path -------------------------------------------------------------------------------
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
        """Line-by-line parse of one file: keep every valid line, record every bad one."""
        rel = self.acc.rel(path)
        try:
            data = path.read_bytes()
        except OSError as e:
            self.problems.add(rel, None, f"unreadable file: {e.strerror or e}")
            return
        if not data.strip():
            self.problems.add(rel, None, "empty file")
            return
        lines = data.split(b"\n")
        ends_with_newline = data.endswith(b"\n")
        if ends_with_newline:
            lines = lines[:-1]
        sids, tss, vals = [], [], []
        last_ts_of_node: dict[str, float] = {}
        n_lines = len(lines)
        for i, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            is_last = i == n_lines and not ends_with_newline
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                self.problems.add(rel, i, "non-UTF-8 bytes")
                continue
            try:
                rec = json.loads(text)
            except ValueError:
                self.problems.add(rel, i, "truncated last line" if is_last else "malformed JSON line")
                continue
            if not isinstance(rec, dict):
                self.problems.add(rel, i, "record is not a JSON object")
                continue
            typ, name, dim, node = rec.get("Type"), rec.get("Name"), rec.get("Dimension"), rec.get("NodeId")
            value, ts = rec.get("Value"), rec.get("Timestamp")
            if not all(isinstance(x, str) for x in (typ, name, dim, node)):
                self.problems.add(rel, i, "missing or non-string Type/Name/Dimension/NodeId")
                continue
            if typ not in KNOWN_TYPES:
                self.problems.add(rel, i, "unknown record type")
                continue
            if not _is_number(value) or not _is_number(ts):
                self.problems.add(rel, i, "missing or non-numeric Value/Timestamp")
                continue
            value, ts = float(value), float(ts)
            if not (math.isfinite(value) and math.isfinite(ts)):
                self.problems.add(rel, i, "non-finite value (dropped)")
                continue
            key = (node, typ, name, dim)
            if value < 0 or (_is_percent(key) and value > 100.0):
                self.problems.add(rel, i, "out-of-range value (kept)")
            prev = last_ts_of_node.get(node)
            if prev is not None and ts < prev - 0.05:
                self.problems.add(rel, i, "out-of-order timestamp (kept, re-sorted)")
            last_ts_of_node[node] = ts if prev is None else max(prev, ts)
            sids.append(self.acc.sid(key))
            tss.append(ts)
            vals.append(value)
        self.acc.add(np.array(sids, np.int32), np.array(tss, np.float64), np.array(vals, np.float64))

    def _single(self, path: Path) -> None:
        if path.stat().st_size == 0:
            self.problems.add(self.acc.rel(path), None, "empty file")
            return
        r = self._fast([path])
        if r is None:
            self._careful(path)
        else:
            self.acc.add(*r)

    def read(self, files: list[Path]) -> None:
        for i in range(0, len(files), BATCH_FILES):
            batch = files[i : i + BATCH_FILES]
            nonempty = [f for f in batch if f.stat().st_size > 0]
            r = self._fast(nonempty) if len(nonempty) == len(batch) else None
            if r is None:
                for f in batch:
                    self._single(f)
            else:
                self.acc.add(*r)

    # -- tick tables -----------------------------------------------------------------------------
    def tables(self) -> dict[str, NodeSystem]:
        out = {}
        for node in sorted(self.acc.chunks, key=_natural_key):
            chunks = self.acc.chunks.pop(node)
            sids = np.concatenate([c[0] for c in chunks])
            ts = np.concatenate([c[1] for c in chunks])
            vals = np.concatenate([c[2] for c in chunks])
            del chunks
            if len(sids) == 0:
                continue
            out[node] = _build_table(node, sids, ts, vals, self.acc.keys, self.problems)
        return out


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


_TYPE_ORDER = {t: i for i, t in enumerate(KNOWN_TYPES)}


def _build_table(node, sids, ts, vals, keys, problems: ProblemLog) -> NodeSystem:
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
    n_ticks, n_cols = len(starts), len(order)

    flat = tick.astype(np.int64) * n_cols + cols
    counts = np.bincount(flat, minlength=n_ticks * n_cols)
    dups = int((counts[counts > 1] - 1).sum())
    if dups:
        problems.add(f"system/{node}", None, "duplicate sample for a series within one tick (last kept)", dups)
    values = np.full((n_ticks, n_cols), np.nan)
    values.reshape(-1)[flat] = vals
    return NodeSystem(
        node=node,
        interval_s=interval,
        tick_ts=starts.astype(np.float64),
        columns=[series_label(keys[s][2], keys[s][3]) for s in order],
        types=[keys[s][1] for s in order],
        names=[keys[s][2] for s in order],
        dims=[keys[s][3] for s in order],
        values=values,
        first_ts=float(uniq[0]),
        last_ts=float(uniq[-1]),
    )


def read_system(root: Path, problems: ProblemLog) -> SystemData:
    files = list_system_files(root)
    data = SystemData(files=len(files))
    if not files:
        return data
    data.first_file_key_us = files[0][0]
    data.last_file_key_us = files[-1][0]
    reader = SystemReader(root, problems)
    reader.read([p for _, p in files])
    data.nodes = reader.tables()
    return data
