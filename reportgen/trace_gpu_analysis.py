"""The typed view of a kineto.json rank's ``gpu_analysis``: what Holistic Trace Analysis and TensorBoard show.

``trace_analysis.gpu_analysis`` writes it (overlap, the overlap-aware kernel split, the exclusive step breakdown,
launch statistics, queue lengths, idle time per stream, the critical path, frequent kernel sequences, copies,
tensor cores, host syncs); the PyTorch profiler section shows it, the diagnosis' GPU causes and compare's trace
summary read parts of it. A part of ``TraceRank`` (``trace_ranks``); read as that view is: numbers as given
(an int stays an int, so outputs do not move), anything no float holds None, text only as text, never an error on
a kineto.json written by something else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reportgen.json_values import as_items, as_object, given

def numbers_of(value: object) -> dict[str, float | None]:
    """An object's entries, keys as text and values as given (None for what no float holds), in its order."""
    return {str(key): given(v) for key, v in as_object(value).items()}


@dataclass(frozen=True)
class IdleGaps:
    """The GPU's idle gaps inside the steps by what it waited for (``idle_gaps_ms``), ms."""

    host_wait: float | None = None  # launched only after the GPU went idle
    kernel_wait: float | None = None  # short gaps between queued kernels
    after_pageable_copy: float | None = None


@dataclass(frozen=True)
class Overlap:
    """Communication kernels beside compute (HTA's comm_comp_overlap) and what was exposed."""

    communication_ms: float | None = None
    comm_comp_overlap_pct: float | None = None
    exposed_per_step_ms: float | None = None
    exposed_step_share: float | None = None
    exposed_in_steps_ms: float | None = None  # inside the profiled steps
    busbw_gb_s: float | None = None  # None when the kernels do not say their message size (torch < 2.1)
    algbw_gb_s: float | None = None
    message_bytes: float | None = None
    exposed_ms: float | None = None  # over the whole trace


@dataclass(frozen=True)
class BreakdownStep:
    """One step of the exclusive step breakdown: ms per category, as given."""

    step: float | None = None
    ms: dict[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class StepBreakdown:
    """Step time split as TensorBoard's overview splits it (``step_breakdown``)."""

    categories: tuple[str, ...] = ()
    steps: tuple[BreakdownStep, ...] = ()
    total_ms: dict[str, float | None] = field(default_factory=dict)  # per category over the steps


@dataclass(frozen=True)
class Launch:
    """HTA's CUDA kernel launch statistics (``launch``)."""

    kernels: float | None = None
    kernels_per_step: float | None = None
    shorter_than_launch: float | None = None
    shorter_than_launch_share: float | None = None
    kernel_p50_us: float | None = None
    launch_p50_us: float | None = None
    runtime_cutoff_us: float | None = None
    runtime_over_cutoff: float | None = None
    launch_delay_us: dict[str, float | None] = field(default_factory=dict)  # p50, p95, max
    launch_delay_cutoff_us: float | None = None
    launch_delay_over_cutoff: float | None = None
    graph_launched_share: float | None = None  # of the GPU operations, launched by a CUDA-graph replay
    one_over_cutoff_us: float | None = None  # the only launch call over the cutoff, where just one is (a one-off)


@dataclass(frozen=True)
class StreamQueue:
    """A stream's queue length over its changes (``queue_length``) or over one step (``queue_over_step``)."""

    changes: float | None = None  # ``count`` over the trace, ``changes`` over the step
    mean: float | None = None
    p50: float | None = None
    max: float | None = None
    empty_share: float | None = None  # over the step: nothing launched and waiting
    bin_max: tuple[float | None, ...] = ()  # over the step: the maximum per bin


@dataclass(frozen=True)
class QueueOverStep:
    """The queue length over the median step (``queue_over_step``)."""

    step: float | None = None
    step_ms: float | None = None
    bin_ms: float | None = None
    streams: dict[str, StreamQueue] = field(default_factory=dict)


@dataclass(frozen=True)
class StreamIdle:
    """A stream's idle time split as HTA splits it (``idle_per_stream``)."""

    operations: float | None = None
    busy_ms: float | None = None
    idle_ms: float | None = None
    host_wait_ms: float | None = None
    kernel_wait_ms: float | None = None
    other_ms: float | None = None


@dataclass(frozen=True)
class CriticalPath:
    """The median step's critical path, summarised as HTA does (``critical_path``)."""

    step: float | None = None
    step_ms: float | None = None
    path_ms: float | None = None
    by_ms: dict[str, float | None] = field(default_factory=dict)
    shares: dict[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class KernelPattern:
    """A frequent CUDA kernel sequence of a top-level operator (``kernel_patterns``)."""

    operator: str = ""
    kernels: tuple[str, ...] = ()
    length: float | None = None
    count: float | None = None
    gpu_ms: float | None = None
    cpu_ms: float | None = None


@dataclass(frozen=True)
class CopyKind:
    """Memory copies of one kind (``memcpy.by_kind``)."""

    kind: str = ""
    host_memory: str = "-"  # pinned, pageable; "-" when not said
    count: float | None = None
    nbytes: float | None = None
    time_ms: float | None = None
    gb_per_s: float | None = None


@dataclass(frozen=True)
class PageableCopy:
    """Host-to-device copies from pageable memory (``memcpy.pageable_htod``)."""

    bytes_per_step: float | None = None
    count: float | None = None
    time_ms: float | None = None
    gb_per_s: float | None = None
    exposed_ms: float | None = None  # with no kernel running beside them


@dataclass(frozen=True)
class TensorCores:
    """How much compute kernel time could use tensor cores (``tensor_cores``)."""

    compute_kernel_ms: float | None = None
    compute_capability: float | None = None
    eligible_share: float | None = None
    tensor_core_gemm_conv_ms: float | None = None
    has_tensor_cores: bool = False  # only when written as true
    fp32_gemm_conv_ms: float | None = None


@dataclass(frozen=True)
class HostSync:
    """Blocking host synchronisations (``sync``)."""

    calls: float | None = None
    by_operator: dict[str, Any] = field(default_factory=dict)  # operator -> calls, as written
    by_call: dict[str, Any] = field(default_factory=dict)  # the synchronising call -> calls, as written
    per_step: float | None = None
    blocked_ms: float | None = None
    idle_after_ms: float | None = None
    idle_after_beyond_one_per_step_ms: float | None = None


@dataclass(frozen=True)
class GpuAnalysis:
    """A rank's ``gpu_analysis``; ``listed`` False when the rank has none (no GPU, or an older kineto.json)."""

    listed: bool = False
    steps: float | None = None  # the profiled steps the analysis covers
    idle_gaps_ms: IdleGaps = field(default_factory=IdleGaps)
    overlap: Overlap = field(default_factory=Overlap)
    kernel_type_split_ms: dict[str, float | None] = field(default_factory=dict)
    step_breakdown: StepBreakdown = field(default_factory=StepBreakdown)
    launch: Launch = field(default_factory=Launch)
    queue_length: dict[str, StreamQueue] = field(default_factory=dict)
    queue_over_step: QueueOverStep = field(default_factory=QueueOverStep)
    idle_per_stream: dict[str, StreamIdle] = field(default_factory=dict)
    critical_path: CriticalPath = field(default_factory=CriticalPath)
    kernel_patterns: tuple[KernelPattern, ...] = ()
    memcpy: tuple[CopyKind, ...] = ()
    pageable_htod: PageableCopy | None = None  # None when the rank made no such copies
    tensor_cores: TensorCores = field(default_factory=TensorCores)
    sync: HostSync = field(default_factory=HostSync)

    @classmethod
    def of(cls, value: object) -> GpuAnalysis:
        ga = as_object(value)
        if not ga:
            return cls()
        memcpy = as_object(ga.get("memcpy"))
        pageable = as_object(memcpy.get("pageable_htod"))
        return cls(True, given(ga.get("steps")), _idle_gaps(ga.get("idle_gaps_ms")), _overlap(ga.get("overlap")), numbers_of(ga.get("kernel_type_split_ms")),
                   _breakdown(ga.get("step_breakdown")), _launch(ga.get("launch")),
                   {str(k): _queue(v, "count") for k, v in as_object(ga.get("queue_length")).items()},
                   _over_step(ga.get("queue_over_step")),
                   {str(k): _idle(v) for k, v in as_object(ga.get("idle_per_stream")).items()},
                   _critical_path(ga.get("critical_path")),
                   tuple(_pattern(p) for p in as_items(ga.get("kernel_patterns"))),
                   tuple(_copy(m) for m in as_items(memcpy.get("by_kind"))),
                   PageableCopy(given(pageable.get("bytes_per_step")), given(pageable.get("count")),
                                given(pageable.get("time_ms")), given(pageable.get("gb_per_s")),
                                given(pageable.get("exposed_ms"))) if pageable else None,
                   _tensor_cores(ga.get("tensor_cores")), _sync(ga.get("sync")))


def _idle_gaps(value: object) -> IdleGaps:
    d = as_object(value)
    return IdleGaps(given(d.get("host_wait")), given(d.get("kernel_wait")), given(d.get("after_pageable_copy")))


def _overlap(value: object) -> Overlap:
    d = as_object(value)
    return Overlap(given(d.get("communication_ms")), given(d.get("comm_comp_overlap_pct")),
                   given(d.get("exposed_per_step_ms")), given(d.get("exposed_step_share")),
                   given(d.get("exposed_in_steps_ms")), given(d.get("busbw_gb_s")), given(d.get("algbw_gb_s")),
                   given(d.get("message_bytes")), given(d.get("exposed_ms")))


def _breakdown(value: object) -> StepBreakdown:
    d = as_object(value)
    cats = tuple(str(c) for c in as_items(d.get("categories")))
    steps = tuple(BreakdownStep(given(s.get("step")), {c: given(s.get(c)) for c in cats})
                  for s in map(as_object, as_items(d.get("steps"))))
    return StepBreakdown(cats, steps, numbers_of(d.get("total_ms")))


def _launch(value: object) -> Launch:
    d = as_object(value)
    return Launch(given(d.get("kernels")), given(d.get("kernels_per_step")), given(d.get("shorter_than_launch")),
                  given(d.get("shorter_than_launch_share")), given(d.get("kernel_p50_us")),
                  given(d.get("launch_p50_us")), given(d.get("runtime_cutoff_us")), given(d.get("runtime_over_cutoff")),
                  numbers_of(d.get("launch_delay_us")), given(d.get("launch_delay_cutoff_us")),
                  given(d.get("launch_delay_over_cutoff")), given(d.get("graph_launched_share")),
                  given(d.get("one_over_cutoff_us")))


def _queue(value: object, changes_key: str) -> StreamQueue:
    d = as_object(value)
    return StreamQueue(given(d.get(changes_key)), given(d.get("mean")), given(d.get("p50")), given(d.get("max")),
                       given(d.get("empty_share")), tuple(given(b) for b in as_items(d.get("bin_max"))))


def _over_step(value: object) -> QueueOverStep:
    d = as_object(value)
    return QueueOverStep(given(d.get("step")), given(d.get("step_ms")), given(d.get("bin_ms")),
                         {str(k): _queue(v, "changes") for k, v in as_object(d.get("streams")).items()})


def _idle(value: object) -> StreamIdle:
    d = as_object(value)
    return StreamIdle(given(d.get("operations")), given(d.get("busy_ms")), given(d.get("idle_ms")),
                      given(d.get("host_wait_ms")), given(d.get("kernel_wait_ms")), given(d.get("other_ms")))


def _critical_path(value: object) -> CriticalPath:
    d = as_object(value)
    return CriticalPath(given(d.get("step")), given(d.get("step_ms")), given(d.get("path_ms")),
                        numbers_of(d.get("by_ms")), numbers_of(d.get("shares")))


def _pattern(value: object) -> KernelPattern:
    d = as_object(value)
    return KernelPattern(str(d.get("operator", "")), tuple(str(n) for n in as_items(d.get("kernels"))),
                         given(d.get("length")), given(d.get("count")), given(d.get("gpu_ms")), given(d.get("cpu_ms")))


def _copy(value: object) -> CopyKind:
    d = as_object(value)
    return CopyKind(str(d.get("kind", "")), str(d.get("host_memory") or "-"), given(d.get("count")),
                    given(d.get("bytes")), given(d.get("time_ms")), given(d.get("gb_per_s")))


def _tensor_cores(value: object) -> TensorCores:
    d = as_object(value)
    return TensorCores(given(d.get("compute_kernel_ms")), given(d.get("compute_capability")),
                       given(d.get("eligible_share")), given(d.get("tensor_core_gemm_conv_ms")),
                       d.get("has_tensor_cores") is True, given(d.get("fp32_gemm_conv_ms")))


def _sync(value: object) -> HostSync:
    d = as_object(value)
    return HostSync(given(d.get("calls")), dict(as_object(d.get("by_operator"))), dict(as_object(d.get("by_call"))),
                    given(d.get("per_step")),
                    given(d.get("blocked_ms")), given(d.get("idle_after_ms")),
                    given(d.get("idle_after_beyond_one_per_step_ms")))
