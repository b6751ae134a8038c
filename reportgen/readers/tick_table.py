"""One node's system metrics as a per-tick table, stored column by column in a lossless compact
encoding (``encode_columns``: 2 bytes per value for metrics with 0-2 decimals), and the set of a
profile's node tables (``SystemData``). The readers build them; the rules read them through
``engine.model.NodeTable``."""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field

import numpy as np

from reportgen.environment import megabytes

_SCALES = (100.0, 1.0)  # decimal scales tried for the integer encodings (100 covers 0-2 decimals)


def encode_columns(values: np.ndarray) -> list[tuple[np.ndarray, float]]:
    """Per column the smallest LOSSLESS representation: ``(int16|int32 codes, scale)`` when every
    value is exactly ``code / scale`` (NaN = the dtype's minimum), else ``(float32, 0)`` when float32
    round-trips every value, else ``(float64, 0)``. Decoding gives back the identical float64 bits,
    so the rules see exactly the parsed values (real metrics have 0-2 decimals: 2 bytes per value)."""
    out: list = []
    for b in range(0, values.shape[1], _ENCODE_BLOCK):  # blocks bound the temporaries
        out += encode_block(values[:, b : b + _ENCODE_BLOCK])
    return out


_ENCODE_BLOCK = 32


_NEGATIVE_ZERO_BITS = np.float64(-0.0).view(np.uint64)


def encode_block(values: np.ndarray) -> list[tuple[np.ndarray, float]]:
    values = np.asarray(values, dtype=np.float64)  # float64 already (no copy): its bits are read as uint64 below
    n, k = values.shape
    out: list = [None] * k
    nan = np.isnan(values)
    gaps = bool(nan.any())  # without a NaN every mask below is all False: its passes are skipped
    todo = np.arange(k)
    with np.errstate(invalid="ignore", over="ignore"):
        # -0.0 (no integer code keeps its sign): one comparison of the bits, not ``== 0`` and ``signbit``
        negzero = (values.view(np.uint64) == _NEGATIVE_ZERO_BITS).any(axis=0)
        for scale in _SCALES:
            if not len(todo):
                break
            m = values[:, todo]  # a copy: the passes below run on contiguous memory
            codes = np.multiply(m, scale)
            np.rint(codes, out=codes)  # in place: one temporary, not two
            same = codes / scale == m
            filled = codes
            if gaps:
                same |= nan[:, todo]
                filled = np.where(nan[:, todo], 0, codes)
            exact = same.all(axis=0) & ~negzero[todo]
            lo = filled.min(axis=0, initial=0)
            hi = filled.max(axis=0, initial=0)
            for j in np.nonzero(exact)[0]:
                for dt in (np.int16, np.int32):
                    info = np.iinfo(dt)
                    if info.min < lo[j] and hi[j] <= info.max:
                        c = codes[:, j]  # exact and in range: finite, so no NaN to replace without gaps
                        arr = np.where(nan[:, todo[j]], info.min, np.nan_to_num(c)) if gaps else c
                        out[todo[j]] = (arr.astype(dt), scale)
                        break
            todo = np.array([j for j in todo if out[j] is None], dtype=np.int64)
    for j in todo:
        col = values[:, j]
        with np.errstate(invalid="ignore", over="ignore"):  # beyond float32: inf, then not "same"
            f32 = col.astype(np.float32)
            same = f32.astype(np.float64) == col
            if gaps:
                same |= nan[:, j]
        out[j] = (f32, 0.0) if same.all() else (np.ascontiguousarray(col), 0.0)
    return out


class Spilled:
    """Where one encoded column lies in a ``ColumnSpill`` file: read back by ``decode``."""

    __slots__ = ("spill", "offset", "dtype", "n")

    def __init__(self, spill: "ColumnSpill", offset: int, dtype: np.dtype, n: int):
        self.spill, self.offset, self.dtype, self.n = spill, offset, dtype, n

    @property
    def nbytes(self) -> int:
        return 0  # held on disk, not in memory

    def load(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        return self.spill.read(self, start, self.n if stop is None else stop)


class ColumnSpill:
    """Encoded columns written to one anonymous temporary file and read back per use, so that a
    profile's tick tables do not hold memory that grows with the job's duration (16 nodes x 8 h:
    ~420 MB of columns). The file is unlinked from the start (``tempfile.TemporaryFile``): nothing
    is left on disk whatever ends the run, and the space goes when the last table is collected."""

    def __init__(self, folder: str | None = None):
        self._file = tempfile.TemporaryFile(prefix="reportgen-columns-", dir=folder)
        self._end = 0
        self.bytes = 0

    def write(self, arr: np.ndarray) -> Spilled:
        data = np.ascontiguousarray(arr)
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):  # a full disk gives a short write, not an error
            wrote = os.pwrite(self._file.fileno(), view[done:], self._end + done)
            if wrote <= 0:
                raise OSError("no space left for the spilled columns")
            done += wrote
        ref = Spilled(self, self._end, data.dtype, len(data))
        self._end += data.nbytes
        self.bytes += data.nbytes
        return ref

    def read(self, ref: Spilled, start: int, stop: int) -> np.ndarray:
        """Values ``start:stop`` of a spilled column."""
        stop = max(start, min(stop, ref.n))
        size = (stop - start) * ref.dtype.itemsize
        at = ref.offset + start * ref.dtype.itemsize
        buf = bytearray(size)
        view = memoryview(buf)
        done = 0
        while done < size:  # pread may return less than asked
            got = os.preadv(self._file.fileno(), [view[done:]], at + done)
            if got <= 0:
                raise OSError(f"the spilled columns' file ended at {at + done} of {at + size}")
            done += got
        return np.frombuffer(buf, dtype=ref.dtype)


def spill_budget_bytes() -> int:
    """``REPORTGEN_TABLES_MEMORY_MB`` (default 64): how much of the tick tables stays in memory
    before the next tables' columns go to a ``ColumnSpill`` file (0: every table spilled)."""
    return megabytes("REPORTGEN_TABLES_MEMORY_MB")


class TableBudget:
    """Keeps tick tables in memory up to ``limit`` bytes, then spills each further table's columns
    (``NodeSystem.spill``) as it is handed over. A spill file that cannot be made or written (no
    temporary folder, a full disk) costs memory, not the run: the table stays in memory."""

    def __init__(self, limit: int | None = None, folder: str | None = None, spill: ColumnSpill | None = None):
        self.limit = spill_budget_bytes() if limit is None else limit
        self.folder = folder
        self.held = 0
        self._spill = spill  # made at the first spill when not given (a forked reader is given its parent's)
        self._failed = False

    def hold(self, table: "NodeSystem") -> "NodeSystem":
        size = table.nbytes - table.tick_ts.nbytes
        if self.held + size <= self.limit or self._failed:
            self.held += size
            return table
        try:
            if self._spill is None:
                self._spill = ColumnSpill(self.folder)
            table.spill(self._spill)
        except OSError:
            self._failed = True
            self.held += size
        return table


def decode(arr, scale: float, dst: np.ndarray, start: int = 0, stop: int | None = None) -> None:
    """Rows ``start:stop`` of an encoded column into ``dst`` (float64)."""
    if isinstance(arr, Spilled):
        arr = arr.load(start, stop)
    elif start or stop is not None:
        arr = arr[start:stop]
    if scale:
        np.divide(arr, scale, out=dst, dtype=np.float64)
        dst[arr == np.iinfo(arr.dtype).min] = np.nan
    else:
        dst[:] = arr


def encode_placed(v: np.ndarray, tick: np.ndarray, n: int) -> tuple[np.ndarray, float]:
    """``encode_block``'s choice for one column whose ticks ``tick`` hold the finite values ``v``
    and whose other ticks are empty (NaN), computed from ``v`` alone: the same representation,
    dtype and scale, bit for bit, without building the float64 column first."""
    with np.errstate(invalid="ignore", over="ignore"):
        if not ((v == 0) & np.signbit(v)).any():
            for scale in _SCALES:
                codes = np.rint(v * scale)
                if not (codes / scale == v).all():
                    continue
                lo = min(float(codes.min(initial=0)), 0.0)
                hi = max(float(codes.max(initial=0)), 0.0)
                for dt in (np.int16, np.int32):
                    info = np.iinfo(dt)
                    if info.min < lo and hi <= info.max:
                        arr = np.full(n, info.min, dtype=dt)
                        arr[tick] = codes.astype(dt)
                        return arr, scale
        f32 = v.astype(np.float32)
        if (f32.astype(np.float64) == v).all():
            arr = np.full(n, np.nan, dtype=np.float32)
            arr[tick] = f32
            return arr, 0.0
    arr = np.full(n, np.nan)
    arr[tick] = v
    return arr, 0.0


ROW_BLOCK = 16384  # ticks per block of ``NodeSystem.row_blocks`` (2 h 16 min at 0.5 s; 96 cores: 12.6 MB)


class NodeSystem:
    """Per-tick table of one node: ``values[tick, column]``, NaN where a series has no sample.

    The table is stored column by column in a lossless compact encoding (see ``encode_columns``);
    ``take(idx)`` / ``select(...)`` decode only the columns asked for, ``values`` decodes all."""

    def __init__(self, node: str, interval_s: float, tick_ts: np.ndarray, columns: list[str], types: list[str],
                 names: list[str], dims: list[str], values: np.ndarray | None, first_ts: float = math.nan,
                 last_ts: float = math.nan, store: list | None = None):
        self.node = node
        self.interval_s = interval_s
        self.tick_ts = tick_ts  # float64 seconds: earliest record timestamp of each tick (sorted)
        self.columns = columns  # e.g. "cpu0/CPUUtilization", "gpu1/GPUMemoryUtilization", "MemoryUsedPercent"
        self.types = types
        self.names = names
        self.dims = dims
        self.first_ts = first_ts  # earliest / latest raw record timestamp (s)
        self.last_ts = last_ts
        if store is not None:  # columns already encoded (``tick_build`` encodes them series by series)
            self._n = len(tick_ts)
            self._store = store
            return
        values = np.asarray(values, dtype=np.float64).reshape(len(tick_ts), len(columns))
        self._n = values.shape[0]
        self._store = encode_columns(values)

    def __repr__(self) -> str:
        return f"NodeSystem({self.node!r}, ticks={self._n}, columns={len(self.columns)}, {self.nbytes / 1e6:.1f} MB)"

    @property
    def nbytes(self) -> int:
        """Bytes held in memory (spilled columns count nothing)."""
        return int(sum(a.nbytes for a, _ in self._store) + self.tick_ts.nbytes)

    def spill(self, to: ColumnSpill) -> None:
        """Move the encoded columns to ``to``'s file; ``take`` reads them back, bit for bit. All or
        nothing: a failed write (OSError) leaves every column in memory."""
        refs = [(a if isinstance(a, Spilled) else to.write(a), scale) for a, scale in self._store]
        self._store = refs

    @property
    def shape(self) -> tuple[int, int]:
        return self._n, len(self.columns)

    def take(self, idx, rows: tuple[int, int] | None = None) -> np.ndarray:
        """float64 (ticks x len(idx)) matrix of the given column indices, Fortran-ordered exactly like
        the ``matrix[:, idx]`` copy it replaces, so reductions along rows add in the same order and
        give bit-identical results. ``rows=(start, stop)``: only those ticks (``row_blocks``), the
        same values as that slice of the whole matrix."""
        idx = list(idx)
        start, stop = (0, self._n) if rows is None else (max(0, rows[0]), min(self._n, rows[1]))
        out = np.empty((max(0, stop - start), len(idx)), dtype=np.float64, order="F")
        for k, j in enumerate(idx):
            if rows is None:
                decode(*self._store[j], out[:, k])
            else:
                decode(*self._store[j], out[:, k], start, stop)
        return out

    def row_blocks(self, block: int | None = None) -> list[tuple[int, int]]:
        """``(start, stop)`` tick ranges of at most ``block`` ticks covering the table, for rules
        whose per-tick results do not depend on other ticks: their temporaries then stay the size of
        one block of ticks, whatever the job's duration."""
        block = max(1, block or ROW_BLOCK)
        return [(a, min(a + block, self._n)) for a in range(0, self._n, block)] or [(0, 0)]

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
