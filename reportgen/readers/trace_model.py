"""The one trace model: every trace format's reader turns a file into these columns.

One row per complete event (category code, interned name, start and duration in µs, device, bytes,
thread or stream, correlation id), sorted by start, with the rank's metadata. PyTorch profiler
(Kineto) traces (``readers/kineto_trace.py``) and XSpace files of JAX and TensorFlow
(``readers/xspace_trace.py``) are read into it; ``reportgen.trace_analysis`` analyses it without
asking which format a rank came from. The categories are Kineto's names, the most detailed of the
formats; a format without one of them leaves it empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# Canonical categories. Kineto's 2021 traces use Operator/Runtime/Kernel/Memcpy/Memset.
CPU_OP, USER_ANNOTATION, KERNEL, MEMCPY, MEMSET, RUNTIME, DRIVER, SYNC, GPU_ANNOTATION, PYTHON, OTHER = range(11)
CATEGORY_NAMES = ("cpu_op", "user_annotation", "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime",
                  "cuda_driver", "cuda_sync", "gpu_user_annotation", "python_function", "other")
CATEGORY_CODES = {  # the category names formats write -> codes
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

# The one sanity rule for event times, for every trace format (Kineto, XSpace): an event longer than 30 days,
# or starting further than year 2255 from the epoch, is no time of a real job (Kineto writes dur = 2**64 ns
# for a kernel whose end it never saw; an XSpace event of 2**63-1 ps made a 107-day rank "99.99999998 %" GPU
# active, a line timestamp of -2**63 ns dated events to 1678). Such events are dropped and counted under
# OUT_OF_RANGE (an event starting more than 30 days into its XSpace line too); 30 days is the limit the
# readers' clock-jump check uses (longer than SageMaker's 28-day maximum runtime).
MAX_DURATION_US = 30 * 86400 * 1e6
MAX_ABS_TS_US = 2.0**53  # year 2255 in epoch µs; a float holds every µs below it
OUT_OF_RANGE = "event time out of range (longer than 30 days or beyond year 2255; dropped)"


def times_in_range(start_us: np.ndarray, dur_us: np.ndarray) -> np.ndarray:
    """Which events (times in µs, absolute) pass the sanity rule above. A format that times each event
    from its own line's start (XSpace) also drops an event more than MAX_DURATION_US into its line."""
    return (np.abs(start_us) < MAX_ABS_TS_US) & (dur_us <= MAX_DURATION_US)


@dataclass(eq=False)
class MemoryEvents:
    """The allocator's events of one trace (Kineto's ``[memory]`` instant events, ``profile_memory=True``), a side
    table beside the events: one row per allocation (bytes > 0) or free (bytes < 0), sorted by time. The totals
    are the allocator's after the event (NaN where the trace does not write them: torch before 1.10 wrote only
    the bytes); ``addr`` pairs a free with its allocation (-1 when absent); ``cycle``: which file of the rank."""

    time_us: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    nbytes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    allocated: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))  # Total Allocated, NaN: absent
    reserved: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))  # Total Reserved, NaN: absent
    device_type: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))  # torch's: 0 CPU, 1 CUDA
    device_id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # -1 for the CPU
    addr: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cycle: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))

    COLUMNS = ("time_us", "nbytes", "allocated", "reserved", "device_type", "device_id", "addr", "tid", "cycle")

    def __len__(self) -> int:
        return int(self.time_us.size)

    def __eq__(self, other) -> bool:  # column by column (NaN totals equal): two reads of one file compare equal
        return isinstance(other, MemoryEvents) and all(
            np.array_equal(getattr(self, c), getattr(other, c), equal_nan=getattr(self, c).dtype.kind == "f")
            for c in self.COLUMNS)

    __hash__ = None

    def take(self, rows: np.ndarray) -> MemoryEvents:
        """The rows ``rows`` (an index or mask array) as a new table."""
        return MemoryEvents(*(getattr(self, c)[rows] for c in self.COLUMNS))

    @classmethod
    def concat(cls, tables: list[MemoryEvents]) -> MemoryEvents:
        """Several files' tables as one, each row's ``cycle`` its table's position, sorted by time."""
        if not tables:
            return cls()
        parts = {c: [getattr(t, c) for t in tables] for c in cls.COLUMNS}
        parts["cycle"] = [np.full(len(t), i, np.int32) for i, t in enumerate(tables)]
        merged = cls(*(np.concatenate(parts[c]) for c in cls.COLUMNS))
        return merged.take(np.argsort(merged.time_us, kind="stable"))


@dataclass(eq=False)
class FlopEvents:
    """The operators that carry a FLOP count (torch's ``flops`` argument with ``with_flops=True``, else counted
    from the ``Input Dims`` of a matrix multiplication with ``record_shapes=True``): start in µs, FLOPs, and
    ``cycle`` (which file of the rank), sorted by time."""

    time_us: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    flops: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    cycle: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))

    def __len__(self) -> int:
        return int(self.time_us.size)

    def __eq__(self, other) -> bool:
        return isinstance(other, FlopEvents) and all(np.array_equal(getattr(self, c), getattr(other, c))
                                                     for c in ("time_us", "flops", "cycle"))

    __hash__ = None

    @classmethod
    def concat(cls, tables: list[FlopEvents]) -> FlopEvents:
        """Several files' tables as one, each row's ``cycle`` its table's position, sorted by time."""
        if not tables:
            return cls()
        time = np.concatenate([t.time_us for t in tables])
        order = np.argsort(time, kind="stable")
        return cls(time[order], np.concatenate([t.flops for t in tables])[order],
                   np.concatenate([np.full(len(t), i, np.int32) for i, t in enumerate(tables)])[order])


@dataclass(eq=False)
class Float64Ops:
    """The CPU operators with a float64 (``double``) input, from their ``Input type`` (``record_shapes=True``):
    start and end in µs, and ``cycle`` (which file of the rank), sorted by start. A model trained in float64 pays
    every operator about twice (or, where no optimised float64 kernel exists, several times) its float32 cost."""

    COLUMNS = ("time_us", "end_us", "cycle")
    time_us: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    end_us: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    cycle: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))

    def __len__(self) -> int:
        return int(self.time_us.size)

    def __eq__(self, other) -> bool:
        return isinstance(other, Float64Ops) and all(np.array_equal(getattr(self, c), getattr(other, c))
                                                     for c in self.COLUMNS)

    __hash__ = None

    @classmethod
    def concat(cls, tables: list[Float64Ops]) -> Float64Ops:
        """Several files' tables as one, each row's ``cycle`` its table's position, sorted by start."""
        if not tables:
            return cls()
        time = np.concatenate([t.time_us for t in tables])
        order = np.argsort(time, kind="stable")
        return cls(time[order], np.concatenate([t.end_us for t in tables])[order],
                   np.concatenate([np.full(len(t), i, np.int32) for i, t in enumerate(tables)])[order])


@dataclass
class TraceColumns:
    """One trace file as columns (one row per complete event, sorted by start)."""

    path: Path
    label: str  # how the report names this rank: its rank number, or the file's stem
    rank: int | None
    world_size: int | None = None
    backend: str | None = None
    devices: list[str] = field(default_factory=list)  # deviceProperties names
    compute_capability: list[float | None] = field(default_factory=list)  # deviceProperties computeMajor.Minor
    device_memory: dict[int, float] = field(default_factory=dict)  # deviceProperties id -> totalGlobalMem bytes
    time_unit: str = "us"  # unit found in the file ("ns" files are scaled to µs)
    names: list[str] = field(default_factory=list)  # interned names; ``name`` indexes into it
    cat: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    name: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    start_us: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    dur_us: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    device: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # GPU id, -1 for CPU events
    nbytes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))  # memcpy/memset bytes, a collective
    # kernel's message bytes (In msg nelems x dtype), else 0
    tid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # thread (CPU) or stream (GPU)
    corr: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # args.correlation, -1 when absent
    events_in_file: int = 0
    complete: bool = True  # False when the file was truncated or broken
    # the format's CPU-side collective names (None: torch's, in trace_analysis.regions); set by a format's reader
    cpu_collectives: re.Pattern | None = None
    memory: MemoryEvents = field(default_factory=MemoryEvents)  # the allocator's events (Kineto ``[memory]``)
    flops: FlopEvents = field(default_factory=FlopEvents)  # operators with a FLOP count
    float64: Float64Ops = field(default_factory=Float64Ops)  # operators with a float64 input (record_shapes=True)

    @property
    def end_us(self) -> np.ndarray:
        return self.start_us + self.dur_us

    def rows(self, *cats: int) -> np.ndarray:
        """Which events are of one of ``cats``. What ``np.isin`` does for a few values, without its checks
        (~40 µs a call): the analyses ask ~36 times a rank, which was most of a one-step rank's cost."""
        mask = self.cat == cats[0] if cats else np.zeros(self.cat.shape, bool)
        for cat in cats[1:]:
            mask |= self.cat == cat
        return mask


def file_label(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json", ".pt.trace", ".trace"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or path.name


def rank_from_name(path: Path) -> int | None:
    match = re.search(r"rank[-_]?(\d+)", path.name, re.IGNORECASE)
    return int(match.group(1)) if match else None
