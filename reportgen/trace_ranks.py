"""The typed view of kineto.json's per-rank entries, the facts of a rank that several rooms read.

``kineto.json`` (``trace_analysis.outputs``) stays the plain document report.json embeds; the report's
trace facts, the PyTorch profiler section, the diagnosis and compare's trace summary read a rank through
``TraceRank`` (its steps, span, data loading, GPU activity, collectives, kernels, CPU operators, memory, FLOPs
and ``gpu_analysis``, the last in ``trace_gpu_analysis``), a light module beside ``rule_outputs``, which loads
kineto.json (importing ``trace_analysis`` would load the readers and the analysis into the page's process):
numbers as given (an int stays an int, so outputs do not move), anything no float holds None, never an error
on a kineto.json written by something else. Dataclasses rather than msgspec Structs: the views are built
from the dict report.json also embeds (no bytes to decode, where msgspec's speed lies), every field needs
the lenient "None when odd" reading a strict decoder would refuse, and the standard library keeps the
page's process light. ``TraceComparison``
is the same reading of the ranks' comparison (the straggler), read by the section and the diagnosis, and
``TraceJob`` of the job-wide tables, read by the section and compare.
docs/architecture.md ("Typed contracts") lists what is viewed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reportgen.json_values import as_items, as_object, given, text
# What the report calls its traces lives with the file layout (a name test, no view: the command's process needs it
# without these views); named here too, where the views' users find it.
from reportgen.sources.layout import PYTORCH_TRACES as PYTORCH_TRACES
from reportgen.sources.layout import XSPACE_TRACES as XSPACE_TRACES
from reportgen.sources.layout import is_xspace_file as is_xspace_file
from reportgen.sources.layout import traces_name as traces_name
from reportgen.trace_gpu_analysis import GpuAnalysis, numbers_of



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
    in_steps_ms: float | None = None  # inside the profiled steps

    @classmethod
    def of(cls, value: object) -> TraceLoader | None:
        """None when the rank has no data-loading object."""
        if not isinstance(value, dict):
            return None
        iterator, workers = value.get("iterator"), value.get("workers")
        return cls(given(value.get("step_share")), given(value.get("per_step_ms")), given(value.get("total_ms")),
                   text(iterator), workers if isinstance(workers, bool) else None, given(value.get("in_steps_ms")))


@dataclass(frozen=True)
class TraceGpu:
    """A rank's GPU activity (``gpu``: trace_analysis): over the whole trace and within the active window (first to
    last GPU activity), the idle time there split as HTA splits it."""

    has_gpu_activity: bool = False
    active_ms: float | None = None
    active_pct: float | None = None  # of the traced time
    idle_ms: float | None = None
    window_ms: float | None = None
    window_idle_ms: float | None = None
    window_idle_share: float | None = None  # idle within the first to the last GPU activity
    window_idle_split_ms: dict[str, float | None] = field(default_factory=dict)  # host_wait, kernel_wait, other
    kernel_wait_threshold_us: float | None = None

    @classmethod
    def of(cls, value: object) -> TraceGpu:
        gpu = as_object(value)
        return cls(bool(gpu.get("has_gpu_activity")), given(gpu.get("active_ms")), given(gpu.get("active_pct")),
                   given(gpu.get("idle_ms")), given(gpu.get("window_ms")), given(gpu.get("window_idle_ms")),
                   given(gpu.get("window_idle_share")), numbers_of(gpu.get("window_idle_split_ms")),
                   given(gpu.get("kernel_wait_threshold_us")))


@dataclass(frozen=True)
class RankRow:
    """One row of a rank's top kernels or CPU operators (``kernels.top``, ``cpu_ops.top``)."""

    name: str = ""  # as written, made text
    total_ms: float | None = None
    count: float | None = None  # launches (kernels) or calls (CPU operators)
    mean_us: float | None = None
    pct: float | None = None  # share of the rank's kernel time, % (kernels only)
    durations: bool = False  # the row lists the duration statistics below (``min_us``: kernels)
    min_us: float | None = None
    p25_us: float | None = None
    p50_us: float | None = None
    p75_us: float | None = None
    max_us: float | None = None
    std_us: float | None = None


@dataclass(frozen=True)
class RankTable:
    """A rank's ``kernels`` or ``cpu_ops``: the top rows by time and the totals."""

    top: tuple[RankRow, ...] = ()
    distinct: float | None = None
    total_ms: float | None = None
    count: float | None = None

    @classmethod
    def of(cls, value: object, count_key: str) -> RankTable:
        table = as_object(value)
        rows = tuple(RankRow(str(r.get("name", "")), given(r.get("total_ms")), given(r.get(count_key)),
                             given(r.get("mean_us")), given(r.get("pct")), "min_us" in r,
                             *(given(r.get(key)) for key in ("min_us", "p25_us", "p50_us", "p75_us", "max_us",
                                                             "std_us")))
                     for r in map(as_object, as_items(table.get("top"))))
        return cls(rows, given(table.get("distinct")), given(table.get("total_ms")), given(table.get("count")))


@dataclass(frozen=True)
class TraceCollectives:
    """A rank's collectives (``collectives``): how long they were in flight inside the profiled steps."""

    count: float | None = None
    names: tuple[str, ...] = ()
    source: str = ""  # which events told them (as written, made text)
    in_steps_ms: float | None = None
    step_share: float | None = None  # share of the step time waiting in collectives

    @classmethod
    def of(cls, value: object) -> TraceCollectives:
        c = as_object(value)
        return cls(given(c.get("count")), tuple(str(n) for n in as_items(c.get("names"))), str(c.get("source", "")),
                   given(c.get("in_steps_ms")), given(c.get("step_share")))


@dataclass(frozen=True)
class MemoryOp:
    """One kind of memory operation of a rank (``memory_ops``: memcpy HtoD, memset, ...)."""

    kind: str = ""
    count: float | None = None
    total_ms: float | None = None
    nbytes: float | None = None


@dataclass(frozen=True)
class StepHistogram:
    """A rank's step-time histogram (``step_hist``), counts and bin edges as listed."""

    counts: tuple[float | None, ...] = ()
    edges: tuple[float | None, ...] = ()


# The step-time account's slices (trace_analysis.account.SLICES; repeated here so the page's process need not
# import the analysis): the order the page shows them in, ``compute`` the only useful one.
ACCOUNT_SLICES = ("compute", "data_wait", "communication", "host_blocked", "memory_management", "memory_copies",
                  "compilation", "dispatch", "debug_checks", "no_operator")


# The kernel mix's classes (trace_analysis.classify.KERNEL_CLASSES, repeated for the same reason) and the
# memory-bound ones among them
KERNEL_CLASSES = ("gemm", "convolution", "attention", "optimizer", "fused", "reduction", "elementwise", "other")
MEMORY_BOUND_CLASSES = ("optimizer", "reduction", "elementwise")


@dataclass(frozen=True)
class MixKernel:
    """One of the top memory-bound kernels of the steps (``kernel_mix.top_memory_bound``)."""

    name: str
    kind: str  # its class
    ms: float | None  # its kernels' durations summed over the steps
    share_of_compute: float | None
    calls_per_step: float | None
    operators: tuple[str, ...]  # the operators that launched it, the most frequent first


@dataclass(frozen=True)
class KernelMix:
    """What the GPU computed in the steps (``account.gpu.kernel_mix``), ms: the compute slice split by kernel class
    (exclusive: the classes add up to the slice), the memory-bound kernels and what points to a fix."""

    classes_ms: dict[str, float]
    memory_bound_ms: float = 0.0
    unfused_memory_bound_ms: float = 0.0  # elementwise + reductions + the optimizer's per-tensor kernels
    fusable_ms: float = 0.0  # the estimate of what fusion gives back (docs/diagnosis.md)
    casts_ms: float = 0.0
    layout_ms: float = 0.0
    norms_ms: float = 0.0
    convolution_kernels_ms: float = 0.0
    optimizer_names: tuple[str, ...] = ()  # from Optimizer.step#<Name>.step, the most frequent first
    optimizer_kernels_per_step: float = 0.0
    optimizer_ms: float = 0.0
    optimizer_multi_tensor_ms: float = 0.0
    top: tuple[MixKernel, ...] = ()
    optimizer_per_tensor_kernels_per_step: float = 0.0  # launches outside multi-tensor (foreach / fused) kernels

    @property
    def compute_ms(self) -> float:
        return sum(self.classes_ms.values())

    @classmethod
    def of(cls, entry: object) -> KernelMix | None:
        if not isinstance(entry, dict):
            return None
        written = as_object(entry.get("classes_ms"))
        classes = {name: max(given(written.get(name)) or 0.0, 0.0) for name in KERNEL_CLASSES}
        opt = as_object(entry.get("optimizer"))

        def ms(value: object) -> float:
            return max(given(value) or 0.0, 0.0)

        top = tuple(MixKernel(text(t.get("name")) or "", text(t.get("class")) or "other", given(t.get("ms")),
                              given(t.get("share_of_compute")), given(t.get("calls_per_step")),
                              tuple(str(o) for o in as_items(t.get("operators"))))
                    for t in map(as_object, as_items(entry.get("top_memory_bound"))))
        return cls(classes, ms(entry.get("memory_bound_ms")), ms(entry.get("unfused_memory_bound_ms")),
                   ms(entry.get("fusable_ms")), ms(entry.get("casts_ms")), ms(entry.get("layout_ms")),
                   ms(entry.get("norms_ms")), ms(entry.get("convolution_kernels_ms")),
                   tuple(str(n) for n in as_items(opt.get("names"))), ms(opt.get("kernels_per_step")),
                   ms(opt.get("ms")), ms(opt.get("multi_tensor_ms")), top,
                   ms(opt.get("per_tensor_kernels_per_step")))


@dataclass(frozen=True)
class AccountGpu:
    """A GPU rank's account beside HTA's figures, inside the steps (``account.gpu``), ms: the GPU's busy time
    (compute + exposed communication + memory copies), its idle time and that idle split as HTA splits the active
    window's (host wait, kernel wait, other) plus the steps' time outside that window."""

    busy_ms: float | None = None
    idle_ms: float | None = None
    exposed_communication_ms: float | None = None
    host_wait_ms: float | None = None
    kernel_wait_ms: float | None = None
    other_ms: float | None = None
    outside_window_ms: float | None = None
    kernel_mix: KernelMix | None = None  # what the compute kernels were (None in an older kineto.json)

    @classmethod
    def of(cls, entry: object) -> AccountGpu | None:
        if not isinstance(entry, dict):
            return None
        split = as_object(entry.get("idle_split_ms"))
        return cls(given(entry.get("busy_ms")), given(entry.get("idle_ms")), given(entry.get("exposed_communication_ms")),
                   given(split.get("host_wait")), given(split.get("kernel_wait")), given(split.get("other")),
                   given(split.get("outside_window")), kernel_mix=KernelMix.of(entry.get("kernel_mix")))


@dataclass(frozen=True)
class CycleGap:
    """A pause of the recording between two profiling cycles (``account.between_cycles``): from the last profiled
    step of one cycle to the first of the next, absolute µs, and the steps that ran there unrecorded."""

    after_step: int
    before_step: int
    unrecorded_steps: int
    start_us: float
    end_us: float

    @classmethod
    def of(cls, entry: object) -> CycleGap | None:
        entry = as_object(entry)
        after, before, n = (given(entry.get(key)) for key in ("after_step", "before_step", "unrecorded_steps"))
        start, end = given(entry.get("start_us")), given(entry.get("end_us"))
        if after is None or before is None or n is None or start is None or end is None or n < 1 or end <= start:
            return None
        return cls(int(after), int(before), int(n), float(start), float(end))


@dataclass(frozen=True)
class TraceAccount:
    """A rank's step-time account (kineto.json ``ranks.<label>.account``): each profiled step's wall time in
    exclusive slices that add up to it. Slices are ms over all the rank's steps; ``per_step`` ms per step, in
    the steps' order; a slice the entry lacks or gives as no number is 0 (the view never fails)."""

    perspective: str  # "host" (what the training threads did) or "device" (what the GPU did, and why it idled)
    steps: int
    step_ms: float  # the steps' wall time, the sum of every slice
    slices_ms: dict[str, float]
    per_step_ms: dict[str, tuple[float, ...]]
    operator_calls_per_step: float | None = None
    dispatch_floor_us: float | None = None
    no_operator_named: dict[str, float] = field(default_factory=dict)  # annotations/frames in that time (ms)
    data_wait_named: dict[str, float] = field(default_factory=dict)  # the input pipeline's events waited in (ms)
    optimizer_per_step_ms: tuple[float, ...] = ()  # time under Optimizer.step# per step (part of compute)
    work_per_step: tuple[float, ...] = ()  # operator calls (host) or kernels (device) each step issued
    backward_passes_per_step: tuple[float, ...] = ()  # the loss's backward node per step: micro-batches
    optimizer_steps_per_step: tuple[float, ...] = ()
    window: dict[str, float] = field(default_factory=dict)  # span, steps, between steps, before, after (ms)
    eager_ops_per_step: tuple[float, ...] = ()  # operations each step ran one by one from Python
    eager_runtime: str | None = None  # "tensorflow" or "jax" when steps run their model op by op
    gpu: AccountGpu | None = None  # device perspective: HTA's figures inside the steps
    compilation_named: dict[str, float] = field(default_factory=dict)  # what compiled in the steps (ms by name)
    loader_starts_per_step: tuple[float, ...] = ()  # 1 where a DataLoader iterator was created in the step
    between_steps_ms: tuple[float, ...] = ()  # each step's end to the next step's start, in one recorded cycle
    # the part of each step's compute in operators with a float64 input (record_shapes=True), and of it the part in
    # torch's slow reference kernels, which float64 falls back to where no optimised kernel exists (convolutions)
    float64_per_step_ms: tuple[float, ...] = ()
    float64_fallback_per_step_ms: tuple[float, ...] = ()
    # Python functions the input pipeline ran on its threads during the steps (tf.py_function in a tf.data map):
    # their time summed over calls (ms; threads in parallel each count) and calls per step (the median step's)
    input_python_ms: float = 0.0
    input_python_calls_per_step: float = 0.0
    # the tf.data pipeline's deepest iterator as the trace names it (its shape, e.g. Iterator::Root::Prefetch::
    # BatchV2::FlatMap[0]::Generator: a Python generator's source), "" without one
    input_pipeline: str = ""
    between_cycles: tuple[CycleGap, ...] = ()  # the pauses between profiling cycles, with their unrecorded steps
    # the profiler's own cost inside the steps (ms in all), where the diagnosis measured it and took it out of the
    # slices (diagnosis/profiler_cost.py): the shares are then of the steps less it; 0 as kineto.json gives it
    profiler_ms: float = 0.0
    # tf.function graphs (or jitted JAX executables) each step called, where the account split their operations'
    # kernels (compute) from the rest of each call (dispatch); empty for other traces
    graph_calls_per_step: tuple[float, ...] = ()
    graph_runtime: str = "tensorflow"  # whose calls those are: "tensorflow" or "jax"
    # tensor elements each step read into Python one by one (aten::item outside the optimizer and backward), where
    # the median step reads 50 or more (a tensor printed or logged, or iterated element by element); else empty
    scalar_reads_per_step: tuple[float, ...] = ()
    # the part of each step's compute in data-moving operators the script itself ran (cat, clone, copy_, .to(): outside
    # every other operator, the optimizer and the DataLoader), where they reach 5 % of the steps; ms by name
    copies_per_step_ms: tuple[float, ...] = ()
    copies_named: dict[str, float] = field(default_factory=dict)
    # ms by name of the tensors the script itself made (zeros, empty, full, *_like: outside every other operator, the
    # optimizer and the DataLoader), where they reach 5 % of the steps and are the steps' memory_management; else empty
    allocations_named: dict[str, float] = field(default_factory=dict)
    # gradients each step added into ones no optimizer reset (parameters that require grad but no optimizer holds),
    # and the backward's ms after the last gradient an optimizer reset, where the median step has one; else empty
    unused_gradients_per_step: tuple[float, ...] = ()
    unused_backward_per_step_ms: tuple[float, ...] = ()

    @property
    def base_ms(self) -> float:
        """What the shares are of: the steps' wall time less the profiler's own cost in them (where measured)."""
        return self.step_ms - self.profiler_ms if self.step_ms > self.profiler_ms else self.step_ms

    def share(self, name: str) -> float:
        return self.slices_ms.get(name, 0.0) / self.base_ms if self.base_ms > 0 else 0.0

    def every_step_share(self, name: str) -> float:
        """The slice's share of the step that every step pays: its median per step times the steps, of the
        steps' time. What only some steps pay (a stall, a slow step) is the rest of ``share``."""
        values = sorted(self.per_step_ms.get(name, ()))
        if not values or self.base_ms <= 0:
            return 0.0
        mid = len(values) // 2
        median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
        return min(median * len(values) / self.base_ms, self.share(name))

    @property
    def per_step_whole(self) -> bool:
        """Every slice's per-step list holds one value per step (or none: a slice that is zero throughout): each
        step's slices can be added up (a damaged file's lists of other lengths cannot)."""
        return all(len(values) in (0, self.steps) for values in self.per_step_ms.values())

    def step_durations_ms(self) -> list[float]:
        """Each profiled step's wall time (ms): the sum of its slices."""
        columns = [self.per_step_ms.get(name, ()) for name in ACCOUNT_SLICES]
        width = max((len(c) for c in columns), default=0)
        return [sum(c[i] for c in columns if i < len(c)) for i in range(width)]

    @classmethod
    def of(cls, entry: object) -> TraceAccount | None:
        if not isinstance(entry, dict):
            return None
        steps, total = given(entry.get("steps")), given(entry.get("step_ms"))
        if steps is None or total is None or steps < 1 or total <= 0:
            return None
        written, per_step = as_object(entry.get("slices_ms")), as_object(entry.get("per_step_ms"))
        slices = {name: max(given(written.get(name)) or 0.0, 0.0) for name in ACCOUNT_SLICES}
        per = {}
        for name in ACCOUNT_SLICES:
            values = per_step.get(name)
            per[name] = tuple(max(given(v) or 0.0, 0.0) for v in values) if isinstance(values, list) else ()
        perspective = entry.get("perspective")
        window = {key: value for key, value in as_object(entry.get("window")).items()
                  if isinstance(key, str) and given(value) is not None}
        named = {key: value for key, value in as_object(entry.get("no_operator_named")).items()
                 if isinstance(key, str) and given(value) is not None}
        waits = {key: value for key, value in as_object(entry.get("data_wait_named")).items()
                 if isinstance(key, str) and given(value) is not None}
        compiled = {key: value for key, value in as_object(entry.get("compilation_named")).items()
                    if isinstance(key, str) and given(value) is not None}
        copied = {key: value for key, value in as_object(entry.get("copies_named")).items()
                  if isinstance(key, str) and given(value) is not None}
        made = {key: value for key, value in as_object(entry.get("allocations_named")).items()
                if isinstance(key, str) and given(value) is not None}
        optimizer = entry.get("optimizer_per_step_ms")
        optimizer = tuple(max(given(v) or 0.0, 0.0) for v in optimizer) if isinstance(optimizer, list) else ()
        def counts(key: str) -> tuple[float, ...]:
            values = entry.get(key)
            return tuple(max(given(v) or 0.0, 0.0) for v in values) if isinstance(values, list) else ()

        work = counts("work_per_step")
        return cls(perspective if perspective in ("host", "device") else "host", int(steps), float(total), slices,
                   per, given(entry.get("operator_calls_per_step")), given(entry.get("dispatch_floor_us")),
                   named, waits, optimizer, work, counts("backward_passes_per_step"),
                   counts("optimizer_steps_per_step"), window, counts("eager_ops_per_step"),
                   runtime if (runtime := entry.get("eager_runtime")) in ("tensorflow", "jax") else None,
                   gpu=AccountGpu.of(entry.get("gpu")), compilation_named=compiled,
                   loader_starts_per_step=counts("loader_starts_per_step"),
                   between_steps_ms=counts("between_steps_ms"),
                   float64_per_step_ms=counts("float64_per_step_ms"),
                   float64_fallback_per_step_ms=counts("float64_fallback_per_step_ms"),
                   input_python_ms=max(given(entry.get("input_python_ms")) or 0.0, 0.0),
                   input_python_calls_per_step=max(given(entry.get("input_python_calls_per_step")) or 0.0, 0.0),
                   input_pipeline=pipeline if isinstance(pipeline := entry.get("input_pipeline"), str) else "",
                   graph_calls_per_step=counts("graph_calls_per_step"),
                   graph_runtime="jax" if entry.get("graph_runtime") == "jax" else "tensorflow",
                   scalar_reads_per_step=counts("scalar_reads_per_step"),
                   copies_per_step_ms=counts("copies_per_step_ms"), copies_named=copied, allocations_named=made,
                   unused_gradients_per_step=counts("unused_gradients_per_step"),
                   unused_backward_per_step_ms=counts("unused_backward_per_step_ms"),
                   between_cycles=tuple(gap for gap in map(CycleGap.of, entry.get("between_cycles") or [])
                                        if gap is not None) if isinstance(entry.get("between_cycles"), list) else ())


@dataclass(frozen=True)
class MemoryHolder:
    """An operator holding (or allocating) memory at a device's peak, or keeping it across steps."""

    operator: str | None = None  # None: no operator around the allocation
    nbytes: float | None = None
    blocks: float | None = None


@dataclass(frozen=True)
class MemoryPeak:
    """A memory series' peak (``allocated`` or ``reserved`` of a device in ``memory``)."""

    peak_bytes: float | None = None
    peak_ms: float | None = None  # into the rank's trace
    peak_step: float | None = None  # the profiled step it falls in
    first_bytes: float | None = None
    last_bytes: float | None = None

    @classmethod
    def of(cls, value: object) -> MemoryPeak | None:
        if not isinstance(value, dict):
            return None
        return cls(*(given(value.get(key)) for key in ("peak_bytes", "peak_ms", "peak_step", "first_bytes",
                                                        "last_bytes")))


@dataclass(frozen=True)
class DeviceMemory:
    """One device of a rank's ``memory`` (``trace_analysis.memory``): allocated and reserved, their peaks, the
    per-step growth verdict and what holds the memory."""

    device: str = "?"  # cpu, cuda:0
    device_type: float | None = None  # torch's DeviceType number: 0 CPU, 1 CUDA
    absolute: bool = False  # the allocator's totals (False: a running sum from the trace's start)
    capacity_bytes: float | None = None  # deviceProperties' totalGlobalMem (GPUs)
    allocated: MemoryPeak | None = None
    reserved: MemoryPeak | None = None  # None: the allocator reserves nothing (CPU) or the trace has no totals
    steps: float = 0  # profiled steps with memory events
    verdict: str | None = None  # growing, plateau, unknown
    per_step_bytes: float | None = None  # median growth from one step's end to the next
    rising_share: float | None = None
    growth_bytes: float | None = None  # over the profiled steps
    pairs: float | None = None  # consecutive steps compared
    at_peak_basis: str | None = None  # "live blocks", or what was allocated in the peak's step (no addresses)
    at_peak: tuple[MemoryHolder, ...] = ()
    kept: tuple[MemoryHolder, ...] = ()  # allocated inside a step, never freed

    @classmethod
    def of(cls, entry: object) -> DeviceMemory:
        entry = as_object(entry)
        growth = as_object(entry.get("growth"))
        steps = entry.get("steps")

        def holders(value: object) -> tuple[MemoryHolder, ...]:
            return tuple(MemoryHolder(text(h.get("operator")), given(h.get("bytes")), given(h.get("blocks")))
                         for h in map(as_object, value)) if isinstance(value, list) else ()
        return cls(text(entry.get("device")) or "?", given(entry.get("device_type")), entry.get("absolute") is True,
                   given(entry.get("capacity_bytes")), MemoryPeak.of(entry.get("allocated")),
                   MemoryPeak.of(entry.get("reserved")), len(steps) if isinstance(steps, list) else 0,
                   text(growth.get("verdict")), given(growth.get("per_step_bytes")),
                   given(growth.get("rising_share")), given(growth.get("total_bytes")), given(growth.get("pairs")),
                   text(entry.get("at_peak_basis")), holders(entry.get("at_peak")), holders(entry.get("kept")))


def memory_of(entry: object) -> tuple[DeviceMemory, ...]:
    """The devices of a rank's ``memory`` (none when the trace held no memory events)."""
    devices = as_object(as_object(entry).get("memory")).get("devices")
    return tuple(DeviceMemory.of(d) for d in devices) if isinstance(devices, list) else ()


@dataclass(frozen=True)
class TraceFlops:
    """A rank's ``flops`` (``trace_analysis.flops``): FLOPs counted in the profiled steps, achieved TFLOP/s and MFU."""

    per_step: float | None = None
    operators: float | None = None  # operators that carried a count
    achieved_tflops: float | None = None
    mfu: float | None = None  # 0..1 of the peak; None without a peak (a CPU, a GPU the table lacks)
    peak_tflops: float | None = None
    dtype: str | None = None
    device: str | None = None
    peak_source: str | None = None

    @classmethod
    def of(cls, entry: object) -> TraceFlops | None:
        value = as_object(entry).get("flops")
        if not isinstance(value, dict):
            return None
        return cls(given(value.get("per_step")), given(value.get("operators")), given(value.get("achieved_tflops")),
                   given(value.get("mfu")), given(value.get("peak_tflops")), text(value.get("dtype")),
                   text(value.get("device")), text(value.get("peak_source")))


@dataclass(frozen=True)
class TraceRank:
    """One rank of kineto.json (``ranks.<label>``): every fact of it a room reads."""

    label: str
    is_object: bool = False  # the entry is an object (a rank written by something else may not be)
    steps: tuple[TraceStep, ...] | None = None  # None when the entry lists no steps
    start_us: float | None = None  # first and last traced event, epoch (or trace) microseconds
    end_us: float | None = None
    span_ms: float | None = None
    step_mean_ms: float | None = None  # step_stats_ms.mean
    step_max_ms: float | None = None
    gpu: TraceGpu = field(default_factory=TraceGpu)
    dataloader: TraceLoader | None = None  # None when the entry has no data-loading object
    collectives: TraceCollectives = field(default_factory=TraceCollectives)
    cpu_ops: RankTable = field(default_factory=RankTable)
    workers: tuple[str, ...] = ()  # the recording's worker names (host_pid) merged into this rank
    account: TraceAccount | None = None  # the step-time account; None without steps or in an older kineto.json
    memory: tuple[DeviceMemory, ...] = ()  # per device, from the trace's memory events (profile_memory=True)
    cycles: float | None = None  # profiling cycles merged into this rank
    files: tuple[str, ...] = ()  # its trace files (``files``, else ``file``)
    devices: tuple[str, ...] = ()  # the devices the trace names (deviceProperties)
    gpu_ids: tuple[int, ...] = ()  # indexes into ``devices`` of the GPUs this rank ran on
    kernels: RankTable = field(default_factory=RankTable)
    gpu_mix_ms: dict[str, float | None] = field(default_factory=dict)  # GPU time by activity
    precision_ms: dict[str, float | None] = field(default_factory=dict)  # kernel time by precision
    memory_ops: tuple[MemoryOp, ...] = ()
    step_hist: StepHistogram | None = None  # None unless both counts and edges are non-empty lists
    flops: TraceFlops | None = None
    gpu_analysis: GpuAnalysis = field(default_factory=GpuAnalysis)
    world_size: int | None = None  # the job's ranks as the trace says (distributedInfo.world_size), None if not

    @property
    def step_list(self) -> tuple[TraceStep, ...]:
        return self.steps or ()

    @property
    def has_gpu_activity(self) -> bool:
        return self.gpu.has_gpu_activity

    @property
    def gpu_active_pct(self) -> float | None:
        return self.gpu.active_pct

    @property
    def gpu_window_idle_share(self) -> float | None:
        return self.gpu.window_idle_share

    @property
    def collective_share(self) -> float | None:
        return self.collectives.step_share

    @property
    def cpu_op_count(self) -> float | None:
        return self.cpu_ops.count

    @classmethod
    def of(cls, label: object, entry: object) -> TraceRank:
        if not isinstance(entry, dict):
            return cls(str(label))
        listed = entry.get("steps")
        steps = tuple(TraceStep(given(as_object(s).get("step")), given(as_object(s).get("start_ms")),
                                given(as_object(s).get("dur_ms")))
                      for s in listed) if isinstance(listed, list) else None
        stats = as_object(entry.get("step_stats_ms"))
        workers = entry.get("workers")
        files = [str(f) for f in as_items(entry.get("files")) or [entry.get("file", "")]]
        hist = as_object(entry.get("step_hist"))
        counts, edges = hist.get("counts"), hist.get("edges")
        return cls(str(label), True, steps, given(entry.get("start_us")), given(entry.get("end_us")),
                   given(entry.get("span_ms")), given(stats.get("mean")), given(stats.get("max")),
                   TraceGpu.of(entry.get("gpu")), TraceLoader.of(entry.get("dataloader")),
                   TraceCollectives.of(entry.get("collectives")), RankTable.of(entry.get("cpu_ops"), "calls"),
                   tuple(str(w) for w in workers) if isinstance(workers, list) else (),
                   TraceAccount.of(entry.get("account")), memory_of(entry), given(entry.get("cycles")),
                   tuple(files), tuple(str(d) for d in as_items(entry.get("devices"))),
                   tuple(i for i in as_items(entry.get("gpu_ids")) if isinstance(i, int)),
                   RankTable.of(entry.get("kernels"), "launches"), numbers_of(entry.get("gpu_mix_ms")),
                   numbers_of(entry.get("precision_ms")),
                   tuple(MemoryOp(str(m.get("kind", "")), given(m.get("count")), given(m.get("total_ms")),
                                  given(m.get("bytes"))) for m in map(as_object, as_items(entry.get("memory_ops")))),
                   StepHistogram(tuple(map(given, counts)), tuple(map(given, edges)))
                   if counts and edges and isinstance(counts, list) and isinstance(edges, list) else None,
                   TraceFlops.of(entry), GpuAnalysis.of(entry.get("gpu_analysis")),
                   world if isinstance(world := entry.get("world_size"), int) and not isinstance(world, bool)
                   and world > 0 else None)


def doc_traces_name(doc: object) -> str:
    """``traces_name`` of a kineto.json document's ranks (their ``file``/``files``)."""
    files: list[str] = []
    for value in as_object(as_object(doc).get("ranks")).values():
        entry = as_object(value)
        written = entry.get("files")
        listed = written if isinstance(written, list) else [entry.get("file")]
        files += [f for f in listed if isinstance(f, str)]
    return traces_name(files)


def trace_ranks_of(doc: object) -> dict[str, TraceRank]:
    """Every rank of a kineto.json document, in its order (an entry that is not an object: an empty view)."""
    ranks = as_object(as_object(doc).get("ranks"))
    return {str(label): TraceRank.of(label, entry) for label, entry in ranks.items()}


def _label(value: object) -> str | int | None:
    """A rank label as written (a str, or an int from an older writer), None for anything else."""
    return value if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)) else None



@dataclass(frozen=True)
class TraceComparison:
    """kineto.json's ``comparison`` (``trace_analysis.straggler.find_straggler``): the straggler, how the ranks
    were told apart and the figures, the typed view the PyTorch profiler section and the diagnosis' straggler
    cause both read. Numbers as given, labels and text only as such, anything else None."""

    straggler: str | int | None = None  # the straggler's rank label
    method: str | None = None  # "collective wait", "step time", "not compared"
    reason: str | None = None
    evidence: tuple[object, ...] = ()  # the sentences listed, as written
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
    def of(cls, doc: object) -> TraceComparison:
        """The view of ``doc["comparison"]`` (``doc``: kineto.json); an absent or odd one is all None."""
        c = as_object(as_object(doc).get("comparison"))
        detail = as_object(c.get("detail"))
        listed = c.get("evidence")
        return cls(_label(c.get("straggler")), text(c.get("method")), text(c.get("reason")),
                   tuple(listed) if isinstance(listed, list) else (), _label(c.get("slowest")),
                   given(c.get("slowest_excess_pct")), given(c.get("median_step_ms")), given(c.get("margin_pct")),
                   given(c.get("wait_gap_pct")),
                   _label(detail.get("rank")), given(detail.get("its_wait_share")),
                   given(detail.get("others_median_wait_share")), text(detail.get("why")))


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
    def of(cls, value: object, count_key: str) -> JobTable:
        table = as_object(value)
        rows = table.get("top")
        top = None if not isinstance(rows, list) else tuple(
            JobRow(text(r.get("name")), given(r.get("total_ms")), given(r.get(count_key)), given(r.get("mean_us")),
                   given(r.get("pct")), given(r.get("ranks")), given(r.get("min_rank_ms")),
                   given(r.get("max_rank_ms")), _label(r.get("max_rank")))
            for r in map(as_object, rows))
        return cls(top, given(table.get("distinct")), given(table.get("total_ms")), given(table.get("count")))


@dataclass(frozen=True)
class TraceJob:
    """kineto.json's ``job`` (``trace_analysis.job.job_tables``): kernels and CPU operators summed over every
    rank, read by the PyTorch profiler section's whole-job tables and compare's operator times per step."""

    listed: bool = False  # ``job`` is a non-empty object
    ranks: float | None = None  # how many ranks the tables sum
    kernels: JobTable = field(default_factory=JobTable)
    cpu_ops: JobTable = field(default_factory=JobTable)

    @classmethod
    def of(cls, doc: object) -> TraceJob:
        job = as_object(as_object(doc).get("job"))
        return cls(bool(job), given(job.get("ranks")), JobTable.of(job.get("kernels"), "launches"),
                   JobTable.of(job.get("cpu_ops"), "calls"))


@dataclass(frozen=True)
class FrameworkAccounts:
    """``framework-account.json``: the step-time account of each training process of a SageMaker job, from its
    framework events (``trace_analysis.framework_account``); ``not_accounted``: processes with steps but no
    operator in them, and why."""

    nodes: dict[str, TraceAccount] = field(default_factory=dict)
    steps: dict[str, tuple[str, ...]] = field(default_factory=dict)  # node -> its steps' numbers, in order
    workers_left_out: int = 0  # DataLoader worker processes' events, not in the account (they overlap the steps)
    not_accounted: dict[str, str] = field(default_factory=dict)
    no_operator_means: str = ""

    @classmethod
    def of(cls, doc: object) -> FrameworkAccounts:
        doc = as_object(doc)
        nodes, steps, workers = {}, {}, 0
        for label, entry in as_object(doc.get("nodes")).items():
            entry = as_object(entry)
            account = TraceAccount.of(entry.get("account"))
            if isinstance(label, str) and account is not None:
                nodes[label] = account
                listed = entry.get("steps")
                steps[label] = tuple(str(s) for s in listed) if isinstance(listed, list) else ()
                workers += int(given(entry.get("workers_left_out")) or 0)
        skipped = {key: value for key, value in as_object(doc.get("not_accounted")).items()
                   if isinstance(key, str) and isinstance(value, str)}
        means = doc.get("no_operator_means")
        return cls(nodes, steps, workers, skipped, means if isinstance(means, str) else "")
