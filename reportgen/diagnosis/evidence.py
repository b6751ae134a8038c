"""The numbers a diagnosis reasons from, gathered once from everything the report has.

Sources, each optional: the rule outputs (SageMaker's or our engine's), ``timeline.json`` (our
engine's per-node series: per-core and per-GPU utilization, GPU memory, I/O wait over time) and
``kineto.json`` (PyTorch profiler traces per rank) and a ``reportgen record`` recording's summary
(``recording.json``: the recorded command's own CPU). Every field is None / empty when its source is
absent, and ``not_judged`` says what could therefore not be looked at.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from reportgen.command_flags import steps_of_command
from reportgen.diagnosis.profiler_cost import (ProfilerOverhead, after_window, profiler_overhead,
                                               with_collection, without_profiler_cost)
from reportgen.diagnosis.evaluation import NOT_EVALUATED, evaluate_rule
from reportgen.engine.slow_steps import slow_steps
from reportgen.json_values import as_object, finite
from reportgen.job_processes import churn_within
from reportgen.job_usage import cpu_used, loop_end_from_demand, loop_start_from_demand, time_before_cpu
from reportgen.rule_outputs import (BottleneckDetails, DataloaderDetails, JobTimes, NodeUsage, RuleOutputs, StepDetails,
                                    WorkerSteps, command_line, gpus_of, outlier_steps_of, profiler_exports,
                                    recorded_children, recorded_children_idle, recorded_command, recorded_demand,
                                    recorded_idle_to_script_end, recorded_run_queue, recorded_script_end, recorded_usage,
                                    recorded_threads, recorded_busiest_threads,
                                    system_usage_of, traces_written)
from reportgen.thread_usage import WindowThreads
from reportgen.timeline_view import SlowSteps, Timeline
from reportgen.trace_ranks import FrameworkAccounts, TraceComparison, TraceLoader, TraceRank
from reportgen.rulebook import RuleName

SUMMARY_RULES = ("OverallSystemUsage", "OverallFrameworkMetrics")
MIN_TIMELINE_S = 60.0  # a shorter recording is too short to judge utilization from
_GPU = re.compile(r"^gpu\d+$")


def _mean(values) -> float | None:
    values = [v for v in values if finite(v) is not None]
    return sum(values) / len(values) if values else None


@dataclass
class NodeSeries:
    """One node's training-loop averages from timeline.json (bucket means, % unless noted)."""

    gpu_util: dict[str, float] = field(default_factory=dict)  # per GPU, mean over the loop
    gpu_memory: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # per GPU: (t, %) in the loop
    # of GPUMemoryUtilization: memory-controller activity (how busy the memory is), not how full it is
    gpu_memory_used: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # GPUMemoryUsedPercent:
    # how full (NVML's memory info, `reportgen record`), per GPU: (t, % of its memory) in the loop
    host_memory: list[tuple[float, float]] = field(default_factory=list)  # (t, % of the host's memory) in the loop
    cores: list[float] = field(default_factory=list)  # per-core mean over the loop
    cpu_total: float | None = None
    io_wait: float | None = None
    platform_net_init: float | None = None  # bytes/s received through the platform before the first step


@dataclass
class Evidence:
    rules: dict = field(default_factory=dict)  # name -> RuleOutput
    states: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (state, reason)
    duration_s: float | None = None
    init_s: float | None = None
    loop_s: float | None = None
    loop: tuple[float, float] | None = None  # epoch seconds
    nodes: list[str] = field(default_factory=list)
    gpus_per_node: int | None = None
    cores: int | None = None
    has_gpu: bool | None = None
    usage: tuple[NodeUsage, ...] = ()  # OverallSystemUsage: each metric on each node
    gpu_low_share: float | None = None  # share of snapshots with a GPU nearly idle (CPUBottleneck's count)
    cpu_bn_share: float | None = None  # ... and a core > its threshold at the same time
    cpu_bn_cores: float | None = None  # median number of cores above the threshold at those moments
    io_bn_share: float | None = None
    framework_during_bn: dict[str, float] = field(default_factory=dict)  # % of framework time, CPU bottlenecks
    workers: int | None = None  # DataLoader num_workers
    loaders: float | None = None  # parallel data-loading processes (Dataloader's median)
    pin_memory: bool | None = None
    series: dict[str, NodeSeries] = field(default_factory=dict)
    timeline_s: float | None = None  # span of the timeline
    steps: dict[str, WorkerSteps] = field(default_factory=dict)  # worker -> StepOutlier's step_stats + outliers
    outliers: list[dict] = field(default_factory=list)  # {step, worker, duration_s, median_s, start_s}
    trace_ranks: dict[str, TraceRank] = field(default_factory=dict)  # rank -> its trace analysis (kineto.json)
    trace_comparison: TraceComparison = field(default_factory=TraceComparison)
    # SageMaker's framework events: each training process's step-time account (framework-account.json)
    framework: FrameworkAccounts = field(default_factory=FrameworkAccounts)
    slow_steps: dict[str, SlowSteps] = field(default_factory=dict)  # worker/rank -> engine.slow_steps summary
    trace_only: bool = False  # only profiler traces: no job times, no system metrics
    # traces alone: the profiled steps' time (the longest rank's sum of its steps), what "of the profiled
    # steps" impacts are shares of; None when no rank has steps (the trace's span stands in)
    profiled_steps_s: float | None = None
    profiler_export_s: float | None = None  # the profiler's own export inside the training loop (left out of it)
    shutdown_s: float | None = None  # a recording's: from the loop's end to the job's end
    loop_marks: tuple[str, str] | None = None  # a recording's: how the loop's start and end were found
    # a recording's: times its process count changed inside the loop (children that came and went), and the most
    process_churn: tuple[int, int] | None = None
    profiler_overhead: ProfilerOverhead | None = None  # the profiler's cost per recorded step (None: no traces)
    trace_span_s: float | None = None  # first to last traced event over every rank and cycle
    profiled_s: float | None = None  # the traced cycles' own time (a rank's cycles added up)
    procs_per_node: int | None = None  # training processes per node (GPUs per node, or ranks per host)
    price_per_s: float | None = None  # whole job (all instances), when the instance and price are known
    raw: bool = False  # made from raw data by our engine (timeline.json is there)
    # A recording on a shared host: the recorded command's own CPU, % of the host's cores (mean, p50, p95) beside
    # the host's mean, and its peak RSS. The host's figures count the neighbours' work, so the CPU evidence uses
    # these instead.
    job_cpu: dict[str, float] | None = None
    # ... and its threads' time runnable but waiting for a core (the scheduler's run queue), mean % of the host's
    # cores; None where the recording has no such account
    job_run_queue: float | None = None
    # both over the training loop less the profiler's export (job-metrics.jsonl's ticks, where the analysis kept
    # them), % of the host's cores; None: only the whole recording's are known
    job_cpu_loop: float | None = None
    job_run_queue_loop: float | None = None
    export_spans: list[tuple[float, float]] = field(default_factory=list)  # the profiler's exports inside the loop
    # a recording's: the command's own process split by thread over the loop (its main thread against the others),
    # and the other threads that used the most over the recording (name, CPU s); None / empty: not recorded
    loop_threads: WindowThreads | None = None
    busiest_threads: list[tuple[str, float]] = field(default_factory=list)
    not_judged: list[str] = field(default_factory=list)

    def state(self, rule: str) -> str:
        return self.states.get(rule, (NOT_EVALUATED, "no output"))[0]

    def evaluated(self, rule: str) -> bool:
        return rule in self.states and self.states[rule][0] != NOT_EVALUATED

    def usage_of(self, metric: str) -> dict[str, NodeUsage]:
        """OverallSystemUsage's ``metric`` node by node."""
        return {u.node: u for u in self.usage if u.metric == metric}

    def usage_stat(self, metric: str, stat: str, how=max) -> float | None:
        values = [finite(u.stat(stat)) for u in self.usage_of(metric).values()]
        values = [v for v in values if v is not None]
        return how(values) if values else None

    def gpu_memory_used_peak(self) -> float | None:
        """How full the fullest GPU got, % of its memory (GPUMemoryUsedPercent, a `record` with NVML), None
        without that metric."""
        peaks = [p for s in self.series.values() for points in s.gpu_memory_used.values() for _, p in points]
        return max(peaks) if peaks else None

    def gpu_memory_peak(self) -> float | None:
        """Highest GPU memory-controller activity (GPUMemoryUtilization: how busy, not how full) of any single
        GPU: GPUMemoryIncrease's per-GPU max, else the node-level maximum of OverallSystemUsage (a mean over the
        node's GPUs)."""
        rule = self.rules.get(RuleName.GPU_MEMORY_INCREASE)
        peaks = [finite(g.stat("gpu_max")) for node in gpus_of(rule.details if rule else None) for g in node.gpus]
        peaks = [p for p in peaks if p is not None]
        return max(peaks) if peaks else self.usage_stat("GPU memory", "max")

    @property
    def gpu_mean(self) -> float | None:
        """Mean GPU utilization over the training loop, all GPUs of all nodes (timeline), else None."""
        return _mean([v for s in self.series.values() for v in s.gpu_util.values()])

    @property
    def timeline_ok(self) -> bool:
        return bool(self.series) and (self.timeline_s or 0) >= MIN_TIMELINE_S

    def cpu_stat(self, stat: str) -> float | None:
        """CPU use over the job (% of all cores, "p50" / "p95"): the recorded command's own on a shared host,
        else OverallSystemUsage's busiest node."""
        if self.job_cpu is not None:
            return self.job_cpu.get(stat)
        return self.usage_stat("CPU", stat)

    def loop_cpu_pct(self) -> float | None:
        """The busiest node's mean CPU use (% of its cores) over the training loop (timeline); on a shared host
        the recorded command's own mean share instead (the host's counts the neighbours'): over the loop less the
        profiler's export where the recording has it tick by tick, else over the whole recording
        (:meth:`job_cpu_over` says which)."""
        if self.job_cpu is not None:
            if self.job_cpu_loop is not None:  # the command's own CPU time over the loop's ticks: no minute needed
                return self.job_cpu_loop
            return self.job_cpu["mean"] if self.timeline_ok else None
        totals = [s.cpu_total for s in self.series.values() if s.cpu_total is not None] if self.timeline_ok else []
        return max(totals) if totals else None

    def loop_run_queue_pct(self) -> float | None:
        """On a shared host, the recorded command's threads runnable but waiting for a core (the scheduler's run
        queue), mean % of the host's cores over the same window as :meth:`loop_cpu_pct`; None without that account
        (recordings before it, kernels that keep none) or where utilization is not judged. With
        :meth:`loop_cpu_pct` it is the CPU the command asked for: a starved process asks for much and gets little,
        a waiting one asks for little."""
        if self.job_cpu is None:
            return None
        if self.job_cpu_loop is not None:
            return self.job_run_queue_loop
        return self.job_run_queue if self.timeline_ok else None

    def job_cpu_over(self) -> str:
        """Over which window the recorded command's own CPU figures are, in words."""
        if self.job_cpu is not None and self.job_cpu_loop is None:
            return ("over the whole recording, its start-up included (the analysis kept no tick-by-tick figures of "
                    "the command to read the loop's alone)")
        return "over the loop"

    def cpu_whose(self) -> str:
        """Whose CPU the figures are, for an evidence line: empty unless the host was shared."""
        if self.job_cpu is None:
            return ""
        return (f" (the recorded command's own share of the host's cores; the host, shared with other work, was at "
                f"{self.job_cpu['host']:.0f} %)")

    def busy_cores(self, threshold: float = 70.0) -> tuple[int, int, float | None, float | None]:
        """(cores whose loop mean is above ``threshold``, cores, their mean, median of the others) on the
        node with the most such cores; none on a shared host (a busy core may be a neighbour's)."""
        best = (0, 0, None, None)
        if self.job_cpu is not None:
            return best
        for s in self.series.values():
            if not s.cores:
                continue
            hot = [c for c in s.cores if c > threshold]
            rest = [c for c in s.cores if c <= threshold]
            cand = (len(hot), len(s.cores), _mean(hot), statistics.median(rest) if rest else None)
            if cand[0] > best[0] or best[1] == 0:
                best = cand
        return best


def _job_times(ev: Evidence, outputs: RuleOutputs) -> None:
    rule = outputs.get(RuleName.MAX_INITIALIZATION_TIME)
    times = JobTimes.of(rule.details if rule else None)
    start, end = finite(times.start_s), finite(times.end_s)
    if start is not None and end is not None and end >= start:
        ev.duration_s = end - start
        first, last = finite(times.first_step_us), finite(times.last_step_us)
        if first is not None and last is not None and last >= first:
            ev.loop = (first / 1e6, last / 1e6)
            ev.init_s = max(first / 1e6 - start, 0.0)
            ev.loop_s = (last - first) / 1e6
    if ev.duration_s is not None and ev.loop is None and ev.trace_ranks and start is not None:
        # a recording with traces: the loop runs from the first traced event (the profiler starts with the
        # loop) to the end of the job; what came before is start-up
        firsts = [finite(r.start_us) for r in ev.trace_ranks.values()]
        firsts = [f / 1e6 for f in firsts if f is not None and start <= f / 1e6 <= start + ev.duration_s]
        # a profiler schedule waits before it records: torch numbers the steps from the profiler's start, so the
        # first traced ProfilerStep#k had about k steps before it, inside the loop (kept within the job)
        # (at the steps' time without the profiler where its cost was measured: those steps ran unrecorded)
        overhead = ev.profiler_overhead
        # (after one window the unrecorded steps' time only where the profiler's cost was most of the recorded step:
        # else the recorded median stands for them, the host's load theirs too)
        unrecorded = overhead.unrecorded_mean_ms if overhead is not None and overhead.per_step_ms is not None and (
            overhead.unrecorded_span is None or overhead.excluded) else None
        step_cpu = unrecorded_step_cpu(overhead, outputs.recording)
        earlier = [s for s in (_loop_start_before_trace(r, unrecorded, step_cpu) for r in ev.trace_ranks.values())
                   if s is not None and start <= s]
        firsts = [min(firsts + earlier)] if firsts and earlier else firsts
        if firsts:
            ev.loop = _loop_marks(ev, outputs.recording, (min(firsts), start + ev.duration_s), start)
            if isinstance(outputs.recording, dict) and "process_changes" in outputs.recording:
                ev.process_churn = churn_within(outputs.recording["process_changes"], *ev.loop)
            ev.init_s = ev.loop[0] - start
            ev.shutdown_s = start + ev.duration_s - ev.loop[1]
            ev.loop_s = ev.loop[1] - ev.loop[0]
    if ev.duration_s is None and ev.trace_ranks:
        spans = [finite(r.span_ms) for r in ev.trace_ranks.values()]
        spans = [s for s in spans if s]
        if spans:
            ev.duration_s = max(spans) / 1000.0
            ev.loop_s = ev.duration_s
            ev.trace_only = True
            totals = [sum(d for d in (finite(x.dur_ms) for x in r.step_list) if d is not None and d > 0)
                      for r in ev.trace_ranks.values()]
            if max(totals, default=0) > 0:
                ev.profiled_steps_s = min(max(totals) / 1000.0, ev.duration_s)
    if ev.duration_s is None and ev.timeline_s:
        ev.duration_s = ev.timeline_s


FROM_STEPS = "the first profiled step, less the steps the profiler's schedule waited before recording"
AT_EXIT = "the command's exit (the steps after the last profiled one and its shutdown are not told apart)"
CHILDREN_START = "the job's first child process (a DataLoader's workers start with the loop's first batch)"
CHILDREN_END = ("its last child process's end (a DataLoader's workers end with the loop or with the script's last "
                "line, before the interpreter's teardown)")
CHILDREN_IDLE = ("its child processes' last work before they idled to their end (a DataLoader's workers stop when "
                 "the loop stops asking for batches; kept to the script's end, they outlive it)")
SCRIPT_END = "the end of the command's script (its last line, before the interpreter's teardown)"
DEMAND_START = ("the end of start-up: the command asked for less CPU from then on to the profiled steps (its CPU and "
                "its wait for a core; a loop that waits asks less than its start-up)")
DEMAND_END = ("the end of the loop's level of CPU asked: more from then on to the command's end (its CPU and its wait "
              "for a core; work after the loop, the interpreter's teardown)")
IDLE_TO_SCRIPT_END = ("the command's last work before it idled up to the end of its script (neither running nor "
                      "waiting for a core: a training loop works until its last step)")


def _loop_marks(ev: Evidence, recording: dict | None, estimate: tuple[float, float],
                job_start: float) -> tuple[float, float]:
    """The loop's ends: the estimate from the traces (``estimate``: the first profiled step less the waited steps,
    the command's exit), or where the recording saw them: its child processes' first start, if before the first
    traced event, and their last work before they idled to their end (where the recording kept their CPU: workers
    that outlive the loop), else their last end, if after the profiler's last activity (its traces' last event and
    write) and before the exit; else the command's last work where it then idled up to its script's end, else the
    end of the command's script (its atexit hooks, before the interpreter's teardown), in the same bounds.
    ``ev.loop_marks`` says which, for the job account."""
    lo, hi = estimate
    ev.loop_marks = (FROM_STEPS, AT_EXIT)
    children = recorded_children(recording)
    firsts = [t / 1e6 for t in (finite(r.start_us) for r in ev.trace_ranks.values()) if t is not None]
    lasts = [t / 1e6 for t in (finite(r.end_us) for r in ev.trace_ranks.values()) if t is not None]
    lasts += list(traces_written(recording).values())
    start_mark = children.start_s if children is not None else None
    demand = recorded_demand(recording)
    if start_mark is not None and firsts and job_start <= start_mark <= min(firsts):
        lo = start_mark
        ev.loop_marks = (CHILDREN_START, ev.loop_marks[1])
    elif firsts:
        start_mark = loop_start_from_demand(demand, min(firsts))
        if start_mark is not None and job_start <= start_mark <= min(firsts):
            lo = start_mark
            ev.loop_marks = (DEMAND_START, ev.loop_marks[1])
    script_end = recorded_script_end(recording)
    demand_end = loop_end_from_demand(demand, max(lasts), script_end if script_end is not None else hi) if lasts else None
    for end_mark, how in ((recorded_children_idle(recording) if children is not None else None, CHILDREN_IDLE),
                          (children.end_s if children is not None else None, CHILDREN_END),
                          (recorded_idle_to_script_end(recording), IDLE_TO_SCRIPT_END),
                          (demand_end, DEMAND_END), (script_end, SCRIPT_END)):
        if end_mark is not None and lasts and max(lasts) <= end_mark <= hi:
            ev.loop_marks = (ev.loop_marks[0], how)
            return lo, end_mark
    return lo, hi


def unrecorded_step_cpu(overhead: ProfilerOverhead | None, recording: dict | None) -> tuple[object, float] | None:
    """(the recording's ``job_usage`` series, the CPU seconds the command used per step without the profiler) where
    the profiler's cost was measured from the steps after its window and the recording kept the command's CPU; else
    None. A step's CPU holds steadier than its time on a shared host: a step that waits longer for a core uses no
    more CPU (``microbatch``'s 21 waited steps: 0.50-3.43 s, 0.08-0.11 CPU s each)."""
    if overhead is None or overhead.per_step_ms is None or overhead.unrecorded_span is None \
            or overhead.unrecorded_steps <= 0 or not isinstance(recording, dict):
        return None
    rows = recording.get("job_usage")
    used = cpu_used(rows, *overhead.unrecorded_span)
    return (rows, used / overhead.unrecorded_steps) if used is not None and used > 0 else None


def _loop_start_before_trace(rank: TraceRank, unrecorded_ms: float | None = None,
                             step_cpu: tuple[object, float] | None = None) -> float | None:
    """Epoch seconds at which the loop began, from the first traced step's number k: k median steps before it, or k
    steps of ``unrecorded_ms`` (the steps' mean time without the profiler, where its cost was measured), or, where
    ``step_cpu`` gives the command's CPU series and a step's CPU without the profiler, where the command had k steps'
    CPU left to use before the first traced step (the waited steps' time is the shared host's, their CPU their own)."""
    steps = [x for x in rank.step_list if finite(x.step) is not None and finite(x.dur_ms) and finite(x.start_ms) is not None]
    begin = finite(rank.start_us)
    if not steps or begin is None:
        return None
    first = min(steps, key=lambda x: x.start_ms)
    k = finite(first.step)
    if k is None or k < 2 or k != int(k):  # one step before is the schedule's warm-up, no waiting schedule
        return None
    if step_cpu is not None:
        at = time_before_cpu(step_cpu[0], begin / 1e6 + first.start_ms / 1000.0, k * step_cpu[1])
        if at is not None:
            return at
    step_s = (unrecorded_ms if unrecorded_ms is not None and unrecorded_ms > 0
              else statistics.median(x.dur_ms for x in steps)) / 1000.0
    return begin / 1e6 + first.start_ms / 1000.0 - k * step_s


XSPACE_PROFILE = "plugins/profile/"  # where JAX's and TensorFlow's profilers write a session's files


def xspace_exports(ev: Evidence, recording: dict | None) -> list[tuple[float, float]]:
    """The JAX / TensorFlow profiler's export as one span of epoch seconds: from the traces' last event (the
    profiler stopped collecting there: stop_trace(), stop()) to the last write of a file it wrote under
    ``plugins/profile/`` (recording.json's ``traces_written_s``; JAX writes the XSpace and a Chrome-trace copy).
    Empty without such files, or when that is no such interval (over an hour, or the write before the end)."""
    ends = [end for name, end in traces_written(recording).items() if XSPACE_PROFILE in name]
    last = [finite(r.end_us) for r in ev.trace_ranks.values()]
    last = [t / 1e6 for t in last if t is not None]
    if not ends or not last:
        return []
    start, end = max(last), max(ends)
    return [(start, end)] if 0.0 <= end - start <= 3600.0 else []


def _exports(ev: Evidence, outputs: RuleOutputs) -> list[tuple[float, float]]:
    """Every export of the profiler the recording kept (torch's from the end of the cycle it writes, JAX's and
    TensorFlow's from their traces' end), epoch seconds."""
    return with_collection(profiler_exports(outputs.recording), ev.trace_ranks) + xspace_exports(ev, outputs.recording)


def leave_out_profiler_export(ev: Evidence, outputs: RuleOutputs) -> None:
    """A recording's profiler exports inside the training loop are the profiler's time, not training: left out of
    the loop that shares of the profiled steps are applied to (torch's export took 32-202 s of real jobs)."""
    if ev.loop is None or ev.loop_s is None or ev.trace_only:
        return
    lo, hi = ev.loop
    spans = _exports(ev, outputs)
    ev.export_spans = sorted((max(start, lo), min(end, hi)) for start, end in spans if min(end, hi) > max(start, lo))
    inside = sum(end - start for start, end in ev.export_spans)
    if inside > 0:
        ev.profiler_export_s = inside
        ev.loop_s = max(ev.loop_s - inside, 0.0)


def _profiler_cost_after_window(ev: Evidence, outputs: RuleOutputs) -> None:
    """With one profiling cycle, the profiler's cost per recorded step from the steps after its window
    (``profiler_cost.after_window``): where the recording marks the loop's end (not the command's exit, which holds
    the teardown) and its command names the steps the loop ran. Measured, the loop's start is found again, its waited
    steps at the CPU an unrecorded step used where the recording kept the command's CPU; where the cost is most of the
    recorded step it is also taken out of the ranks' accounts, and without the CPU the waited steps are counted at
    the unrecorded steps' mean time."""
    overhead = ev.profiler_overhead
    if overhead is None or overhead.per_step_ms is not None or overhead.pauses or ev.loop is None or ev.trace_only:
        return
    if ev.loop_marks is None or ev.loop_marks[1] == AT_EXIT:
        return
    given = steps_of_command(command_line(outputs.recording))
    measured = after_window(ev.trace_ranks, given, ev.loop[1], _exports(ev, outputs)) if given is not None else None
    if measured is None:
        return
    ev.profiler_overhead = measured
    if measured.excluded:
        ev.trace_ranks = without_profiler_cost(ev.trace_ranks, measured)
    if measured.excluded or unrecorded_step_cpu(measured, outputs.recording) is not None:
        ev.loop = ev.loop_s = None
        _job_times(ev, outputs)


def loop_window(ev: Evidence) -> list[tuple[float, float]]:
    """The training loop less the profiler's exports inside it, as spans of epoch seconds (empty without a loop)."""
    if ev.loop is None:
        return []
    spans, at = [], ev.loop[0]
    for start, end in sorted(ev.export_spans):
        if start > at:
            spans.append((at, start))
        at = max(at, end)
    if ev.loop[1] > at:
        spans.append((at, ev.loop[1]))
    return spans


def _system(ev: Evidence, outputs: RuleOutputs) -> None:
    usage = outputs.get(RuleName.OVERALL_SYSTEM_USAGE)
    ev.usage = system_usage_of(usage.details if usage else None)
    nodes = set(ev.usage_of("CPU")) | set(ev.usage_of("GPU"))
    low = outputs.get(RuleName.LOW_GPU_UTILIZATION)
    gpus = []
    for node in gpus_of(low.details if low else None):
        nodes.add(node.node)
        gpus.append(sum(1 for k in node.keys if _GPU.match(k)))
    if gpus:
        ev.gpus_per_node = max(gpus)
    if ev.usage_of("GPU"):
        ev.has_gpu = True
    elif ev.usage_of("CPU"):
        ev.has_gpu = bool(gpus) or bool(low and low.datapoints)
    ev.nodes = sorted(nodes)
    loader = outputs.get(RuleName.DATALOADER)
    if loader:
        d = DataloaderDetails.of(loader.details)
        ev.cores = int(d.cores) if finite(d.cores) else None
        ev.workers = int(d.num_workers) if d.num_workers is not None else None
        ev.loaders = finite(d.dataloaders)
        ev.pin_memory = d.pin_memory
    for name, share_attr in (("CPUBottleneck", "cpu_bn_share"), ("IOBottleneck", "io_bn_share")):
        rule = outputs.get(name)
        if rule is None or not rule.datapoints or ev.has_gpu is False:
            continue
        d = BottleneckDetails.of(rule.details)
        share = min(rule.violations / rule.datapoints, 1.0)
        # Idle GPUs before the first step are initialization, not a bottleneck of the training loop: only
        # the listed bottleneck moments inside the loop count (their timestamps are the details' keys).
        moments = [m.at_s for m in d.moments if m.at_s is not None]
        if ev.loop and moments:
            inside = sum(ev.loop[0] <= m <= ev.loop[1] for m in moments)
            share *= inside / len(moments)
        setattr(ev, share_attr, share)
        low_count = finite(d.low_gpu_utilization)
        if low_count is not None and ev.gpu_low_share is None:
            ev.gpu_low_share = min(low_count / rule.datapoints, 1.0)
        if name == "CPUBottleneck":
            counts = [finite(m.cpus) for m in d.moments if m.cpus is not None]
            if counts:
                ev.cpu_bn_cores = statistics.median(counts)
            ev.framework_during_bn = dict(d.general)


def _timeline(ev: Evidence, outputs: RuleOutputs) -> None:
    timeline = Timeline.of(outputs.timeline)
    ev.raw = bool(timeline.nodes)
    spans = []
    for node, data in timeline.nodes.items():
        t = [finite(x) for x in data.t]  # index-aligned with the series; None where unusable
        valid = [x for x in t if x is not None]
        if len(valid) < 2:
            continue
        spans.append(max(valid) - min(valid) + (data.bucket_s or 0))
        lo, hi = ev.loop if ev.loop else (min(valid), max(valid) + 1)
        inside = [i for i, x in enumerate(t) if x is not None and lo <= x <= hi] or \
            [i for i, x in enumerate(t) if x is not None]
        before = [i for i, x in enumerate(t) if x is not None and ev.loop and x < ev.loop[0]]
        series = data.series
        ns = NodeSeries()

        def loop_mean(key, idx=inside):
            mean = series[key].mean if key in series else []
            return _mean([mean[i] for i in idx if i < len(mean)])

        for key in series:
            gpu, _, dim = key.partition("/")
            if dim == "GPUUtilization":
                value = loop_mean(key)
                if value is not None:
                    ns.gpu_util[gpu] = value
            elif key == "cpu_memory":
                mean = series[key].mean
                ns.host_memory = [(t[i], float(mean[i])) for i in inside if i < len(mean) and finite(mean[i]) is not None]
            elif dim in ("GPUMemoryUtilization", "GPUMemoryUsedPercent"):
                mean = series[key].mean
                (ns.gpu_memory if dim == "GPUMemoryUtilization" else ns.gpu_memory_used)[gpu] = [(t[i], float(mean[i])) for i in inside
                                      if i < len(mean) and finite(mean[i]) is not None]
        ns.cpu_total = loop_mean("cpu_total")
        ns.io_wait = loop_mean("io_wait")
        if before:
            ns.platform_net_init = loop_mean("network_platform", before)
        for row in data.cpu_heatmap.mean:
            value = _mean([row[i] for i in inside if i < len(row)]) if isinstance(row, list) else None
            if value is not None:
                ns.cores.append(value)
        ev.series[node] = ns
        if ns.gpu_util and ev.has_gpu is None:
            ev.has_gpu = True
        ev.gpus_per_node = max(ev.gpus_per_node or 0, len(ns.gpu_util)) or ev.gpus_per_node
        if ns.cores:
            ev.cores = ev.cores or len(ns.cores)
        if node not in ev.nodes:
            ev.nodes.append(node)
    ev.slow_steps.update(timeline.slow_steps)
    if spans:
        ev.timeline_s = max(spans)
        if ev.has_gpu is None:
            ev.has_gpu = any(s.gpu_util for s in ev.series.values())


def _process_slow_steps(ev: Evidence) -> None:
    """A SageMaker training process's slow steps from its step-time account, in place of the timeline's: each step
    with the wait for its batch before it (the timeline times ``Step:ModeKeys.TRAIN`` only, so a wait before the
    step never made one slow), by the same search as a trace rank's steps."""
    for node, account in ev.framework.nodes.items():
        numbers, durations = ev.framework.steps.get(node, ()), account.step_durations_ms()
        if not account.per_step_whole or not len(numbers) == len(durations) == account.steps:
            continue  # a damaged account (lists of other lengths): the timeline's slow steps stay
        found = SlowSteps.of(slow_steps(list(range(account.steps)), list(numbers), None,
                                        [ms / 1000.0 for ms in durations]))
        if found is not None:
            ev.slow_steps[node] = found


def _recorded_command(ev: Evidence, outputs: RuleOutputs) -> None:
    """On a shared host (the recording says the host was busier than the command by more than a few points),
    the CPU evidence is the command's own: the host's per-core load and CPUBottleneck's saturated cores may be a
    neighbour's, so they are set aside and ``not_judged`` says so."""
    command = recorded_command(outputs.recording)
    if command is None or not command["host_shared"]:
        return
    mean = command["job_cpu_pct_of_host"]
    ev.job_cpu = {"mean": mean, "p50": command["job_cpu_pct_of_host_p50"], "p95": command["job_cpu_pct_of_host_p95"],
                  "host": command["host_cpu_pct"], "rss_peak_bytes": command["job_rss_peak_bytes"]}
    ev.job_run_queue = recorded_run_queue(outputs.recording)
    loop_job_usage(ev, outputs.recording, command["cpu_cores"])
    ev.cpu_bn_share = ev.cpu_bn_cores = None
    ev.framework_during_bn = {}
    ev.not_judged.append(
        f"per-core load and CPU bottlenecks: the host was shared with other work (its CPU {command['host_cpu_pct']:.0f} %, "
        f"the recorded command's own {mean:.0f} % of its cores), and a busy core may be another process's; the CPU "
        "figures used are the command's own")


def loop_job_usage(ev: Evidence, recording: dict | None, cores: int) -> None:
    """The recorded command's own CPU and run-queue wait over the training loop less the profiler's export (the
    loop every share is applied to), from the ticks the analysis kept (recording.json's ``job_usage``), in
    ``ev.job_cpu_loop`` and ``ev.job_run_queue_loop`` (% of the host's ``cores``); left as they are (the whole
    recording's only) without those ticks or a loop they cover."""
    usage = recorded_usage(recording, loop_window(ev)) if ev.loop is not None and ev.job_cpu is not None else None
    if usage is None or cores <= 0 or ev.job_cpu is None:
        return
    ev.job_cpu_loop = 100.0 * usage.cpu_cores / cores
    if usage.run_queue_cores is not None:
        ev.job_run_queue_loop = 100.0 * usage.run_queue_cores / cores


def _steps(ev: Evidence, outputs: RuleOutputs) -> None:
    rule = outputs.get(RuleName.STEP_OUTLIER)
    ev.steps = StepDetails.of(rule.details if rule else None).workers
    ev.outliers = [{"step": o.step, "worker": o.worker, "duration_s": o.duration_s, "median_s": o.median_s,
                    "start_s": o.start_s} for o in outlier_steps_of(rule.details if rule else None)]


def _traces(ev: Evidence, outputs: RuleOutputs) -> None:
    doc = as_object(outputs.traces)
    ev.trace_ranks = {label: r for label, r in outputs.trace_ranks().items() if r.is_object}
    ev.trace_comparison = TraceComparison.of(doc)
    ev.framework = FrameworkAccounts.of(outputs.framework_account)
    if ev.trace_ranks and ev.has_gpu is None:
        ev.has_gpu = any(r.has_gpu_activity for r in ev.trace_ranks.values())
    starts = [finite(r.start_us) for r in ev.trace_ranks.values()]
    ends = [finite(r.end_us) for r in ev.trace_ranks.values()]
    starts, ends = [x for x in starts if x is not None], [x for x in ends if x is not None]
    if starts and ends and max(ends) >= min(starts):
        ev.trace_span_s = (max(ends) - min(starts)) / 1e6
    spans = [finite(r.span_ms) for r in ev.trace_ranks.values()]
    spans = [x for x in spans if x]
    ev.profiled_s = max(spans) / 1000.0 if spans else None
    hosts: dict[str, int] = {}
    for label, rank in ev.trace_ranks.items():
        for host in {w.rsplit("_", 1)[0] for w in rank.workers} or {""}:
            hosts[host] = hosts.get(host, 0) + 1
        steps = [x for x in rank.step_list if finite(x.dur_ms) is not None]
        numbers = [finite(x.step) for x in steps]
        if steps and all(n is not None for n in numbers):
            found = SlowSteps.of(slow_steps([int(n) for n in numbers], [x.step for x in steps],
                                            [(finite(x.start_ms) or 0) / 1e3 for x in steps],
                                            [finite(x.dur_ms) / 1e3 for x in steps]))
            if found is not None:
                ev.slow_steps[f"rank {label}"] = found
    if hosts:
        ev.procs_per_node = max(hosts.values())


STALLED = 0.8  # every step pays less than this part of the data wait: the rest is a stall in a few steps


def dataloader_step_share(rank: TraceRank, slow_steps_judged: bool = False) -> float | None:
    """Fraction of profiled step time spent in DataLoader: ``dataloader.step_share`` when the trace analysis
    gives it (union of intervals), else DataLoader time over the sum of step durations, capped at 1.

    When the rank's slow steps are judged (enough steps) and a fifth or more of the wait falls in a few steps (a
    loader restarted at each epoch, one expensive batch), only what every step pays is the input pipeline's: the
    stall is the slow steps' (one stall, one finding). Fewer steps: the whole wait stays here, never dropped."""
    loader = rank.dataloader or TraceLoader()
    share = finite(loader.step_share)
    account = rank.account
    if slow_steps_judged and share is not None and account is not None and account.share("data_wait") > 0:
        every = account.every_step_share("data_wait") / account.share("data_wait")
        if every < STALLED:
            share *= every
    if share is not None:
        return min(max(share, 0.0), 1.0)
    steps = sum(finite(s.dur_ms) or 0 for s in rank.step_list)
    total = finite(loader.total_ms)
    if not steps or total is None:
        return None
    return min(total / steps, 1.0)


def gather(outputs: RuleOutputs, price_per_s: float | None = None) -> Evidence:
    """Everything the cause detectors need, from what the report already read."""
    ev = Evidence(rules=dict(outputs.rules), price_per_s=price_per_s)
    _traces(ev, outputs)
    ev.profiler_overhead = profiler_overhead(ev.trace_ranks, profiler_exports(outputs.recording))
    ev.trace_ranks = without_profiler_cost(ev.trace_ranks, ev.profiler_overhead)
    _job_times(ev, outputs)
    _profiler_cost_after_window(ev, outputs)
    _system(ev, outputs)
    _timeline(ev, outputs)
    _process_slow_steps(ev)
    if ev.duration_s is None:
        _job_times(ev, outputs)  # from the traces or the timeline
    leave_out_profiler_export(ev, outputs)
    _steps(ev, outputs)
    _recorded_command(ev, outputs)
    if ev.loop is not None:
        ev.loop_threads = recorded_threads(outputs.recording, loop_window(ev))
        ev.busiest_threads = recorded_busiest_threads(outputs.recording) if ev.loop_threads is not None else []
    for name, rule in outputs.rules.items():
        if name in SUMMARY_RULES:
            continue
        ev.states[name] = evaluate_rule(name, rule.triggered, rule.datapoints, rule.parameters, rule.details,
                                        ev.has_gpu, ev.duration_s)
    if not ev.raw:
        ev.not_judged.append("per-core load (a few cores saturated while the rest idle) and GPU memory over time: "
                             "they need the raw system metrics")
        if any(s.outliers for s in ev.steps.values()) and not ev.outliers:  # counted, not listed
            ev.not_judged.append("the durations of individual outlier steps: the rule output keeps only counts")
    # GPU use and step times: said by the questions of coverage.py, with why
    return ev
