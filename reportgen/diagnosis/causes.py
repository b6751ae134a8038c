"""Cause detectors: one small function per root cause, in a registry.

Each detector reads the ``Evidence`` (and the findings of the causes its registry row names in
``after``, so a symptom that one cause explains is not blamed on another) and returns a ``Finding`` or
None. ``REGISTRY`` holds every fact of a cause (id, title, what it reads, its place in the run); adding a
cause is a row there and one decorated function (docs/adding-a-cause.md). The decision logic is
documented in docs/diagnosis.md; keep the two in step.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable

from reportgen.diagnosis.evaluation import FIRED
from reportgen.formatting import human_duration
from reportgen.diagnosis.evidence import Evidence, dataloader_step_share
from reportgen.diagnosis.loading_cpu import OPEN, WAITS, loading_cpu
from reportgen.diagnosis.slow_step_story import FRAMEWORK_TITLES, SLICE_TITLES, fix_for, steps_paying, story
from reportgen.diagnosis.straggler_account import (ProcessStraggler, exposed_gap, lock_step_straggler,
                                                   process_straggler, rank_saving)
from reportgen.engine.slow_steps import find_period
from reportgen.section_ids import SectionId
from reportgen.timeline_view import SlowSteps
from reportgen.rulebook import RuleName


@dataclass(frozen=True)
class Cause:
    """One row of the cause registry: its id (report.json's ``cause``, ``--fail-on``), the finding's default
    title, the question of ``coverage.QUESTIONS`` it answers (a cause the data could not judge is not
    claimed absent), and ``after``: the causes whose findings its detector reads (they run first, and a
    detector sees only their findings). Its detector is the function decorated ``@detector(id)``."""

    id: str
    title: str
    question: str = "gpu-use"
    after: tuple[str, ...] = ()


# The GPU causes read from PyTorch profiler traces (detectors in gpu_causes.py); those that explain idle GPUs
# are concluded before gpu-underused, which is then blamed only when none of them explains the idle time.
GPU_CAUSES = ("host-sync", "kernel-launch-bound", "communication-bound", "no-mixed-precision", "pageable-memcpy",
              "memory-bound-kernels")
ACCOUNT_CAUSES = ("operator-overhead", "host-overhead", "compilation", "allocator-churn", "debug-mode", "loader-restart",
                  "between-steps", "step-waste", "float64", "tensor-copies", "unused-gradients", "thread-contention")
IDLE_GPU_CAUSES = ("host-sync", "kernel-launch-bound", "communication-bound", "pageable-memcpy")

# The registry, in the order the detectors run (findings of equal impact keep this order on the page).
REGISTRY: tuple[Cause, ...] = (
    Cause("io-bound", "Training waits for storage", "input-pipeline"),
    Cause("cpu-bound", "The CPUs are saturated", "input-pipeline", after=("io-bound",)),
    # read from the step-time account (account_causes.py): a loader restarted in every step is its own cause
    Cause("loader-restart", "The DataLoader starts its workers again in every step", "input-pipeline"),
    Cause("input-pipeline", "The input pipeline starves the GPUs", "input-pipeline",
          after=("cpu-bound", "io-bound", "loader-restart")),
    Cause("host-sync", "The host waits for the GPU in synchronisations"),
    Cause("kernel-launch-bound", "The GPU waits for kernel launches"),
    Cause("communication-bound", "Communication is not overlapped with compute"),
    Cause("no-mixed-precision", "Matrix math runs in fp32 on tensor-core GPUs"),
    Cause("pageable-memcpy", "Host-to-device copies from pageable memory"),
    Cause("memory-bound-kernels", "The GPU spends its time in unfused memory-bound kernels"),
    # Causes read from the step-time account (detectors in account_causes.py): each claims a slice of the step.
    Cause("operator-overhead", "Per-call operator overhead fills the step", "step-account"),
    # the process's other threads (thread_causes.py): the time under no operator is theirs, with what they slowed
    Cause("thread-contention", "Another thread of the training process takes the steps' time", "step-account"),
    Cause("host-overhead", "Every step spends time under no profiler operator", "step-account",
          after=("kernel-launch-bound", "operator-overhead", "loader-restart", "thread-contention")),
    Cause("compilation", "The training loop compiles again", "step-account"),
    Cause("allocator-churn", "Device memory is allocated and freed inside the steps", "step-account"),
    Cause("debug-mode", "A debugging aid slows every step", "step-account"),
    Cause("between-steps", "The loop spends time between its steps", "step-account"),
    Cause("float64", "The model computes in float64", "step-account"),
    Cause("tensor-copies", "The steps copy tensors that no computation needs", "step-account"),
    Cause("unused-gradients", "The backward computes gradients no optimizer uses", "step-account"),
    Cause("gpu-underused", "The GPUs are underused",
          after=("input-pipeline", "cpu-bound", "io-bound", *IDLE_GPU_CAUSES)),
    Cause("straggler", "One worker is slower than the rest", "step-times"),
    Cause("load-imbalance", "The work is spread unevenly", after=("straggler",)),
    Cause("gpu-memory-growth", "GPU memory is at risk", "memory"),
    Cause("host-memory-growth", "Host memory keeps growing", "memory"),
    Cause("memory-leak", "Memory grows every step", "memory"),  # detectors in memory_causes.py
    Cause("out-of-memory-risk", "GPU memory is close to full", "memory"),
    Cause("slow-initialization", "Slow start before the first step", "step-times"),
    Cause("step-outliers", "Some steps are much slower than the rest", "step-times",
          after=("compilation", "tensor-copies", "allocator-churn")),
    # Last: the account's waste that no cause above claimed (it reads every cause that claims a slice).
    Cause("step-waste", "Part of every step is spent outside compute", "step-account",
          after=("input-pipeline", "io-bound", "cpu-bound", "straggler", "host-sync", "communication-bound",
                 "pageable-memcpy", "kernel-launch-bound", "operator-overhead", "host-overhead", "thread-contention",
                 "compilation",
                 "allocator-churn", "debug-mode", "loader-restart", "between-steps", "step-outliers")),
)
# The vocabulary in its published order: report.json's schema enum, the JUnit causes suite (tests keep the
# schema and this equal to the registry's ids).
CAUSES = ("input-pipeline", "gpu-underused", "io-bound", "cpu-bound", "straggler", "load-imbalance",
          "gpu-memory-growth", "host-memory-growth", "slow-initialization", "step-outliers", *GPU_CAUSES,
          *ACCOUNT_CAUSES, "memory-leak", "out-of-memory-risk")
BY_ID = {cause.id: cause for cause in REGISTRY}
TITLES = {cause.id: cause.title for cause in REGISTRY}

# Thresholds (documented in docs/diagnosis.md).
GPU_IDLE = 0.40  # GPUs idle at least this share of the time: the GPU is not the bottleneck
CPU_BN = 0.20  # share of samples with a GPU idle while a core is saturated
IO_BN = 0.20  # share of samples with a GPU idle while a core waits on I/O
HOT_CORE = 70.0  # a core whose mean over the training loop is above this is busy
SATURATED = 80.0  # mean of all cores above this: the CPUs are saturated
LOADER_SHARE = 0.25  # share of step time in the DataLoader (PyTorch traces)
FEW_LOADERS = 0.70  # parallel data-loading processes below this share of the cores (the Dataloader rule's 70 %)
STRAGGLER = 0.10  # a worker's median step this much above the median of the workers
WELL_USED = 60.0  # a GPU busy this much on average over the loop is well used
FLUCTUATING = 70.0  # GPU p95 at least this while mostly idle: busy bursts between waits (LowGPUUtilization's p95)
INIT_MIN_S, INIT_SHARE = 120.0, 0.15
MEMORY_RISE = 10.0  # points of GPU memory gained over the training loop, steadily
MEMORY_FIT = 0.6  # R² of the linear fit for "steadily"
MEMORY_FULL = 90.0  # a peak at or above this is a risk of running out
# SageMaker's GPUMemoryUtilization (and record's, from NVML's utilization rates) is how busy the GPU's memory is
CONTROLLER = "GPU memory-controller activity (GPUMemoryUtilization: how busy, not how full)"
HOST_MEMORY_FIT = 0.8  # R² for a steady host-memory rise (host memory moves with caches and buffers)
IMBALANCE = 15.0  # points of GPU utilization between the busiest and the least busy node or GPU
MINOR = 0.05  # findings below this share of the job do not make a job unhealthy
WORKER = re.compile(r"^(algo-\d+)-(\d+)$")


@dataclass
class Finding:
    cause: str
    share: float  # of the job's time (0..1)
    seconds: float
    cost: float | None
    evidence: list[str]
    fix: str
    rules: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)  # raw numbers behind the evidence
    note: str = ""  # how other rules' advice is reconciled with this cause
    risk: dict | None = None  # a risk that costs no time yet (GPU memory): its own terms
    serious: bool | None = None  # None: judged from share
    heading: str = ""  # a title that fits this job better than the cause's default
    basis: str = ""  # what the impact estimate assumes, in words
    base: str = "job"  # what ``share`` is of: "job", or "profiled steps" (traces alone: the job is unknown)
    loop_share: float | None = None  # of the training loop, when the estimate is made there
    quality: str = ""  # for Data quality: evidence that disagrees with the finding's price, and which it chose
    set_aside: float = 0.0  # of the steps' time, a one-off the cause left out of its price (warm-up): not waste either

    @property
    def title(self) -> str:
        return self.heading or TITLES[self.cause]

    @property
    def counts(self) -> bool:
        """Does this finding make the job unhealthy?"""
        return self.serious if self.serious is not None else self.share >= MINOR


Detector = Callable[[Evidence, dict], "Finding | None"]
DETECTORS: dict[str, Detector] = {}  # cause id -> its detector (filled by @detector)


def detector(cause: str):
    """Register the detector of a cause of the registry (one per cause)."""
    if cause not in BY_ID or cause in DETECTORS:
        raise ValueError(f"@detector({cause!r}): not a cause of the registry, or registered twice")

    def register(func: Detector) -> Detector:
        DETECTORS[cause] = func
        return func
    return register


def run_order() -> list[tuple[Cause, Detector]]:
    """Every cause with its detector, in the registry's order; a cause without a detector, or one that reads a
    cause registered after it (or none at all), is an error here rather than a silently different result."""
    seen: set[str] = set()
    for cause in REGISTRY:
        if cause.id not in DETECTORS:
            raise ValueError(f"cause {cause.id!r} has no @detector")
        late = [c for c in cause.after if c not in seen]
        if late:
            raise ValueError(f"cause {cause.id!r} reads {late}, which must come before it in the registry")
        seen.add(cause.id)
    return [(cause, DETECTORS[cause.id]) for cause in REGISTRY]


# ----------------------------------------------------------------------------------------- helpers


def pct(value: float | None, digits: int = 0) -> str:
    return "?" if value is None else f"{value * 100:.{digits}f} %"


def secs(value: float | None) -> str:
    """One format for a duration everywhere (At a glance too): tenths under a minute ("43.3 s"), whole seconds
    from a minute on ("10 min 47 s", truncated as the job summary shows them)."""
    if value is None:
        return "?"
    if value < 60:
        return f"{value:.1f} s" if value >= 0.95 else f"{value * 1000:.0f} ms"
    return human_duration(int(value))


def plural(n, one: str, many: str | None = None) -> str:
    """"1 rule", "3 rules" (``many`` for irregular plurals)."""
    return f"{n:g} {one if n == 1 else (many or one + 's')}"


def loop_cpu(ev: Evidence) -> float | None:
    """The busiest node's CPU use over the training loop, as a fraction of all its cores (the recorded
    command's own on a shared host)."""
    pct = ev.loop_cpu_pct()
    return pct / 100 if pct is not None else None


def workers_to_hide(loader_share: float) -> int:
    """Workers that load a step's batch in no more than the rest of the step takes (at most 16)."""
    return min(16, max(1, math.ceil(loader_share / max(1 - loader_share, 0.05) - 1e-9)))


def cores_asked(ev: Evidence) -> tuple[float, float] | None:
    """(cores used, cores waited for on the run queue) over the loop where the recorded command's threads asked for
    every core of the host (the CPU they got plus their wait for a core: a recording's run-queue account); None
    otherwise, or without that account. Its loading then has no core to overlap the rest of the step on: more threads
    or workers add work to the same cores (tf-noprefetch-map: 1.25 cores used and 1.92 waited on 2 cores; its
    parallel map saved 2-13 % alone on the host, −6 % / +23 % in interleaved pairs, against 36 % claimed)."""
    cpu, queued = loop_cpu(ev), ev.loop_run_queue_pct()
    if cpu is None or queued is None or not ev.cores or cpu + queued / 100 < 1.0:
        return None
    return cpu * ev.cores, queued / 100 * ev.cores


def loader_saving(ev: Evidence, loader_share: float, workers: int, unit: str = "worker") -> tuple[float, str]:
    """(share of the training loop saved, basis) when the data loading that the training process does itself
    (``loader_share`` of its step) moves to ``workers`` worker processes (``unit``: a tf.data pipeline's parallel
    map threads, ahead of the step by its prefetch) and overlaps with the rest of the step. A step then takes at
    least the larger of: the loading spread over the workers, the rest of the step, and today's CPU work spread
    over every core (workers cannot make the cores do more than all they have)."""
    if workers <= 0:
        return loader_share, (f"the time the training loop spends loading data; no more {unit}s fit these cores, "
                              "so only cheaper loading or more cores can give it back (an upper bound)")
    cpu = loop_cpu(ev)
    bounds = {f"loading ÷ {unit}s": loader_share / workers, "the rest of the step": 1 - loader_share}
    if cpu is not None:
        bounds[f"the CPU work on all {ev.cores} cores" + (" (the command's own, not the shared host's)"
                                                           if ev.job_cpu is not None else "")] = cpu
    limit = max(bounds, key=bounds.get)
    ratio = bounds[limit]
    text = ", ".join(f"{k} {v * 100:.0f} %" for k, v in bounds.items())
    return max(1 - ratio, 0.0), (f"with {plural(workers, unit)} loading overlaps the rest of the step; a step "
                                 f"then takes at least the largest of ({text} of today's step): {limit} bounds it")


def make(ev: Evidence, cause: str, share: float, evidence: list[str], fix: str, *, loop_share: float | None = None,
         seconds: float | None = None, **kw) -> Finding:
    """A finding whose impact is ``share`` of the job, or ``loop_share`` of the training loop (made a share
    of the job here), or ``seconds``. Traces alone: shares of the profiled steps (the job is not known)."""
    if loop_share is not None:
        loop_share = min(max(float(loop_share), 0.0), 1.0)
    if ev.trace_only:  # every share is of the profiled steps, and so are the seconds
        steps_s = ev.profiled_steps_s or ev.duration_s or 0.0
        if loop_share is not None:
            share = loop_share
        elif seconds is not None:
            share = seconds / steps_s if steps_s else 0.0
        share = min(max(float(share), 0.0), 1.0)
        seconds = share * steps_s
    else:
        if loop_share is not None:
            loop = ev.loop_s if ev.loop_s else ev.duration_s
            seconds = loop_share * loop if loop else 0.0
        if seconds is not None:
            share = seconds / ev.duration_s if ev.duration_s else 0.0
        share = min(max(float(share), 0.0), 1.0)
        seconds = min(seconds, ev.duration_s or 0.0) if seconds is not None else (
            share * ev.duration_s if ev.duration_s else 0.0)
    cost = seconds * ev.price_per_s if ev.price_per_s is not None else None
    base = "profiled steps" if ev.trace_only else "job"
    return Finding(cause, share, seconds, cost, [e for e in evidence if e], fix, loop_share=loop_share, base=base,
                   **kw)


def fired(ev: Evidence, *rules: str) -> list[str]:
    return [r for r in rules if ev.state(r) == FIRED]


def gpu_idle_share(ev: Evidence) -> float | None:
    """How much of the time the GPUs sat (nearly) idle: the larger of the share of samples with a GPU under
    10 % (CPUBottleneck's count) and 1 - mean utilization over the training loop (timeline)."""
    if ev.has_gpu is False:
        return None
    candidates = [ev.gpu_low_share]
    if ev.timeline_ok and ev.gpu_mean is not None:
        candidates.append(1 - ev.gpu_mean / 100)
    active = trace_gpu_active(ev)
    if active is not None:
        candidates.append(1 - active / 100)
    if not any(c is not None for c in candidates):
        p50 = ev.usage_stat("GPU", "p50", statistics.median)
        candidates.append(None if p50 is None else 1 - p50 / 100)
    values = [c for c in candidates if c is not None]
    return max(values) if values else None


def trace_gpu_active(ev: Evidence) -> float | None:
    """Mean GPU-active share of the traced time over the ranks with GPU activity (%)."""
    active = [r.gpu_active_pct for r in ev.trace_ranks.values() if r.has_gpu_activity]
    active = [a for a in active if a is not None]
    return statistics.mean(active) if active else None


def gpu_busy_text(ev: Evidence) -> str:
    if ev.timeline_ok and ev.gpu_mean is not None:
        return f"GPU busy {ev.gpu_mean:.0f} % on average during the training loop"
    active = trace_gpu_active(ev)
    if active is not None:
        return f"GPU active {active:.0f} % of the traced time"
    p50 = ev.usage_stat("GPU", "p50", statistics.median)
    p95 = ev.usage_stat("GPU", "p95", statistics.median)
    if p50 is not None:
        return f"GPU utilization median {p50:.0f} %, p95 {p95:.0f} %" if p95 is not None else \
            f"GPU utilization median {p50:.0f} %"
    return ""


TF_CORES_FIX = ("make the map cheaper (lighter augmentation, .cache() after its deterministic part, or data prepared "
                "offline) or give the job more cores; then num_parallel_calls=tf.data.AUTOTUNE and "
                ".prefetch(tf.data.AUTOTUNE) overlap what is left with the step.")
TF_PIPELINE_FIX = ("Keep the tf.data pipeline ahead of the step: num_parallel_calls=tf.data.AUTOTUNE in map(), "
                   ".prefetch(tf.data.AUTOTUNE) at its end, .cache() after the expensive steps (or data prepared "
                   "offline), and interleave() for reading many files in parallel.")
PY_FUNCTION_FIX = ("Write the map's Python function (tf.py_function, tf.numpy_function) in TensorFlow ops so tf.data "
                   "runs it in parallel without the GIL, or prepare those samples offline and cache() them; then "
                   "num_parallel_calls=tf.data.AUTOTUNE and .prefetch(tf.data.AUTOTUNE) keep batches ahead of the "
                   "step.")
GENERATOR_FIX = ("Make the samples without the Python generator: tf.data runs Dataset.from_generator's generator one "
                 "sample at a time under the GIL, whatever num_parallel_calls says. Start from the data itself "
                 "(Dataset.from_tensor_slices of arrays, or TFRecord files read with interleave()) and do the per-"
                 "sample work in a map in TensorFlow ops with num_parallel_calls=tf.data.AUTOTUNE, or prepare the "
                 "samples offline and cache() them; then .prefetch(tf.data.AUTOTUNE).")
GENERATOR_SOURCE = "::Generator"  # the iterator tf.data's from_generator reads its Python generator with


def pipeline_python_fix(pipelines: list[str]) -> str:
    """The remedy for Python in a tf.data pipeline, by where the trace's iterators say it runs: the pipeline's
    source (a generator: no map to rewrite) or its map (a tf.py_function / tf.numpy_function)."""
    return GENERATOR_FIX if any(p.endswith(GENERATOR_SOURCE) for p in pipelines) else PY_FUNCTION_FIX


def trace_loader(ev: Evidence) -> tuple[float | None, str | None, str | None]:
    """(largest DataLoader share of step time over the ranks, that rank, its iterator class).

    The straggler the traces name is left out when there are other ranks: one rank that loads its data
    slowly holds the others back (the straggler cause, which says so), the job's input pipeline is judged
    on the ranks it holds back; counting it here too blamed the same seconds on two causes."""
    best = (None, None, None)
    straggler = ev.trace_comparison.straggler
    for label, rank in ev.trace_ranks.items():
        if straggler is not None and len(ev.trace_ranks) >= 2 and label == str(straggler):
            continue
        share = dataloader_step_share(rank, f"rank {label}" in ev.slow_steps)
        if share is not None and (best[0] is None or share > best[0]):
            best = (share, label, rank.dataloader.iterator if rank.dataloader else None)
    return best


@dataclass(frozen=True)
class AccountWait:
    """The most a training process's step-time account shows it waiting for data."""

    share: float  # of the job (of the profiled steps, traces alone): the cap on a finding pricing the same wait
    step_share: float  # of that process's steps
    label: str  # the rank or the SageMaker process (smdebug's node id)
    source: str  # where the account comes from, in words


TRACES, FRAMEWORK_EVENTS = "the profiler traces", "the framework events"


def account_wait(ev: Evidence) -> AccountWait | None:
    """The training processes' measured wait for data (the step-time account's ``data_wait``: on a GPU rank the GPU
    idle waiting for data, else the training thread waiting in the loader), the largest among the processes, as a
    share of the job: what any finding that prices the same wait from other evidence (utilization samples) may
    claim at most — one stall, one finding, one price. Only accounts that saw the input pipeline's calls count (a
    loader the profiler does not name may wait inside the passes). The straggler the traces name (or the one the
    processes' accounts tell) is left out when there are others, as in ``trace_loader``. None without such an
    account."""
    straggler = ev.trace_comparison.straggler
    traced = {label: rank.account for label, rank in ev.trace_ranks.items() if rank.account is not None
              and not (straggler is not None and len(ev.trace_ranks) >= 2 and label == str(straggler))}
    processes = dict(ev.framework.nodes) if not traced else {}
    slow = process_straggler(processes, {}) if len(processes) >= 2 else None
    if slow is not None:  # a process that waits longer for its batch is the straggler's finding, as a rank's is
        processes.pop(slow.who, None)
    found = {label: account for label, account in (traced or processes).items() if account.data_wait_named}
    if not found:
        return None
    label = max(found, key=lambda name: found[name].share("data_wait"))
    step_share = found[label].share("data_wait")
    if ev.trace_only:
        share = step_share
    else:
        loop = ev.loop_s or ev.duration_s
        if not loop or not ev.duration_s:
            return None
        share = step_share * loop / ev.duration_s
    source = TRACES if traced else FRAMEWORK_EVENTS
    return AccountWait(min(share, 1.0), step_share, label, source)


def training_processes(ev: Evidence) -> int:
    """Training processes per node: one per GPU, else the traced ranks of one host, else one."""
    return max(ev.procs_per_node or ev.gpus_per_node or 1, 1)


def worker_budget(ev: Evidence) -> int | None:
    """The data-loading workers per training process that the node's cores allow: the cores shared by its
    training processes, one core left to each process itself (None when the cores are unknown)."""
    return max(ev.cores // training_processes(ev) - 1, 0) if ev.cores else None


def suggested_workers(ev: Evidence) -> int:
    """Data-loading workers per training process within the cores' budget (at most 16); cores unknown
    (traces only): 4, a safe start."""
    budget = worker_budget(ev)
    return min(budget, 16) if budget is not None else 4


# ----------------------------------------------------------------------------------------- detectors


@detector("io-bound")
def io_bound(ev: Evidence, found: dict) -> Finding | None:
    share = ev.io_bn_share
    io_p95 = ev.usage_stat("I/O", "p95")
    waits = [s.io_wait for s in ev.series.values() if s.io_wait is not None] if ev.timeline_ok else []
    idle = gpu_idle_share(ev)
    by_series = max(waits) if waits else None
    if not ((share is not None and share >= IO_BN)
            or (by_series is not None and by_series >= 20 and (idle or 0) >= GPU_IDLE)):
        return None
    share = max(share or 0, (by_series or 0) / 100 if (idle or 0) >= GPU_IDLE else 0)
    # training that waits for storage waits in the loader's calls: the processes' own account of that wait bounds it
    share, waited, sampled, quality = held_to_account(ev, "io-bound", share, "a GPU idle while a core waited on I/O")
    evidence = [f"a GPU nearly idle while a core waited on I/O for {pct(ev.io_bn_share)} of the job (training loop)"
                if ev.io_bn_share is not None else "",
                f"I/O wait {by_series:.0f} % on average during the training loop" if by_series is not None else "",
                f"I/O wait p95 {io_p95:.0f} %" if io_p95 is not None else "",
                gpu_busy_text(ev)]
    if waited is not None and (sampled is not None or waited.source == FRAMEWORK_EVENTS):
        evidence.append(_against_account(waited, sampled, ev))
    workers = f" and raise DataLoader num_workers to {suggested_workers(ev)} so reads overlap" \
        if ev.workers is not None and ev.workers < suggested_workers(ev) else ""
    fix = ("Read the training data from local NVMe or memory instead of network storage (SageMaker FastFile or "
           "a copy to the instance's local disk), read fewer, larger files (e.g. WebDataset/TFRecord shards)"
           f"{workers}.")
    return make(ev, "io-bound", share, evidence, fix, rules=["IOBottleneck", *fired(ev, "LowGPUUtilization")],
                sections=[SectionId.IO_BOTTLENECKS, SectionId.UTILIZATION_OVER_TIME,
                          SectionId.SYSTEM_USAGE_STATISTICS],
                metrics={"io_bottleneck_share": ev.io_bn_share, "io_wait_loop_pct": by_series,
                         "io_wait_p95": io_p95, "gpu_idle_share": idle, **held_metrics(waited, sampled)},
                quality=quality, serious=True if quality else None)


@detector("cpu-bound")
def cpu_bound(ev: Evidence, found: dict) -> Finding | None:
    if ev.has_gpu is False:
        return None
    idle = gpu_idle_share(ev)
    loop = ev.loop_cpu_pct()
    cpu = loop if loop is not None else ev.cpu_stat("p50")
    if cpu is None or cpu < SATURATED or idle is None or idle < GPU_IDLE:
        return None
    share = max(ev.cpu_bn_share or 0, idle)  # the GPUs wait for the CPUs
    # cores too busy to prepare the batches: the training processes wait for data, and their own account of that
    # wait bounds what the samples suggest (one stall, one price), less what io-bound already counts of it
    share, waited, sampled, quality = held_to_account(ev, "cpu-bound", share, "the GPUs idle with the cores saturated")
    if waited is not None:
        share = max(min(share, waited.share - counted(found, "io-bound")), 0.0)
    hot, cores, _, _ = ev.busy_cores(HOT_CORE)
    over = "over the recording" if ev.job_cpu is not None and ev.job_cpu_loop is None else "during the training loop"
    evidence = [(f"CPU {cpu:.0f} % (mean of all cores) {over}" if loop is not None else
                 f"CPU utilization median {cpu:.0f} % (mean of all cores)") + ev.cpu_whose(),
                f"{hot} of {cores} cores busy above {HOT_CORE:.0f} %" if cores else "",
                f"a GPU nearly idle while a core was saturated for {pct(ev.cpu_bn_share)} of the job (training loop)"
                if ev.cpu_bn_share is not None else "",
                gpu_busy_text(ev)]
    if waited is not None and (sampled is not None or waited.source == FRAMEWORK_EVENTS):
        evidence.append(_against_account(waited, sampled, ev))
    fix = ("The training processes use every core: move preprocessing and augmentation to the GPU (e.g. NVIDIA "
           "DALI or GPU tensor transforms), cache decoded/preprocessed samples between epochs, or use an instance "
           f"with more vCPUs per GPU (today {ev.cores or '?'} cores for {ev.gpus_per_node or '?'} GPU(s) per node).")
    return make(ev, "cpu-bound", share, evidence, fix,
                rules=["CPUBottleneck", *fired(ev, "LowGPUUtilization", "BatchSize")],
                sections=[SectionId.CPU_BOTTLENECKS, SectionId.UTILIZATION_OVER_TIME,
                          SectionId.SYSTEM_USAGE_STATISTICS],
                metrics={"cpu_pct": cpu, "gpu_idle_share": idle, "cpu_bottleneck_share": ev.cpu_bn_share,
                         **held_metrics(waited, sampled)},
                quality=quality, serious=True if quality else None, note=_smaller_instance_note(ev))


def _against_account(waited: AccountWait, sampled: float | None, ev: Evidence) -> str:
    """The finding's price beside the training processes' own account of their wait for data: within it, or held
    to it (``sampled``: what the other evidence gave, when more), and why."""
    who = f"rank {waited.label}" if waited.source == TRACES else f"process {waited.label}"
    told = (f"the step-time account from {waited.source} shows the training processes waiting for data "
            f"{pct(waited.step_share)} of each step ({who}, the most of any)")
    of = "of the profiled steps" if ev.trace_only else "of the job"
    if sampled is None:
        return f"{told}: the impact stays within it"
    if sampled - waited.share < MINOR:
        return f"{told}: the impact is held to that, {pct(waited.share)} {of} (the other evidence: {pct(sampled)})"
    return (f"{told}: the impact is held to that, {pct(waited.share)} {of}, not the {pct(sampled)} priced from the "
            "utilization samples and the loader's share; those show the GPUs idle beside busy cores or loading, the "
            "account measures the wait itself, so the rest of that idle time has another cause")


def counted(found: dict, cause: str) -> float:
    """The share of the job a cause read before (``found``) already counts: 0 when it found nothing."""
    finding = found.get(cause)
    return finding.share if finding is not None else 0.0


def held_metrics(waited: AccountWait | None, sampled: float | None) -> dict:
    """The account's wait and the other evidence's share, in a finding's metrics (only where there is an account)."""
    return {} if waited is None else {"account_data_wait_share": waited.step_share, "sampled_share": sampled}


def held_to_account(ev: Evidence, cause: str, share: float, shows: str
                    ) -> tuple[float, AccountWait | None, float | None, str]:
    """A waiting-for-data cause's ``share`` (of the job) held to the training processes' own wait for data (GPU jobs
    with an account that saw the loader's calls): (the share, that wait, the share the other evidence gave when it
    was more, the Data-quality note when it was more by at least MINOR of the job: which evidence was set aside and
    why; the finding then counts against the job whatever its price, the GPUs idle that much for another reason)."""
    waited = account_wait(ev) if ev.has_gpu is not False else None  # CPU jobs: priced from the account's loading
    if waited is None or share <= waited.share + 1e-9:
        return share, waited, None, ""
    if share - waited.share < MINOR:
        return waited.share, waited, share, ""
    of = "of the profiled steps" if ev.trace_only else "of the job"
    note = (f"{cause}: the utilization samples put {shows} for {pct(share)} {of}, but the step-time account from "
            f"{waited.source} has the training processes waiting for data only {pct(waited.step_share)} of each step "
            f"({pct(waited.share)} {of}); the finding is priced from the account, which measures the wait itself. The "
            "rest of that idle time has another cause: the training processes' own work in their steps, or cores "
            "busy with something else")
    return waited.share, waited, share, note


def _smaller_instance_note(ev: Evidence) -> str:
    said = fired(ev, "LowGPUUtilization", "BatchSize")
    if not said:
        return ""
    verb = "suggests" if len(said) == 1 else "suggest"
    return (f"{' and '.join(said)} {verb} a larger batch or a smaller instance: the GPUs are idle because "
            "they wait for the CPU side, so neither helps until it keeps up.")


@detector("input-pipeline")
def input_pipeline(ev: Evidence, found: dict) -> Finding | None:
    if "cpu-bound" in found or "loader-restart" in found:
        return None
    idle = gpu_idle_share(ev)
    loader_share, loader_rank, iterator = trace_loader(ev)
    if ev.has_gpu is False and (loader_share is None or loader_share < LOADER_SHARE):
        return None  # without GPUs, only the traces' DataLoader share of step time shows training waiting for data
    hot, cores, hot_mean, rest = ev.busy_cores(HOT_CORE)
    signals = []
    if ev.cpu_bn_share is not None and ev.cpu_bn_share >= CPU_BN:
        signals.append("cpu-bottleneck")
    few_cores_busy = ev.timeline_ok and cores >= 2 and 1 <= hot <= max(1, cores // 4) and (rest or 0) < 50
    if few_cores_busy:
        signals.append("few-cores-busy")
    few_loaders = (ev.loaders is not None and ev.cores and ev.loaders < ev.cores * FEW_LOADERS) or \
        (ev.workers is not None and ev.workers <= 1)
    if few_loaders:
        signals.append("few-workers")
    if loader_share is not None and loader_share >= LOADER_SHARE:
        signals.append("dataloader-share")
    strong = {"cpu-bottleneck", "few-cores-busy", "dataloader-share"} & set(signals)
    # Fewer loaders than cores alone is weak (SageMaker's Dataloader rule fires on many healthy jobs); loading
    # in the training process itself (num_workers 0) with idle GPUs is enough.
    single = ev.workers == 0 or (iterator is not None and "SingleProcess" in str(iterator))
    # GPUs that swing between busy and idle (p95 high, mean low) wait for something; with few loaders, for data.
    # A GPU steadily low (p95 low) is a small batch instead (gpu-underused).
    p95 = ev.usage_stat("GPU", "p95")
    waiting = (idle or 0) >= GPU_IDLE and p95 is not None and p95 >= FLUCTUATING
    if waiting and few_loaders:
        signals.append("gpu-waits")
    if not strong and not ((single or waiting and few_loaders) and (idle or 0) >= GPU_IDLE):
        return None
    if (idle is None or idle < GPU_IDLE) and "dataloader-share" not in signals:
        return None
    account = ev.trace_ranks[loader_rank].account if loader_rank is not None else None
    gpu_waits = account.share("data_wait") if account is not None and account.perspective == "device" else None
    # on a GPU, loading costs only while the GPU has nothing left to run: the account's GPU idle waiting for data
    share = max(ev.cpu_bn_share or 0, min(loader_share or 0, gpu_waits if gpu_waits is not None else 1.0))
    if share < MINOR and idle is not None:
        share = idle
    # what the training processes' own account shows them waiting for data bounds what the samples suggest
    share, waited, sampled, quality = held_to_account(ev, "input-pipeline", share,
                                                      "a GPU idle beside a saturated core")
    # GPU idle time already blamed on storage is not counted twice
    share = max(share - counted(found, "io-bound"), 0.0)
    evidence = [gpu_busy_text(ev)]  # the strongest first: At a glance shows three
    if ev.cpu_bn_share is not None and ev.cpu_bn_share >= MINOR:
        cores_txt = f" ({ev.cpu_bn_cores:g} of {ev.cores} cores above 90 %)" if ev.cpu_bn_cores and ev.cores else ""
        evidence.append(f"a GPU nearly idle while a core was saturated{cores_txt} for {pct(ev.cpu_bn_share)} "
                        "of the job (training loop)")
    if few_cores_busy:
        evidence.append(f"{hot} of {cores} cores busy at {hot_mean:.0f} % while the rest idle at {rest:.0f} %")
    if ev.workers is not None:
        evidence.append(f"DataLoader num_workers = {ev.workers}" + (f" on {ev.cores} cores" if ev.cores else "")
                        + (f" ({ev.loaders:g} data-loading processes in parallel)" if ev.loaders else ""))
    if loader_share is not None:
        evidence.append(f"{pct(loader_share)} of the profiled step time in the DataLoader (rank {loader_rank})"
                        + (f", iterator {iterator}" if iterator else "")
                        + (f"; the GPU idle for {pct(gpu_waits)} of it, waiting for the data" if gpu_waits is not None
                           else ""))
    if "gpu-waits" in signals:
        evidence.append(f"GPU utilization p95 {p95:.0f} %: busy in bursts, idle in between")
    loading = {k: v for k, v in ev.framework_during_bn.items() if "dataloader" in k.lower()}
    if loading:
        evidence.append(f"{sum(loading.values()):.0f} % of the framework time during those samples was data loading")
    if waited is not None and (sampled is not None or waited.source == FRAMEWORK_EVENTS):
        evidence.append(_against_account(waited, sampled, ev))  # (a trace's loader evidence already gives its wait)
    n = suggested_workers(ev)
    # CPU work or waiting: how many workers help (a starved process uses little CPU too: the run queue tells)
    reading = loading_cpu(ev, loader_share) if ev.has_gpu is False else None
    waits = reading is not None and reading.reading == WAITS
    if waits and loader_share:  # waiting workers need no core each: as many as hide the loading
        n = max(n, workers_to_hide(loader_share))
    if reading is not None:
        evidence.append(reading.evidence(ev.cpu_whose()))
    now = ev.workers if ev.workers is not None else (0 if single else None)
    procs = training_processes(ev)
    machine = (f"{ev.cores} cores per node for {plural(procs, 'training process', 'training processes')}"
               if ev.cores else "")
    more = now is None or n > now
    full = cores_asked(ev)  # the process's threads already ask for every core: no core for loading to overlap on
    if full is not None:
        more = False
        evidence.append(f"the training process's threads asked for every core over the loop: {full[0]:.2f} of the "
                        f"{ev.cores} cores used and {full[1]:.2f} more waited for on the run queue; more threads or "
                        "workers for the loading would add work to the same cores")
    if more:
        multi = now is None and iterator is not None and "MultiProcessing" in str(iterator)
        fix = (f"Raise the DataLoader's num_workers from {now} to {n}" if now is not None else
               "Raise the DataLoader's num_workers: it already loads in worker processes (the trace does not say "
               "how many) and training still waits for them; give it up to " + (
                   f"{n}" if ev.cores else "the cores ÷ training processes − 1") if multi else
               f"Load and preprocess data in parallel: a DataLoader with num_workers={n}")
        hide = workers_to_hide(loader_share) if reading is not None and reading.reading == OPEN and loader_share else n
        fix += (" (the loading waits on I/O rather than computing: waiting workers need no core of their own)"
                if waits else f" ({machine}, one core left to each process" + (
                    f"; up to {hide} if the loading waits on I/O rather than computing, which this recording "
                    "cannot tell: workers that only wait take no core" if hide > n else "") + ")"
                if machine else "")
        if ev.pin_memory is False:
            fix += ", set pin_memory=True"
        fix += ", and keep batches coming with persistent_workers=True and prefetch_factor≥2."
    elif full is not None:
        fix = (f"The cores are the limit: the training process's threads already ask for all {ev.cores} cores, so "
               "more data-loading threads or workers find none free: make samples cheaper to prepare (cached "
               "decoding, lighter augmentation, data prepared offline) or give the job more cores.")
    else:
        wanted = procs * (now + 3)  # each process, and two more workers each than today
        cores = f"{ev.cores} cores per node" if ev.cores else "the cores"
        limit = (f"{cores} leave no core for a data-loading worker beside {plural(procs, 'training process', 'training processes')}"
                 if now == 0 else f"{cores} leave {plural(now, 'data-loading worker')} to each of "
                 f"{plural(procs, 'training process', 'training processes')}")
        fix = (f"The cores are the limit: {limit}. Make samples cheaper to prepare (cached decoding, lighter "
               f"augmentation), augment on the GPU (e.g. NVIDIA DALI), or use {wanted} vCPUs per node (2 more "
               "workers each)")
        fix += "; set pin_memory=True." if ev.pin_memory is False else "."
    loop_share, basis = None, ""
    if ev.has_gpu is not False:
        basis = ("the GPUs' idle time waiting for data in the loop, given back once data keeps up"
                 + ("" if more else " (here by cheaper loading or more vCPUs)")
                 + (f"; at most the training processes' own wait for data ({waited.source}' step-time account)"
                    if sampled is not None and waited is not None else ""))
    elif loader_share is not None:
        tf_data = account is not None and any("IteratorGetNext" in name for name in account.data_wait_named)
        loop_share, basis = loader_saving(ev, loader_share, n if more else 0,
                                          "parallel map thread" if tf_data else "worker")
        if more and reading is not None and reading.reading == OPEN:  # the smaller of the two savings, and why
            basis += ("; whether the loading computes or waits is open here, so it is priced as CPU work (the "
                      "smaller saving: workers that only wait would need no core each)")
    if account is not None and any("IteratorGetNext" in name for name in account.data_wait_named):
        # a tf.data pipeline, not a DataLoader: its own remedies, and what its threads run tells which
        evidence = [e.replace("step time in the DataLoader", "step time waiting for the tf.data pipeline "
                              "(IteratorGetNext)") for e in evidence]
        fix = TF_PIPELINE_FIX if full is None else (
            f"The cores are the limit: the training process's threads already ask for all {ev.cores} cores, so a "
            f"parallel map or a prefetch finds none free to run on: {TF_CORES_FIX}")
        if account.input_python_calls_per_step >= 1:
            generator = account.input_pipeline.endswith(GENERATOR_SOURCE)
            evidence.append(f"the tf.data pipeline runs Python: {account.input_python_calls_per_step:.0f} "
                            + (f"calls a step into its source, a Python generator (Dataset.from_generator: "
                               f"{account.input_pipeline}, EagerPyFunc), " if generator else
                               "tf.py_function / tf.numpy_function calls a step (EagerPyFunc, PyFunc), ")
                            + f"{account.input_python_ms / 1000:.2f} s of them on the pipeline's threads during the "
                            f"profiled steps' {account.step_ms / 1000:.2f} s; Python holds the GIL, so they run one at a time "
                            "whatever num_parallel_calls says, beside the training step's own Python")
            fix = pipeline_python_fix([account.input_pipeline])
            if ev.has_gpu is False:
                loop_share = loader_share
                basis = ("the wait for the pipeline in the profiled steps: with the " +
                         ("samples made" if generator else "map") + " in TensorFlow ops the "
                         "pipeline prepares batches in parallel, ahead of the step")
    return make(ev, "input-pipeline", share, evidence, fix, loop_share=loop_share, basis=basis,
                heading="" if ev.has_gpu is not False else "Training waits for its input pipeline",
                rules=[*(["Dataloader", "CPUBottleneck"] if ev.has_gpu is not False else []),
                       *fired(ev, "LowGPUUtilization", "BatchSize")],
                sections=[SectionId.DATALOADING_ANALYSIS, SectionId.CPU_BOTTLENECKS, SectionId.UTILIZATION_OVER_TIME,
                          *([SectionId.GPU_KERNELS_OPERATORS] if loader_share is not None else [])],
                metrics={"gpu_idle_share": idle, "cpu_bottleneck_share": ev.cpu_bn_share,
                         "busy_cores": hot if cores else None, "cores": ev.cores, "num_workers": ev.workers,
                         "parallel_loaders": ev.loaders, "dataloader_step_share": loader_share,
                         "suggested_workers": n if more else now, "worker_budget": worker_budget(ev),
                         "training_processes": procs, "signals": signals, **held_metrics(waited, sampled),
                         # the CPU the training process asked for: what it used and waited for on the run queue
                         **({"loading_cpu": reading.metrics()} if reading is not None and (
                             reading.reading == OPEN or reading.queued is not None) else {})},
                quality=quality, serious=True if quality else None,
                note=_smaller_instance_note(ev))


@detector("gpu-underused")
def gpu_underused(ev: Evidence, found: dict) -> Finding | None:
    if ev.has_gpu is False or found.keys() & {"input-pipeline", "cpu-bound", "io-bound"}:
        return None
    if any(found[c].counts for c in IDLE_GPU_CAUSES if c in found):
        return None  # the traces say why the GPU is idle
    idle = gpu_idle_share(ev)
    batch = ev.state("BatchSize") == FIRED
    if not batch and (idle is None or idle < GPU_IDLE):
        return None
    hot, cores, _, _ = ev.busy_cores(HOT_CORE)
    if ev.timeline_ok and hot and cores and hot > max(1, cores // 4):
        return None  # many cores busy: the CPU side, not the batch (cpu-bound judges)
    busiest = max((v for s in ev.series.values() for v in s.gpu_util.values()), default=None) \
        if ev.timeline_ok else ev.usage_stat("GPU", "p50")
    if busiest is not None and busiest >= WELL_USED:
        return None  # some GPU is well used: the others are unevenly loaded (load-imbalance judges), not the batch
    mem95 = ev.usage_stat("GPU memory", "p95")  # GPUMemoryUtilization: controller activity, not how full
    full = ev.gpu_memory_used_peak()  # how full at its peak, % (a `record` with NVML); None without it
    util95 = ev.usage_stat("GPU", "p95")
    cpu95 = ev.cpu_stat("p95")
    mean = ev.gpu_mean if ev.timeline_ok else None
    share = 1 - mean / 100 if mean is not None else (idle if idle is not None else 0.5)
    factor = None
    if full:
        factor = max(2, min(8, int(70 // max(full, 1))))
    evidence = [gpu_busy_text(ev),
                f"GPU utilization p95 {util95:.0f} %" if util95 is not None and mean is not None else "",
                f"{CONTROLLER} p95 {mem95:.0f} %" if mem95 is not None else "",
                f"GPU memory in use at most {full:.0f} %" if full is not None else "",
                f"CPU p95 {cpu95:.0f} % (no core saturated){ev.cpu_whose()}" if cpu95 is not None else "",
                "BatchSize fired: CPU, GPU and GPU memory-controller activity all low at once" if batch else ""]
    gpus = (ev.gpus_per_node or 1) * max(len(ev.nodes), 1)
    bigger = f"about {factor}×" if factor else "2-4×"
    fix = (f"Increase the batch size {bigger} (GPU memory in use peaks at {full:.0f} %, so it fits), scaling the learning "
           "rate with it" if full is not None else f"Increase the batch size {bigger}, scaling the learning rate")
    fix += (f"; or run on fewer GPUs (today {gpus})" if gpus > 1 else "; or run on a smaller, cheaper GPU instance")
    fix += "."
    return make(ev, "gpu-underused", share, evidence, fix,
                rules=[*fired(ev, "BatchSize", "LowGPUUtilization")],
                sections=[SectionId.BATCH_SIZE, SectionId.GPU_UTILIZATION_ANALYSIS, SectionId.SYSTEM_USAGE_STATISTICS],
                metrics={"gpu_mean_pct": mean, "gpu_p95": util95, "gpu_memory_p95": mem95, "cpu_p95": cpu95,
                         "batch_factor": factor})


PROCESS_FIXES = {
    "data_wait": ("Give {who} the same input pipeline as the others: it waits longer for each batch before the step "
                  "(more DataLoader workers within its cores, a faster local copy of its shard), or give it a smaller "
                  "shard."),
    "no_operator": ("Find what {who} runs in its steps outside the forward and backward passes that the others do not: "
                    "work done on one process only (logging, metrics, checkpointing on the first rank) holds every "
                    "other process back; move it off the step or to a background thread. smdebug's Python profiling "
                    "(cProfile) of that process names the functions."),
}
PROCESS_BASIS = ("what evening it out saves: the whole gap when a fix removes its extra time, (n-1)/n of it when the "
                 "extra is work (the forward and backward passes) spread over the n processes")


def _rank_accounts(ev: Evidence) -> dict:
    return {label: r.account for label, r in ev.trace_ranks.items() if r.account is not None}


def _process_straggler(ev: Evidence) -> tuple | None:
    """The straggler among a SageMaker job's training processes, from their step-time accounts: (share, who,
    evidence, kind, fix, metrics) or None."""
    found = process_straggler(ev.framework.nodes, FRAMEWORK_TITLES)
    if found is None:
        return None
    who, title = worker_name(found.who), FRAMEWORK_TITLES[found.slower_in]
    excess = found.its_ms / found.others_ms - 1 if found.others_ms else 0.0
    evidence = ([f"median step on {who}, the wait for its batch included (the step-time account): "
                 f"{found.its_ms / 1000:.3f} s vs {found.others_ms / 1000:.3f} s on the others (+{excess * 100:.0f} %)"]
                if found.method == "step time" else _lock_step_evidence(ev.framework.nodes, found, who, "processes")
                if found.method == "busy time" else
                [f"the other processes wait {found.others_ms:.0f} ms per step in exposed communication (median), {who} "
                 f"{found.its_ms:.0f} ms"])
    evidence += [f"{who} is slower in {title}: {found.its_slice_ms:.0f} ms per step against {found.others_slice_ms:.0f} "
                 "ms on the others (medians)", found.evened.why]
    fix = PROCESS_FIXES.get(found.slower_in)
    metrics = {"method": found.method, "slower_in": found.slower_in, "gap_share": found.gap_share,
               "processes": len(ev.framework.nodes)}
    return found.evened.share, found.who, evidence, "processes", fix and fix.format(who=who), metrics


def _lock_step_evidence(accounts: dict, found: ProcessStraggler, who: str, workers: str) -> list[str]:
    """What shows a straggler in lock step without collectives: equal steps, unequal work, per worker."""
    steps = {label: statistics.median(a.step_durations_ms()) for label, a in accounts.items() if a.per_step_whole}
    slack = {label: statistics.median(accounts[label].per_step_ms.get("no_operator") or (0.0,)) for label in steps}
    name = (lambda label: f"rank {label}") if workers == "ranks" else worker_name
    per_worker = "; ".join(f"{name(label)} {steps[label]:.0f} ms, {steps[label] - slack[label]:.0f} ms of it working, "
                           f"{slack[label]:.0f} ms under no operator" for label in sorted(steps)[:8])
    return [f"the {workers} run in lock step: their median steps are within "
            f"{(max(steps.values()) / min(steps.values()) - 1) * 100:.0f} % of each other, but {who} works "
            f"{found.its_ms:.0f} ms of each step against {found.others_ms:.0f} ms on the others (medians): they wait "
            "for it under no operator, in collectives the account does not see",
            f"median step per {'rank' if workers == 'ranks' else 'process'}: {per_worker}"]


def _lock_step_rank(ev: Evidence) -> tuple | None:
    """A straggler among trace ranks in lock step whose accounts hold no collective (the traces' collective wait
    cannot tell one): (share, who, evidence, kind, fix, metrics) or None."""
    ranks = _rank_accounts(ev)
    if len(ranks) < 2 or sum(1 for a in ranks.values() if a.share("communication") > 0) >= 2:
        return None
    found = lock_step_straggler(ranks, SLICE_TITLES, "ranks")
    if found is None:
        return None
    who = f"rank {found.who}"
    evidence = [*_lock_step_evidence(ranks, found, who, "ranks"),
                f"{who} is slower in {SLICE_TITLES[found.slower_in]}: {found.its_slice_ms:.0f} ms per step against "
                f"{found.others_slice_ms:.0f} ms on the others (medians)", found.evened.why]
    metrics = {"method": found.method, "slower_in": found.slower_in, "gap_share": found.gap_share}
    return found.evened.share, who, evidence, "ranks", None, metrics


@detector("straggler")
def straggler(ev: Evidence, found: dict) -> Finding | None:
    best = None
    medians = {w: s.stats.p50 for w, s in ev.steps.items() if s.stats.p50}
    if len(ev.framework.nodes) >= 2:  # the processes' own steps, the wait for each batch included: not StepOutlier's
        best = _process_straggler(ev)
    elif len(medians) >= 2:
        slow = max(medians, key=medians.get)
        mid = statistics.median(v for w, v in medians.items() if w != slow)  # the others
        excess = medians[slow] / mid - 1 if mid else 0
        if excess >= STRAGGLER:
            share = 1 - mid / medians[slow]  # of the training loop
            best = (share, slow, [f"median step on {worker_name(slow)}: {medians[slow]:.3f} s vs {mid:.3f} s on the others "
                                  f"(+{excess * 100:.0f} %)"], "step times", None, {})
    comparison = ev.trace_comparison
    quality, held = "", False
    if comparison.straggler is not None:
        rank = str(comparison.straggler)
        evidence = [str(e) for e in comparison.evidence if e]
        if comparison.reason:
            evidence.append(f"rank {rank} is slower because {comparison.reason}")
        waits = (comparison.others_median_wait_share, comparison.its_wait_share)
        priced = rank_saving(_rank_accounts(ev), rank) if comparison.method == "collective wait" else None
        if priced is not None:
            share = priced.share
            evidence.append(priced.why)
        elif comparison.method == "collective wait" and all(w is not None for w in waits):
            share = max(waits[0] - waits[1], 0.0)  # the others wait for it this much longer, in step time
            exposed = exposed_gap(_rank_accounts(ev), rank)
            if exposed is not None and share > max(exposed, 0.0):  # their extra wait overlaps their compute
                share, quality = _straggler_held(rank, share, max(exposed, 0.0), evidence)
                held = True
        else:
            excess = (comparison.slowest_excess_pct or 0) / 100
            share = excess / (1 + excess) if excess > 0 else 0.0
            evidence = evidence or [f"rank {rank}'s mean step is {excess * 100:.0f} % above the median of the ranks"]
        if best is None or share > best[0] or held:  # held to the accounts: no other price overrides them
            best = (share, f"rank {rank}", evidence, "ranks", None, {})
    elif best is None:
        best = _lock_step_rank(ev)
    if best is None:
        return None
    share, who, evidence, kind, fix, extra = best
    if ev.state("LoadBalancing") == FIRED:
        evidence.append("LoadBalancing fired: the GPUs' utilization histograms differ")
    if fix is None:
        fix = (f"Find why {worker_name(who)} is slower: compare its data shard size, input pipeline and hardware with "
               "the others (a slower disk or network, thermal throttling, a noisy neighbour); give it less data or "
               "replace it.")
    if kind == "ranks" and "data loading" in (comparison.reason or ""):
        fix = (f"Give {worker_name(who)} the same input pipeline as the others: its data loading is the slower part (more "
               "DataLoader workers or a faster local copy of its shard), or give it a smaller shard.")
    basis = PROCESS_BASIS if kind == "processes" else (
        "the other workers wait for it in every step: if it kept their pace, the training loop would be this much "
        "shorter")
    return make(ev, "straggler", 0.0, evidence, fix, loop_share=share, basis=basis,
                rules=[*fired(ev, "LoadBalancing", "StepOutlier")],
                sections=[SectionId.GPU_KERNELS_OPERATORS, SectionId.STEP_DURATION_ANALYSIS] if kind == "ranks" else
                [SectionId.FRAMEWORK_METRICS_SUMMARY, SectionId.STEP_DURATION_ANALYSIS] if kind == "processes" else
                [SectionId.STEP_DURATION_ANALYSIS, SectionId.UTILIZATION_OVER_TIME],
                metrics={"who": who, "compared": kind, **extra}, quality=quality)


def _straggler_held(rank: str, waited: float, exposed: float, evidence: list[str]) -> tuple[float, str]:
    """A trace straggler priced from the ranks' collective wait held to the slice in which the others wait for it:
    their exposed communication beyond its own (``exposed``, of the step; the rest of their wait overlaps their own
    compute and costs nothing). Returns (the price, the Data-quality note when the wait said at least MINOR more);
    the evidence gets the line that says so."""
    told = (f"the step-time accounts show the other ranks' exposed communication (collectives with no compute beside "
            f"them) {pct(exposed)} of their step beyond rank {rank}'s own")
    evidence.append(f"{told}: the impact is held to that, not the {pct(waited)} of their step that they wait longer in "
                    "collectives, which overlaps their own compute")
    if waited - exposed < MINOR:
        return exposed, ""
    return exposed, (f"straggler: the ranks' collective wait puts the others waiting for rank {rank} {pct(waited)} of "
                     f"their step longer than it, but the step-time accounts show only {pct(exposed)} of their step in "
                     "exposed communication beyond its own; the finding is priced from the accounts, since a wait "
                     "that overlaps compute costs nothing")


@detector("load-imbalance")
def load_imbalance(ev: Evidence, found: dict) -> Finding | None:
    """A node or GPU doing far less than the others while the steps stay in lock step (a slow worker that
    paces the others is the straggler instead: the others' GPUs wait for it)."""
    if ev.has_gpu is False or "straggler" in found:
        return None
    spread = [(f"{worker_name(node)}/{gpu}", v) for node, s in ev.series.items() for gpu, v in s.gpu_util.items()] \
        if ev.timeline_ok else []
    source = "mean GPU utilization over the training loop"
    if len(spread) < 2:
        medians = {node: None if u.p50 is None else float(u.p50) for node, u in ev.usage_of("GPU").items()}
        spread = [(worker_name(node), v) for node, v in medians.items() if v is not None]
        source = "median GPU utilization of each node"
    if len(spread) < 2:
        return None
    top_who, top = max(spread, key=lambda x: x[1])
    low_who, low = min(spread, key=lambda x: x[1])
    if top - low < IMBALANCE or top <= 0:
        return None
    mean = statistics.fmean(v for _, v in spread)
    behind = sum(1 for _, v in spread if top - v >= IMBALANCE)
    kind = "GPUs" if "/" in top_who else "nodes"
    evidence = [f"{low_who} busy {low:.0f} % against {top:.0f} % on {top_who} ({source})",
                f"{behind} of {len(spread)} {kind} at least {IMBALANCE:.0f} points under the busiest"]
    medians = [s.stats.p50 for s in ev.steps.values() if s.stats.p50]
    if len(medians) >= 2:
        evidence.append(f"median step times within {(max(medians) / min(medians) - 1) * 100:.0f} % of each other: "
                        "the workers run in lock step")
    for rule in fired(ev, "LoadBalancing", "LowGPUUtilization"):
        evidence.append(f"{rule} fired {plural(ev.rules[rule].triggered, 'time')}")
    fix = (f"Spread the work evenly: {low_who} does far less than {top_who}. Check the data-parallel setup: "
           "uneven shards or batch sizes per node or GPU, a sampler that does not split the data across every rank "
           "(DistributedSampler), work pinned to one device, or a GPU the job does not use at all.")
    basis = ("with the work spread evenly every GPU would be as busy as their average: the loop would be shorter by "
             f"1 − average/busiest ({mean:.0f} % / {top:.0f} %)")
    return make(ev, "load-imbalance", 0.0, evidence, fix, loop_share=1 - mean / top, basis=basis,
                rules=[*fired(ev, "LoadBalancing", "LowGPUUtilization")],
                sections=[SectionId.WORKLOAD_BALANCING, SectionId.UTILIZATION_OVER_TIME,
                          SectionId.SYSTEM_USAGE_STATISTICS],
                metrics={"least_busy": low_who, "least_busy_pct": low, "busiest": top_who, "busiest_pct": top,
                         "mean_pct": mean, "compared": kind})


def worker_name(worker: str) -> str:
    """A node as the user knows it: SageMaker's framework workers are ``<node>-<pid>`` (``algo-2-27`` is algo-2,
    process 27)."""
    match = WORKER.match(str(worker))
    return f"{match.group(1)} (pid {match.group(2)})" if match else str(worker)


def _fit(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    """(slope per second, R²) of a least-squares line."""
    if len(points) < 10:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if not sxx or not syy:
        return None
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, (slope * slope * sxx) / syy


def steady_rise(points: list[tuple[float, float]], min_r2: float) -> dict | None:
    """A memory series (t, %) that rises steadily: at least MEMORY_RISE points over the loop with a linear fit of
    R² ≥ ``min_r2``; with where it starts and ends (the means of its first and the peak of its last twentieth)
    and when it is full at this rate."""
    fit = _fit(points)
    if fit is None:
        return None
    slope, r2 = fit
    rise = slope * (points[-1][0] - points[0][0])
    if slope <= 0 or rise < MEMORY_RISE or r2 < min_r2:
        return None
    tail = max(len(points) // 20, 1)
    last = max(p[1] for p in points[-tail:])
    return {"slope": slope, "r2": r2, "rise": rise, "first": statistics.fmean(p[1] for p in points[:tail]),
            "last": last, "to_full": max(100 - last, 0) / slope}


@detector("gpu-memory-growth")
def gpu_memory_growth(ev: Evidence, found: dict) -> Finding | None:
    growth = None  # (time to full s, node/gpu, rise, last)
    used = any(s.gpu_memory_used for s in ev.series.values())  # how full (record + NVML), else controller activity
    what = "GPU memory in use" if used else CONTROLLER
    if ev.timeline_ok:
        for node, s in ev.series.items():
            for gpu, points in (s.gpu_memory_used if used else s.gpu_memory).items():
                resident = [i for i, p in enumerate(points) if p[1] > 0]  # the model on the GPU
                points = points[resident[0]:resident[-1] + 1] if resident else []
                trend = steady_rise(points, MEMORY_FIT)
                if trend is not None and (growth is None or trend["to_full"] < growth[0]):
                    growth = (trend["to_full"], f"{node}/{gpu}", trend["rise"], trend["last"], trend["slope"])
    jumps = ev.state("GPUMemoryIncrease") == FIRED
    rule = ev.rules.get(RuleName.GPU_MEMORY_INCREASE)
    peak = ev.gpu_memory_used_peak() if used else ev.gpu_memory_peak()
    if growth is None and not jumps:
        return None
    evidence, risk = [], {}
    if growth:
        to_full, who, rise, last, slope = growth
        evidence.append(f"{what} on {who} rose steadily by {rise:.0f} points over the training loop, to "
                        f"{last:.0f} % ({slope * 3600:.0f} points per hour)")
        evidence.append(f"at this rate it is full in {secs(to_full)}" if used else
                        f"at this rate it reaches 100 % in {secs(to_full)}")
        risk.update(where=who, rise_points=rise, points_per_hour=slope * 3600)
        risk["time_to_full_s" if used else "time_to_100_pct_s"] = to_full
    if jumps and rule is not None:
        evidence.append(f"GPUMemoryIncrease fired {rule.triggered} times: sudden jumps in {CONTROLLER}")
    if peak is not None:
        evidence.append(f"peak {what} {peak:.0f} %" if used else f"peak memory-controller activity {peak:.0f} %")
        risk["peak_pct" if used else "peak_activity_pct"] = peak  # peak_pct: of the GPU's memory (occupancy) only
    serious = bool(growth and (growth[0] < 10 * (ev.duration_s or growth[0]))) or (used and (peak or 0) >= MEMORY_FULL)
    fix = ("Find what keeps GPU memory alive across steps: tensors kept in lists (losses appended without "
           ".item()/.detach()), growing caches, or an accumulating graph; check torch.cuda.memory_summary() every N "
           "steps. Only move to a GPU with more memory once usage is flat." if growth else
           "Look at the steps where memory jumps (larger or variable-size batches, evaluation, checkpointing); cap "
           "the largest batch or sequence length so the peak stays under the GPU's memory.")
    if not used:
        fix += " The metric is controller activity, not bytes: torch.cuda.max_memory_reserved() tells how full it is."
    note = ("GPUMemoryIncrease suggests an instance with more GPU memory; a steady rise is a leak that would "
            "fill any GPU, so fix it first.") if growth and jumps else ""
    return make(ev, "gpu-memory-growth", 0.0, evidence, fix, rules=[*fired(ev, "GPUMemoryIncrease")],
                sections=[SectionId.UTILIZATION_OVER_TIME, SectionId.GPU_MEMORY], metrics=risk, risk=risk,
                serious=serious, heading="" if used else "GPU memory-controller activity keeps rising" if growth
                else "GPU memory-controller activity jumps",
                note=note)


@detector("host-memory-growth")
def host_memory_growth(ev: Evidence, found: dict) -> Finding | None:
    """Host memory rising steadily through the loop: the same trend test as GPU memory, stricter on the fit
    (the page cache and allocator pools move host memory too)."""
    best = None
    for node, s in ev.series.items() if ev.timeline_ok else ():
        trend = steady_rise(s.host_memory, HOST_MEMORY_FIT)
        if trend is not None and (best is None or trend["to_full"] < best[0]):
            best = (trend["to_full"], node, trend)
    if best is None:
        return None
    to_full, node, trend = best
    rise, first, last, slope, r2 = trend["rise"], trend["first"], trend["last"], trend["slope"], trend["r2"]
    loop = ev.loop_s or ev.duration_s or to_full
    evidence = [f"host memory on {worker_name(node)} rose steadily from {first:.0f} % to {last:.0f} % of the node's "
                f"memory over the training loop ({slope * 3600:.0f} points per hour, R² {r2:.2f})",
                f"at this rate it is full in {secs(to_full)}" + (f", {to_full / loop:.1f}× this loop's length"
                                                                 if loop else "")]
    if ev.job_cpu is not None:  # a recording on a shared host: other processes' memory is in the host's figure
        evidence.append(f"the host was shared with other work, whose memory this counts too; the recorded command's "
                        f"own processes peaked at {ev.job_cpu['rss_peak_bytes'] / 1e6:.0f} MB")
    fix = ("Find what the training process keeps from step to step: losses or outputs stored with their autograd "
           "graph (keep loss.item() or loss.detach(), not loss), lists, dicts or caches that only grow, metrics "
           "accumulated as tensors; in DataLoader workers, Python objects of the dataset copied as they are touched "
           "(keep them in numpy arrays). Compare tracemalloc snapshots, or each process's memory, every N steps.")
    risk = {"time_to_full_s": to_full, "where": node, "rise_points": rise, "points_per_hour": slope * 3600,
            "first_pct": first, "last_pct": last, "memory": "host"}
    return make(ev, "host-memory-growth", 0.0, evidence, fix, sections=[SectionId.UTILIZATION_OVER_TIME,
                                                                         SectionId.SYSTEM_USAGE_STATISTICS],
                metrics=risk, risk=risk, serious=to_full < 10 * loop)


@detector("slow-initialization")
def slow_initialization(ev: Evidence, found: dict) -> Finding | None:
    init, duration = ev.init_s, ev.duration_s
    rule_fired = ev.state("MaxInitializationTime") == FIRED
    if init is None or not duration:
        return None
    share = init / duration
    if not rule_fired and not (init >= INIT_MIN_S and share >= INIT_SHARE):
        return None
    downloads = [s.platform_net_init for s in ev.series.values() if s.platform_net_init]
    evidence = [f"first step {secs(init)} after the job started ({pct(share)} of the job)",
                f"{max(downloads) / 1e6:.0f} MB/s received before the first step (input download)" if downloads else "",
                "MaxInitializationTime fired" if rule_fired else ""]
    fix = ("Stream the input instead of downloading it before training (SageMaker FastFile or Pipe mode), "
           "start from a container with the dependencies installed, and load the model/checkpoint lazily.")
    return make(ev, "slow-initialization", share, evidence, fix, rules=[*fired(ev, "MaxInitializationTime")],
                sections=[SectionId.INITIALIZATION_TIME, SectionId.TRAINING_JOB_SUMMARY,
                          SectionId.UTILIZATION_OVER_TIME],
                metrics={"initialization_s": init, "download_bytes_per_s": max(downloads) if downloads else None})


def _paying_alike(ev: Evidence, worker: str, why) -> tuple[tuple[int, ...], float, int | None] | None:
    """The steps of the slow steps' rank that pay the slice they are slow in (not compute: larger inputs are
    judged as such) without being outliers: (their positions, the slice's excess there in ms, the period of all
    the steps paying it); a trace rank's or a SageMaker process's."""
    if why is None or why.slice in ("compute", "warm-up"):
        return None
    rank = ev.trace_ranks.get(worker[len("rank "):]) if worker.startswith("rank ") else None
    account = rank.account if rank is not None else ev.framework.nodes.get(worker)
    if account is None:
        return None
    paying, excess = steps_paying(account, why.slice)
    extra = tuple(i for i in paying if i not in why.first_step_positions)
    if not extra:
        return None
    beat = find_period(list(paying), 0, account.steps - 1, [excess[i] for i in paying])
    return extra, sum(excess[i] for i in extra), beat[0] if beat else None


# The account's slices a finding claims whole, in every step that pays them (not only their median step): slow steps
# slow in one of them are that finding's already (compiling again; tensors made or memory freed in the step)
CLAIMED_WHOLE = {"compilation": "compilation", "memory_management": "allocator-churn"}


def _copies_excess_ms(ev: Evidence, worker: str, why) -> float:
    """The script's own copies (``copies_per_step_ms``) in the slow steps beyond the copies' median step (ms): time
    the tensor-copies finding claims, whichever steps pay it."""
    rank = ev.trace_ranks.get(worker[len("rank "):]) if worker.startswith("rank ") else None
    account = rank.account if rank is not None else None
    if why is None or account is None or len(account.copies_per_step_ms) != account.steps:
        return 0.0
    usual = statistics.median(account.copies_per_step_ms)
    return sum(max(account.copies_per_step_ms[i] - usual, 0.0) for i in why.first_step_positions)


@detector("step-outliers")
def step_outliers(ev: Evidence, found: dict) -> Finding | None:
    rule_fired = ev.state("StepOutlier") == FIRED
    if not ev.duration_s:
        return None
    period, loop_share, seconds, why = None, None, None, None
    from_process = False  # slow steps found on a SageMaker process's account, which the framework summary shows
    if ev.slow_steps:  # every step's duration known (engine, or enough profiled steps): the robust count
        slowed = {w: s for w, s in ev.slow_steps.items() if s.count}
        if not slowed:
            return None
        worker, top = max(slowed.items(), key=lambda kv: kv[1].seconds_lost)
        from_process = worker in ev.framework.nodes
        listed = top.slowest
        worst = listed[0] if listed else None
        period = top.period
        why = story(ev, worker, listed)
        if why is not None and why.only_warmup and not rule_fired:
            return None  # only the first steps are slow: start-up work every run pays, no slow step in the loop
        if why is not None and why.by_design and not rule_fired:
            return None  # they run the optimizer the other steps skip: gradient accumulation, by design
        kept_s = max(top.seconds_lost - (why.warmup_ms / 1000.0 if why is not None else 0.0), 0.0)
        claimed = CLAIMED_WHOLE.get(why.slice) if why is not None else None
        claimed = claimed if claimed in found else None
        if claimed is not None and not rule_fired:
            return None  # that finding counts these steps' slice already, all of it: one stall, one finding
        evidence = [f"{top.count} of {top.steps} steps on {worker_name(worker)} over {top.threshold_s:.2f} s "
                    f"(median {top.median_s:.2f} s + 5 MAD)",
                    f"{top.periodic_count} of them every {period} steps" if period else "",
                    f"slowest: step {worst.step}, {worst.duration_s:.2f} s" if worst else "",
                    (f"{secs(kept_s)} lost in these {top.steps} profiled steps "
                     f"({kept_s / top.total_s * 100:.0f} % of their time; the impact applies that share "
                     "to the training loop)" if worker.startswith("rank ") and top.total_s and not ev.trace_only
                     else f"{secs(_lost_over_workers(slowed))} lost over {len(slowed)} workers ({secs(kept_s)} "
                     "there)" if len(slowed) > 1 else f"{secs(kept_s)} lost there")]
        if why is not None:
            titles = SLICE_TITLES if worker.startswith("rank ") else FRAMEWORK_TITLES
            evidence.append(f"the slow steps are slow in {titles[why.slice]}: {why.excess_ms[why.slice] / why.steps:.0f} "
                            f"ms more than the median step each ({why.share * 100:.0f} % of their extra time, "
                            "from the step-time account)")
        lost = _lost_over_workers(slowed)
        if why is not None and why.warmup_positions:
            lost = max(lost - why.warmup_ms / 1000.0, 0.0)
            n = len(why.warmup_positions)
            first = "the first profiled step is" if n == 1 else f"the first {n} profiled steps are"
            evidence.append(f"{first} slow too ({secs(why.warmup_ms / 1000.0)} over the median step): start-up work "
                            "every run pays, left out of this cost")
        more = _paying_alike(ev, worker, why) if claimed is None else None
        if claimed is not None and why is not None:  # the rule fired: the rest of their extra time is this finding's
            taken = why.excess_ms.get(why.slice, 0.0)
            lost = max(lost - taken / 1000.0, 0.0)
            titles = SLICE_TITLES if worker.startswith("rank ") else FRAMEWORK_TITLES
            evidence.append(f"{secs(taken / 1000.0)} of their extra time is {titles.get(why.slice, why.slice)}: "
                            f"counted by the {claimed} finding, not here")
        if more is not None:  # steps that pay the same slice without being outliers: the same work, counted here
            positions, extra_ms, beat = more
            lost += extra_ms / 1000.0
            period = period or beat
            titles = SLICE_TITLES if worker.startswith("rank ") else FRAMEWORK_TITLES
            evidence.append(f"{plural(len(positions), 'more step')} pay the same {titles[why.slice]} without being "
                            f"outliers ({secs(extra_ms / 1000.0)} in all)" + (f": with them, every {beat} steps"
                                                                            if beat else "") + ", counted here too")
        copied = _copies_excess_ms(ev, worker, why) if "tensor-copies" in found else 0.0
        if copied > 0:  # the script's own copies, slower in those steps: the tensor-copies finding counts them
            lost = max(lost - copied / 1000.0, 0.0)
            evidence.append(f"{secs(copied / 1000.0)} of their extra time is the script's own tensor copies, slower "
                            "there: counted by the copies' finding, not here")
        if worker.startswith("rank ") and top.total_s:
            loop_share = lost / top.total_s  # of the profiled steps, and so of the loop
        else:
            seconds = lost
        metrics: dict[str, Any] = {"outlier_steps": top.count, "seconds_lost": top.seconds_lost, "period": period,
                                   "worker": worker, "threshold_s": top.threshold_s, "median_s": top.median_s}
    elif ev.outliers:
        by_step: dict[str, float] = {}
        for o in ev.outliers:  # a step slow on several workers stalls the job once
            excess = o["duration_s"] - (o["median_s"] or 0)
            by_step[o["step"]] = max(by_step.get(o["step"], 0.0), excess)
        seconds = sum(max(v, 0) for v in by_step.values())
        worst = max(ev.outliers, key=lambda o: o["duration_s"])
        median = worst["median_s"]
        evidence = [f"{plural(len(ev.outliers), 'outlier step')} on "
                    f"{plural(len({o['worker'] for o in ev.outliers}), 'worker')}",
                    f"slowest: step {worst['step']} on {worker_name(worst['worker'])}, {worst['duration_s']:.2f} s vs "
                    f"median {median:.2f} s" if median else f"slowest: step {worst['step']} ({worst['duration_s']:.2f} s)",
                    f"{secs(seconds)} lost against the median step"]
        period = _period([int(o["step"]) for o in ev.outliers if str(o["step"]).isdigit()])
        metrics = {"outlier_steps": len(ev.outliers), "seconds_lost": seconds, "period": period}
    else:
        counted = [(w, s) for w, s in ev.steps.items() if s.outliers and s.stats.p99 is not None]
        if not counted or not rule_fired:
            return None
        seconds = sum(s.outliers * max(s.stats.p99 - (s.stats.p50 or 0), 0) for _, s in counted)
        seconds /= max(len(counted), 1)
        evidence = [f"{plural(s.outliers, 'outlier step')} on {worker_name(w)} (p99 {s.stats.p99:.2f} s vs "
                    f"median {(s.stats.p50 or 0):.2f} s)" for w, s in counted][:3]
        evidence.append(f"about {secs(seconds)} lost (estimated from the rule's statistics)")
        metrics = {"outlier_steps": None, "seconds_lost": seconds, "period": None}
    finding = make(ev, "step-outliers", 0.0, evidence, "", loop_share=loop_share, seconds=seconds)
    if not rule_fired and finding.share < 0.01:
        return None
    fix = ("Find what runs in the slow steps (listed in the step-duration section): checkpointing, logging, "
           "evaluation, garbage collection, loader restarts; make it asynchronous or rarer.")
    if period:
        fix = (f"The slow steps come every {period} steps: look for work done every {period} steps (checkpointing, "
               "logging, evaluation) and make it asynchronous or less frequent.")
    if why is not None and metrics["worker"].startswith("rank "):
        rank = ev.trace_ranks.get(metrics["worker"][len("rank "):])
        loader = rank.dataloader if rank is not None else None
        fix = fix_for(why, loader.workers if loader is not None else None, period, ev.job_cpu is not None)
    elif why is not None:  # a SageMaker process: its DataLoader has workers when their events were left out
        fix = fix_for(why, ev.framework.workers_left_out > 0, period, framework=True)
    if why is not None:
        metrics = {**metrics, "slow_in": why.slice, "excess_ms_by_slice": why.excess_ms,
                   "optimizer_excess_ms": why.optimizer_excess_ms}
    return make(ev, "step-outliers", 0.0, evidence, fix, loop_share=loop_share, seconds=seconds,
                rules=[*fired(ev, "StepOutlier")],
                sections=([SectionId.FRAMEWORK_METRICS_SUMMARY] if from_process else [])
                + [SectionId.STEP_DURATION_ANALYSIS, SectionId.UTILIZATION_OVER_TIME],
                metrics=metrics, basis="if the slow steps took as long as the median step")


def _lost_over_workers(slowed: dict[str, SlowSteps]) -> float:
    """Time the job lost to slow steps: synchronous workers wait for each other's slow steps, so a step slow on
    several workers stalls the job once (its largest excess) and slow steps at different steps add up. When a
    worker has more slow steps than it lists, the most affected worker's loss (a lower bound)."""
    if any(s.count > len(s.slowest) for s in slowed.values()):
        return max(s.seconds_lost for s in slowed.values())
    by_step: dict[str, float] = {}
    for s in slowed.values():
        for item in s.slowest:
            excess = max(item.duration_s - s.median_s, 0.0)
            by_step[item.step] = max(by_step.get(item.step, 0.0), excess)
    return sum(by_step.values())


def _period(steps: list[int]) -> int | None:
    """A common interval between outlier steps (e.g. every 500), when there is one."""
    steps = sorted(set(steps))
    if len(steps) < 3:
        return None
    gaps = {b - a for a, b in zip(steps, steps[1:])}
    gap = math.gcd(*gaps)
    return gap if gap > 1 and len(gaps) <= 2 else None
