"""The typed view of kineto.json's per-rank entries, the facts of a rank that several rooms read.

``kineto.json`` (``trace_analysis.outputs``) stays the plain document report.json embeds; the report's
trace facts, the diagnosis and compare's trace summary each read the same few facts of every rank
(its steps, span, step mean, data loading, collective wait, GPU activity). ``TraceRank`` is that
reading, once (a light module beside ``rule_outputs``, which loads kineto.json: importing
``trace_analysis`` would load the readers and the analysis into the page's process): numbers as given
(an int stays an int, so outputs do not move), anything no float holds None, never an error on a
kineto.json written by something else. The analyses only one room reads
(kernels, CPU operators, ``gpu_analysis``) stay in ``entry``, the rank's entry as written. ``TraceComparison``
is the same reading of the ranks' comparison (the straggler), read by the section and the diagnosis, and
``TraceJob`` of the job-wide tables, read by the section and compare.
docs/architecture.md ("Typed contracts") lists what is viewed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from reportgen.traces.numbers import is_number


def _given(value) -> float | None:
    """A number as given, None for anything no float holds (a bool, NaN, an integer of 400 digits)."""
    return value if is_number(value) and math.isfinite(value) else None


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class TraceStep:
    """One profiled step (``ProfilerStep#N``) of a rank."""

    step: float | None = None  # N as given (an int from our analysis), None when no number
    start_ms: float | None = None  # into the rank's trace
    dur_ms: float | None = None


@dataclass(frozen=True)
class TraceLoader:
    """A rank's DataLoader time (``dataloader``: trace_analysis.regions)."""

    step_share: float | None = None  # of the profiled step time (union of intervals)
    per_step_ms: float | None = None
    total_ms: float | None = None
    iterator: str | None = None  # the iterator class, e.g. _SingleProcessDataLoaderIter
    workers: bool | None = None  # whether DataLoader worker processes loaded the data


@dataclass(frozen=True)
class TraceRank:
    """One rank of kineto.json (``ranks.<label>``)."""

    label: str
    is_object: bool = False  # the entry is an object (a rank written by something else may not be)
    steps: tuple[TraceStep, ...] | None = None  # None when the entry lists no steps
    start_us: float | None = None  # first and last traced event, epoch (or trace) microseconds
    end_us: float | None = None
    span_ms: float | None = None
    step_mean_ms: float | None = None  # step_stats_ms.mean
    step_max_ms: float | None = None
    has_gpu_activity: bool = False
    gpu_active_pct: float | None = None  # of the traced time
    gpu_window_idle_share: float | None = None  # idle within the first to the last GPU activity
    dataloader: TraceLoader | None = None  # None when the entry has no data-loading object
    collective_share: float | None = None  # share of the step time waiting in collectives
    cpu_op_count: float | None = None
    workers: tuple[str, ...] = ()  # the recording's worker names (host_pid) merged into this rank
    entry: dict = field(default_factory=dict)  # as written, for the analyses one room reads

    @property
    def step_list(self) -> tuple[TraceStep, ...]:
        return self.steps or ()

    @classmethod
    def of(cls, label, entry) -> TraceRank:
        if not isinstance(entry, dict):
            return cls(str(label))
        steps = entry.get("steps")
        steps = tuple(TraceStep(_given(_dict(s).get("step")), _given(_dict(s).get("start_ms")),
                                _given(_dict(s).get("dur_ms"))) for s in steps) if isinstance(steps, list) else None
        loader = entry.get("dataloader")
        if isinstance(loader, dict):
            iterator, workers = loader.get("iterator"), loader.get("workers")
            loader = TraceLoader(_given(loader.get("step_share")), _given(loader.get("per_step_ms")),
                                 _given(loader.get("total_ms")), iterator if isinstance(iterator, str) else None,
                                 workers if isinstance(workers, bool) else None)
        else:
            loader = None
        gpu, stats = _dict(entry.get("gpu")), _dict(entry.get("step_stats_ms"))
        workers = entry.get("workers")
        return cls(str(label), True, steps, _given(entry.get("start_us")), _given(entry.get("end_us")),
                   _given(entry.get("span_ms")), _given(stats.get("mean")), _given(stats.get("max")),
                   bool(gpu.get("has_gpu_activity")), _given(gpu.get("active_pct")),
                   _given(gpu.get("window_idle_share")), loader,
                   _given(_dict(entry.get("collectives")).get("step_share")),
                   _given(_dict(entry.get("cpu_ops")).get("count")),
                   tuple(str(w) for w in workers) if isinstance(workers, list) else (), entry)


PYTORCH_TRACES = "PyTorch profiler traces"
XSPACE_TRACES = "JAX / TensorFlow profiler traces"


def traces_name(files) -> str:
    """What the report calls its traces, from their file names: "JAX / TensorFlow profiler traces" when every
    one is an XSpace file (``*.xplane.pb``, gzip'd or not), else "PyTorch profiler traces" (a JAX report called
    itself a PyTorch one)."""
    names = [str(getattr(f, "key", f)).lower() for f in files or ()]
    xspace = [n for n in names if n.endswith((".xplane.pb", ".xplane.pb.gz"))]
    return XSPACE_TRACES if names and len(xspace) == len(names) else PYTORCH_TRACES


def doc_traces_name(doc) -> str:
    """``traces_name`` of a kineto.json document's ranks (their ``file``/``files``)."""
    files = []
    for entry in _dict(_dict(doc).get("ranks")).values():
        entry = _dict(entry)
        listed = entry.get("files") if isinstance(entry.get("files"), list) else [entry.get("file")]
        files += [f for f in listed if isinstance(f, str)]
    return traces_name(files)


def trace_ranks_of(doc) -> dict[str, TraceRank]:
    """Every rank of a kineto.json document, in its order (an entry that is not an object: an empty view)."""
    ranks = _dict(_dict(doc).get("ranks"))
    return {str(label): TraceRank.of(label, entry) for label, entry in ranks.items()}


def _label(value) -> str | int | None:
    """A rank label as written (a str, or an int from an older writer), None for anything else."""
    return value if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)) else None


def _text(value) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class TraceComparison:
    """kineto.json's ``comparison`` (``trace_analysis.straggler.find_straggler``): the straggler, how the ranks
    were told apart and the figures, the typed view the PyTorch profiler section and the diagnosis' straggler
    cause both read. Numbers as given, labels and text only as such, anything else None."""

    straggler: str | int | None = None  # the straggler's rank label
    method: str | None = None  # "collective wait", "step time", "not compared"
    reason: str | None = None
    evidence: tuple = ()  # the sentences listed, as written
    slowest: str | int | None = None  # the rank with the largest mean step
    slowest_excess_pct: float | None = None  # its mean step over the ranks' median, %
    median_step_ms: float | None = None
    margin_pct: float | None = None  # the step-time threshold, %
    wait_gap_pct: float | None = None  # the collective-wait threshold, points
    least_wait_rank: str | int | None = None  # ``detail.rank``: the rank that waits least in collectives
    its_wait_share: float | None = None  # that rank's wait, a share of its step time
    others_median_wait_share: float | None = None
    why: str | None = None  # ``detail.why``: why the ranks were not compared

    @classmethod
    def of(cls, doc) -> TraceComparison:
        """The view of ``doc["comparison"]`` (``doc``: kineto.json); an absent or odd one is all None."""
        c = _dict(_dict(doc).get("comparison"))
        detail = _dict(c.get("detail"))
        listed = c.get("evidence")
        return cls(_label(c.get("straggler")), _text(c.get("method")), _text(c.get("reason")),
                   tuple(listed) if isinstance(listed, list) else (), _label(c.get("slowest")),
                   *(_given(c.get(k)) for k in ("slowest_excess_pct", "median_step_ms", "margin_pct", "wait_gap_pct")),
                   _label(detail.get("rank")), _given(detail.get("its_wait_share")),
                   _given(detail.get("others_median_wait_share")), _text(detail.get("why")))


@dataclass(frozen=True)
class JobRow:
    """One row of kineto.json's job-wide top kernels or CPU operators (every rank's totals summed)."""

    name: str | None = None
    total_ms: float | None = None
    count: float | None = None  # launches (kernels) or calls (CPU operators)
    mean_us: float | None = None
    pct: float | None = None  # share of all kernel time, % (kernels only)
    ranks: float | None = None  # how many ranks ran it
    min_rank_ms: float | None = None  # the least time one rank spent in it
    max_rank_ms: float | None = None
    max_rank: str | int | None = None  # the rank with the most


@dataclass(frozen=True)
class JobTable:
    """kineto.json's ``job.kernels`` or ``job.cpu_ops``: the exact top rows over all ranks and the totals."""

    top: tuple[JobRow, ...] | None = None  # None when ``top`` is no list; a row that is no object is empty
    distinct: float | None = None
    total_ms: float | None = None
    count: float | None = None

    @classmethod
    def of(cls, table, count_key: str) -> JobTable:
        table = _dict(table)
        rows = table.get("top")
        top = None if not isinstance(rows, list) else tuple(
            JobRow(_text(r.get("name")), _given(r.get("total_ms")), _given(r.get(count_key)), _given(r.get("mean_us")),
                   _given(r.get("pct")), _given(r.get("ranks")), _given(r.get("min_rank_ms")),
                   _given(r.get("max_rank_ms")), _label(r.get("max_rank")))
            for r in map(_dict, rows))
        return cls(top, _given(table.get("distinct")), _given(table.get("total_ms")), _given(table.get("count")))


@dataclass(frozen=True)
class TraceJob:
    """kineto.json's ``job`` (``trace_analysis.job.job_tables``): kernels and CPU operators summed over every
    rank, read by the PyTorch profiler section's whole-job tables and compare's operator times per step."""

    listed: bool = False  # ``job`` is a non-empty object
    ranks: float | None = None  # how many ranks the tables sum
    kernels: JobTable = field(default_factory=JobTable)
    cpu_ops: JobTable = field(default_factory=JobTable)

    @classmethod
    def of(cls, doc) -> TraceJob:
        job = _dict(_dict(doc).get("job"))
        return cls(bool(job), _given(job.get("ranks")), JobTable.of(job.get("kernels"), "launches"),
                   JobTable.of(job.get("cpu_ops"), "calls"))
