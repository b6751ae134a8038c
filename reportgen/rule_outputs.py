"""Load the rule outputs (``profiler-reports/<Rule>.json``) in SageMaker Debugger's schema.

The same loader serves SageMaker's own rule outputs and the ones our engine writes, so a
report always goes through one code path. Unknown or missing fields are tolerated and
reported as data-quality notes; a rule file that is not a JSON object costs that rule (a note), and
only a folder where no rule output can be read is an input error.
"""

from __future__ import annotations

import math
import re
import os
import shutil
import uuid
from dataclasses import dataclass, field
from typing import Any
from pathlib import Path

from reportgen.errors import InputError
from reportgen.job_processes import ChildProcesses, child_processes
from reportgen.job_usage import WindowUsage, demand_ticks, window_usage
from reportgen.json_file import JsonFileError, read_json_file
from reportgen.rulebook import RULE_ORDER, RuleName
from reportgen.sources.layout import RULE_EXTRA_NAMES
from reportgen.sources.layout import find_rule_output_dir as find_rule_output_dir  # with the layout (page_cache)
from reportgen.thread_usage import WindowThreads, window_threads
from reportgen.json_values import as_items, as_object, finite, given, is_finite
from reportgen.trace_ranks import TraceRank, trace_ranks_of
from reportgen.traces.numbers import as_float

REQUIRED_FIELDS = ("RuleTriggered", "Violations", "Details", "Datapoints", "RuleParameters")



@dataclass(frozen=True)
class RuleOutput:
    """One rule's result: counts, details and the parameters it ran with."""

    name: str
    triggered: int
    violations: int
    details: dict[str, Any]
    datapoints: int
    parameters_text: str
    path: Path | None = None

    @property
    def parameters(self) -> list[tuple[str, str]]:
        """``RuleParameters`` as ordered (name, value) pairs; StepOutlier repeats a name."""
        pairs = []
        for line in self.parameters_text.splitlines():
            if ":" in line:
                key, _, value = line.partition(":")
                pairs.append((key.strip(), value.strip()))
        return pairs

    def param(self, name: str, default: float | str | None = None) -> float | str | None:
        """A parameter's value, as a number when it is one (the original crashed on floats)."""
        for key, value in self.parameters:
            if key == name:
                return _number_or_text(value)
        return default


@dataclass
class RuleOutputs:
    """All rule outputs of one job, plus the notes collected while reading them."""

    folder: Path
    rules: dict[str, RuleOutput] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Written by our engine beside profiler-reports/ (absent for SageMaker's own outputs).
    timeline: dict[str, Any] | None = None
    data_quality: dict[str, Any] | None = None
    traces: dict[str, Any] | None = None  # profiler traces analysed by reportgen.trace_analysis (kineto.json)
    recording: dict[str, Any] | None = None  # a `reportgen record` recording's summary (recording.json): the job's own CPU
    framework_account: dict[str, Any] | None = None  # the step-time account from SageMaker's framework events
    # ``traces``' ranks as views, with the document they were read from (see ``trace_ranks``)
    _trace_views: tuple[object, dict[str, TraceRank]] | None = field(default=None, init=False, repr=False, compare=False)

    def get(self, name: str) -> RuleOutput | None:
        return self.rules.get(name)

    def trace_ranks(self) -> dict[str, TraceRank]:
        """``trace_ranks_of(self.traces)``, read once per document: one report reads them in six places (the
        trace facts of several sections, the diagnosis's evidence twice, the kernels section), which on 64 ranks
        was half of the notebook's run. The views are frozen; each caller gets its own dict of them. A
        ``traces`` assigned anew is read anew."""
        kept = self._trace_views
        if kept is None or kept[0] is not self.traces:
            kept = self._trace_views = (self.traces, trace_ranks_of(self.traces))
        return dict(kept[1])

    def __contains__(self, name: str) -> bool:
        return name in self.rules


def _number_or_text(value: str) -> float | str:
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if number.is_integer() and "." not in value else number


# Job times are epoch seconds, step times epoch microseconds (spec A.5). Above EPOCH_S_MAX (2103) a
# job time is in a finer unit (ms, µs, ns); below 0 it is no clock. (A clock reset to 1970 is a clock.)
EPOCH_S_MIN, EPOCH_S_MAX = 0.0, 4.2e9
STEP_SLACK_S = 86_400  # a first/last step a day outside the job's time is no step of it


RECORDED = ("job_cpu_pct_of_host", "host_cpu_pct", "job_cpu_s", "cpu_cores", "job_rss_peak_bytes", "host_shared")
# the command's threads runnable but waiting for a core (s, and % of the host's cores): starved, not waiting
RUN_QUEUE = ("job_run_queue_s", "job_run_queue_pct_of_host")


def command_line(recording: dict[str, Any] | None) -> list[Any] | None:
    """The command line a ``reportgen record`` recording ran (recording.json's ``command``), None without one:
    where ``compare`` reads a batch size or a step count the command gives."""
    command = recording.get("command") if isinstance(recording, dict) else None
    return command if isinstance(command, list) else None


def recorded_command(recording: dict[str, Any] | None) -> dict[str, Any] | None:
    """The recorded command's own figures (recording.json of `reportgen record`), or None: read here once for
    the system usage text and the diagnosis (both judge a shared host by the command's own CPU)."""
    if not isinstance(recording, dict):
        return None
    values = {k: recording.get(k) for k in RECORDED}
    numbers = [as_float(values[k]) for k in RECORDED[:5]]
    if any(v is None for v in numbers) or not isinstance(values["host_shared"], bool):
        return None
    command: dict[str, Any] = dict(zip(RECORDED[:5], numbers))
    command["cpu_cores"], command["job_rss_peak_bytes"] = int(command["cpu_cores"]), int(command["job_rss_peak_bytes"])
    for key in ("job_cpu_pct_of_host_p50", "job_cpu_pct_of_host_p95"):  # absent in recordings before them
        command[key] = as_float(recording.get(key))
    command = {**command, "host_shared": values["host_shared"]}
    for key in RUN_QUEUE:  # recordings since the scheduler's run queue was read (None where the kernel did not say)
        if key in recording:
            command[key] = as_float(recording[key])
    return command


def recorded_run_queue(recording: dict[str, Any] | None) -> float | None:
    """The recorded command's threads runnable but waiting for a core, mean % of the host's cores (recording.json's
    ``job_run_queue_pct_of_host``), or None: recordings before it, kernels that keep no such account."""
    command = recorded_command(recording)
    return command.get(RUN_QUEUE[1]) if command is not None else None


def recorded_usage(recording: dict[str, Any] | None, spans: list[tuple[float, float]]) -> WindowUsage | None:
    """The recorded command's mean CPU and run-queue wait over ``spans`` (epoch s), in cores, from the bounded series
    generate keeps in its copy of recording.json (``job_usage``, from job-metrics.jsonl), or None: recordings or
    copies without it, or a series that does not cover the spans."""
    return window_usage(recording.get("job_usage"), spans) if isinstance(recording, dict) else None


def recorded_threads(recording: dict[str, Any] | None, spans: list[tuple[float, float]]) -> WindowThreads | None:
    """The recorded command's own process split by thread over ``spans`` (epoch s): its main thread's CPU and wait
    for a core, its other threads' CPU (recording.json's ``thread_usage``, which generate adds from
    job-metrics.jsonl), or None: recordings before it, a series that does not cover the spans."""
    return window_threads(recording.get("thread_usage"), spans) if isinstance(recording, dict) else None


def recorded_busiest_threads(recording: dict[str, Any] | None) -> list[tuple[str, float]]:
    """The other threads of the recorded command's process that used the most CPU over the recording, (name, CPU
    seconds), most first (recording.json's ``busiest_threads``); empty without them."""
    rows = recording.get("busiest_threads") if isinstance(recording, dict) else None
    named = []
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, list) and len(row) == 3 and isinstance(row[0], str) and is_finite(row[2]):
            named.append((row[0], float(row[2])))
    return named


def recorded_demand(recording: dict[str, Any] | None) -> list[tuple[float, float, float]]:
    """The recorded command's CPU and run-queue wait together, span by span (start, end, cores) of the series generate
    keeps in its copy of recording.json (``job_usage``), or empty: recordings or copies without it or the run queue."""
    return demand_ticks(recording.get("job_usage")) if isinstance(recording, dict) else []


def recorded_children(recording: dict[str, Any] | None) -> ChildProcesses | None:
    """When the recorded command's child processes first started and last ended (recording.json's
    ``process_changes``, which generate adds from job-metrics.jsonl), or None: marks of the training loop's ends."""
    return child_processes(recording.get("process_changes")) if isinstance(recording, dict) else None


def recorded_children_idle(recording: dict[str, Any] | None) -> float | None:
    """When the recorded command's child processes went idle for good before they ended (recording.json's
    ``children_idle``, [last busy tick, next tick], which generate adds from job-metrics.jsonl's ``ChildCPUCores``):
    the last busy tick's end — their work ended within it, the loop after it by the batches they had prefetched —,
    or None: recordings before it, children that worked to their end."""
    value = recording.get("children_idle") if isinstance(recording, dict) else None
    if isinstance(value, list) and len(value) == 2 and all(is_finite(v) for v in value) and value[0] <= value[1]:
        return float(value[0])
    return None


def recorded_idle_to_script_end(recording: dict[str, Any] | None) -> float | None:
    """Where the recorded command last worked before it idled up to its script's end (recording.json's
    ``idle_to_script_end``, [last busy tick, next tick], which generate adds from job-metrics.jsonl's CPU and
    run-queue ticks and ``script_end_s``): the last busy tick's end, or None: recordings before it, a command that
    worked (or waited for a core) to its script's last line."""
    value = recording.get("idle_to_script_end") if isinstance(recording, dict) else None
    if isinstance(value, list) and len(value) == 2 and all(is_finite(v) for v in value) and value[0] <= value[1]:
        return float(value[0])
    return None


def recorded_script_end(recording: dict[str, Any] | None) -> float | None:
    """When the recorded command's own Python process finished its script, before the interpreter's teardown
    (recording.json's ``script_end_s``, epoch seconds), or None: recordings before it, commands that are no Python."""
    value = recording.get("script_end_s") if isinstance(recording, dict) else None
    return float(value) if is_finite(value) else None


TRACE_STAMP = re.compile(r"\.(\d{16,20})\.pt\.trace\.json(\.gz)?$")  # torch's handler: <worker>.<time_ns>.pt.trace.json


def traces_written(recording: dict[str, Any] | None) -> dict[str, float]:
    """recording.json's ``traces_written_s``: each copied trace's last write, epoch seconds by its path (only
    finite numbers kept; empty in recordings made before it)."""
    written = recording.get("traces_written_s") if isinstance(recording, dict) else None
    if not isinstance(written, dict):
        return {}
    return {str(name): float(end) for name, end in written.items() if is_finite(end)}


def profiler_exports(recording: dict[str, Any] | None) -> list[tuple[float, float]]:
    """(start, end) epoch seconds of each export of the profiler a recording copied: from the time stamp torch's
    trace handler puts in the file's name when it starts to the file's last write (recording.json's
    ``traces_written_s``). Spans that are no such interval (no stamp, a write before the stamp, over an hour) are
    left out."""
    spans = []
    for name, end in traces_written(recording).items():
        match = TRACE_STAMP.search(str(name))
        if match is None or not is_finite(end):
            continue
        start = int(match.group(1)) / 1e9
        if 0.0 <= end - start <= 3600.0:
            spans.append((start, float(end)))
    return spans


def time_problems(details: dict[str, Any]) -> list[str]:
    """Why MaxInitializationTime's times cannot be shown as facts (empty when they can): a start after
    the end (a negative duration), times in the wrong unit (milliseconds or microseconds where seconds
    belong gave initialization times of -1.6e12 s), steps outside the job. ``job_times_plausible`` and
    ``step_times_plausible`` say which part is usable."""
    out = []
    start, end = details.get("job_start"), details.get("job_end")
    if is_finite(start) and is_finite(end):
        if not all(EPOCH_S_MIN <= t <= EPOCH_S_MAX for t in (start, end)):
            out.append(f"job_start {start!r} / job_end {end!r} are not epoch seconds (another unit?); "
                       "the job's times are shown as unknown")
        elif end < start:
            out.append(f"job_start {start!r} is after job_end {end!r}; the job's duration is shown as unknown")
    step = as_object(details.get("step_num"))
    first, last = step.get("first"), step.get("last")
    if not out and is_finite(start) and is_finite(end) and is_finite(first) and is_finite(last):
        lo, hi = (start - STEP_SLACK_S) * 1e6, (end + STEP_SLACK_S) * 1e6
        if not (lo <= first <= hi and lo <= last <= hi) or last < first:
            out.append(f"step_num first {first!r} / last {last!r} are not microseconds within the job's time "
                       "(another unit?); initialization, training loop and finalization are shown as unknown")
    return out


@dataclass(frozen=True)
class OutlierStep:
    """One outlier step as StepOutlier's details list it (``step_details.<worker>.outliers``: reportgen's
    addition, step, start_s, duration_s) with its worker's median step: the typed view the report's outlier
    table and the diagnosis' step-outliers cause both read."""

    worker: str
    step: str
    duration_s: float
    start_s: float | None  # epoch seconds, None when not recorded
    median_s: float | None  # the worker's p50 step


def outlier_steps_of(details: object) -> list[OutlierStep]:
    """Every listed outlier step with a usable duration, workers and steps in the details' order."""
    found = []
    for worker, value in as_object(as_object(details).get("step_details")).items():
        info = as_object(value)
        median = as_float(as_object(info.get("step_stats")).get("p50"))
        for listed in as_items(info.get("outliers")):
            item = as_object(listed)
            duration = as_float(item.get("duration_s"))
            if duration is not None:
                found.append(OutlierStep(str(worker), str(item.get("step", "")), duration,
                                         as_float(item.get("start_s")), median))
    return found


STEP_STATS = ("mean", "max", "p99", "p95", "p50", "min")  # StepOutlier's step statistics, in its tables' order


@dataclass(frozen=True)
class StepStats:
    """A worker's step statistics (``step_stats``), seconds: finite floats, None when absent or not a number."""

    mean: float | None = None
    max: float | None = None
    p99: float | None = None
    p95: float | None = None
    p50: float | None = None
    min: float | None = None

    @classmethod
    def of(cls, value: object) -> StepStats:
        found = as_object(value)
        return cls(finite(found.get("mean")), finite(found.get("max")), finite(found.get("p99")),
                   finite(found.get("p95")), finite(found.get("p50")), finite(found.get("min")))

    def stat(self, name: str) -> float | None:
        return getattr(self, name) if name in STEP_STATS else None


NO_PHASE = object()  # ``WorkerSteps.phase`` when the details give none (the step section then says "unknown")


@dataclass(frozen=True)
class WorkerSteps:
    """One worker's entry of StepOutlier's ``step_details``: what the step duration section shows and keeps in
    report.json and what the diagnosis judges. The values the section keeps in report.json (the phase, the
    outlier count, the histogram, the step numbers) are as written; the statistics finite floats or None."""

    worker: str
    is_object: bool = True  # False: the entry is not an object (every field then reads as absent)
    stats: StepStats = field(default_factory=StepStats)
    phase: object = NO_PHASE  # "ProfilerStep" for PyTorch profiler steps (milliseconds long); as written
    outliers_as_written: object = 0  # ``number_of_outliers``, 0 when absent
    stddev: float | None = None
    steps: float | None = None  # how many steps the worker had, as given (trace_analysis writes it)
    probs: object = None  # the histogram: step counts per bin and the bins' edges (``binedges``), as written
    binedges: object = None
    step_numbers: object = field(default_factory=list)  # the outlier steps' numbers, as written

    @property
    def outliers(self) -> int:
        """The outlier count as a whole number (0 when it is none)."""
        return int(finite(self.outliers_as_written) or 0)

    @classmethod
    def of(cls, worker: str, value: object) -> WorkerSteps:
        if not isinstance(value, dict):
            return cls(worker, is_object=False)
        return cls(worker, True, StepStats.of(value.get("step_stats")), value.get("phase", NO_PHASE),
                   value.get("number_of_outliers", 0), finite(value.get("stddev")), given(value.get("steps")),
                   value.get("probs"), value.get("binedges"), value.get("step_numbers", []))


@dataclass(frozen=True)
class StepDetails:
    """StepOutlier's ``step_details``: each worker's steps, in the details' order."""

    listed: bool = False  # whether ``step_details`` is given and not empty (an object or not)
    workers: dict[str, WorkerSteps] = field(default_factory=dict)

    @classmethod
    def of(cls, details: object) -> StepDetails:
        raw = as_object(details).get("step_details")
        return cls(bool(raw), {str(w): WorkerSteps.of(str(w), v) for w, v in as_object(raw).items()})


BREAKDOWN_KEYS = ("phase", "forward_backward", "ratio", "general", "horovod")


@dataclass(frozen=True)
class FrameworkBreakdowns:
    """The framework breakdowns a rule's details carry (OverallFrameworkMetrics for the whole job, StepOutlier,
    CPUBottleneck and IOBottleneck for their moments): per breakdown, each category's percent, read by the
    framework metrics summary and the deep dives that refer back to it. ``listed`` keeps every breakdown with a
    number (report.json's section data); the named breakdowns are those whose shares sum above 0 (charted)."""

    listed: dict[str, dict[str, float]] = field(default_factory=dict)  # breakdown key -> category -> percent

    @classmethod
    def of(cls, details: object) -> FrameworkBreakdowns:
        found = as_object(details)
        listed = {}
        for key in BREAKDOWN_KEYS:
            values = {k: float(v) for k, v in as_object(found.get(key)).items() if finite(v) is not None}
            if values:
                listed[key] = values
        return cls(listed)

    def shares(self, key: str) -> dict[str, float]:
        """A breakdown's shares when they sum above 0, else none."""
        values = self.listed.get(key, {})
        return values if sum(values.values()) > 0 else {}

    @property
    def charted(self) -> list[str]:
        """The breakdowns with shares, in BREAKDOWN_KEYS' order."""
        return [key for key in BREAKDOWN_KEYS if self.shares(key)]

    @property
    def phase(self) -> dict[str, float]:  # TRAIN / EVAL / others
        return self.shares("phase")

    @property
    def others_pct(self) -> float | None:
        """The phase breakdown's share of time between steps ("others"), when charted."""
        return self.phase.get("others")

    @property
    def forward_backward(self) -> dict[str, float]:
        return self.shares("forward_backward")

    @property
    def ratio(self) -> dict[str, float]:  # CPU vs GPU operators
        return self.shares("ratio")

    @property
    def general(self) -> dict[str, float]:
        return self.shares("general")

    @property
    def horovod(self) -> dict[str, float]:
        return self.shares("horovod")


@dataclass(frozen=True)
class JobTimes:
    """MaxInitializationTime's job and step times, the typed view the summary and initialization sections and
    the diagnosis read (one reading of ``job_start``/``job_end``/``step_num``). Numbers are kept as given (an
    int stays an int: the summary shows them exactly); anything a float cannot hold is None."""

    start_s: float | None = None  # the job's start and end, epoch seconds
    end_s: float | None = None
    first_step_us: float | None = None  # the first and last step's start, epoch microseconds
    last_step_us: float | None = None
    problems: tuple[str, ...] = ()  # why the times cannot be facts (``time_problems``)

    @classmethod
    def of(cls, value: object) -> JobTimes:
        details = as_object(value)
        step = as_object(details.get("step_num"))
        return cls(given(details.get("job_start")), given(details.get("job_end")), given(step.get("first")),
                   given(step.get("last")), tuple(time_problems(details)))

    @property
    def job_known(self) -> bool:
        """Start and end are numbers and plausible epoch seconds in order."""
        return (self.start_s is not None and self.end_s is not None
                and not any(p.startswith("job_start") for p in self.problems))

    @property
    def steps_known(self) -> bool:
        """The job is known and so are its first and last steps, within its time."""
        return self.job_known and self.first_step_us is not None and self.last_step_us is not None and not self.problems


USAGE_STATS = ("max", "p99", "p95", "p90", "p50", "min")


@dataclass(frozen=True)
class NodeUsage:
    """One metric on one node in OverallSystemUsage's details (``{metric: {node: {stat: value}}}``): the typed
    view the system usage section and the diagnosis both read."""

    metric: str  # "CPU", "GPU", "CPU memory", "GPU memory", "I/O", "Network"
    node: str
    max: float | None = None
    p99: float | None = None
    p95: float | None = None
    p90: float | None = None
    p50: float | None = None
    min: float | None = None
    listed: tuple[str, ...] = ()  # the statistics the details list, in USAGE_STATS' order (a garbage one: None)
    any_listed: bool = False  # the node's statistics are a non-empty object (of whatever keys)

    def stat(self, name: str) -> float | None:
        return getattr(self, name) if name in USAGE_STATS else None


def system_usage_of(details: object) -> tuple[NodeUsage, ...]:
    """Every (metric, node) of OverallSystemUsage's details, metric by metric, node by node (the original's
    order); a metric that is not an object is skipped, a node whose statistics are not one has none."""
    found = []
    for metric, per_node in as_object(details).items():
        for node, value in as_object(per_node).items():
            stats = as_object(value)
            listed = tuple(k for k in USAGE_STATS if k in stats)
            found.append(NodeUsage(str(metric), str(node), **{k: given(stats[k]) for k in listed},
                                   listed=listed, any_listed=bool(stats)))
    return tuple(found)


@dataclass(frozen=True)
class GpuStats:
    """One GPU's statistics in LowGPUUtilization's, GPUMemoryIncrease's or BatchSize's details (``gpu_max``,
    ``gpu_95``, ``p25``... as each rule names them)."""

    gpu: str
    values: dict[str, Any]  # as listed: the box plot and report.json take them all

    def stat(self, key: str) -> float | None:
        """A statistic as given, None when absent or no number."""
        return given(self.values.get(key))


@dataclass(frozen=True)
class NodeGpus:
    """One node of a per-GPU rule's details (``{node: {gpu: stats, "last_timestamp": ...}}``)."""

    node: str
    gpus: tuple[GpuStats, ...]  # the entries whose statistics are an object, in order
    keys: tuple[str, ...]  # every key of the node's object (GPUs and bookkeeping)

    def stats(self) -> dict[str, dict[str, Any]]:
        """{gpu: statistics as listed}, what a box plot draws."""
        return {g.gpu: g.values for g in self.gpus}


def gpus_of(details: object) -> tuple[NodeGpus, ...]:
    """The nodes of a per-GPU rule's details, in order; bookkeeping keys that are not objects are skipped."""
    return tuple(NodeGpus(str(node), tuple(GpuStats(str(g), dict(s)) for g, s in info.items() if isinstance(s, dict)),
                          tuple(str(k) for k in info))
                 for node, info in as_object(details).items() if isinstance(info, dict))


@dataclass(frozen=True)
class DataloaderDetails:
    """The Dataloader rule's details: data-loading processes against cores and the loading times, the typed
    view the dataloading section and the diagnosis both read. Numbers as given; anything else None."""

    listed: bool = False  # the details hold anything at all
    cores: float | None = None
    dataloaders: float | None = None  # median number of data-loading processes running in parallel
    num_workers: float | None = None
    pin_memory: bool | None = None
    prefetch: bool | None = None
    time_p25: float | None = None  # data-loading time, seconds
    time_p50: float | None = None
    time_p95: float | None = None
    time_probs: list[Any] | None = None  # the loading times' histogram as listed (counts, then bin edges)
    time_binedges: list[Any] | None = None

    @classmethod
    def of(cls, value: object) -> DataloaderDetails:
        details = as_object(value)
        timing = as_object(details.get("dataloading_time"))
        probs, edges = timing.get("probs"), timing.get("binedges")
        return cls(bool(details), given(details.get("cores")), given(details.get("dataloaders")),
                   given(details.get("num_workers")), _flag(details.get("pin_memory")), _flag(details.get("prefetch")),
                   given(timing.get("p25")), given(timing.get("p50")), given(timing.get("p95")),
                   probs if isinstance(probs, list) else None, edges if isinstance(edges, list) else None)


def _flag(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


@dataclass(frozen=True)
class BottleneckMoment:
    """One moment CPUBottleneck or IOBottleneck listed (``bottlenecks``: ``{timestamp: {"GPUs": n, "CPUs": n}}``)."""

    key: str  # the timestamp as written
    at_s: float | None  # the timestamp as seconds since the epoch, None when the key is no finite number
    cpus: float | None = None  # cores above the threshold at that moment (CPUBottleneck), as given
    gpus: float | None = None  # GPUs below the threshold, as given


@dataclass(frozen=True)
class BottleneckDetails:
    """CPUBottleneck's or IOBottleneck's details: the moments with idle GPUs and busy (or waiting) cores, the
    typed view the bottleneck sections and the diagnosis both read. Numbers as given; anything else None."""

    listed: bool = False  # the details hold anything at all
    moments: tuple[BottleneckMoment, ...] = ()  # in the details' order; a moment that is not an object has no counts
    low_gpu_utilization: float | None = None  # datapoints with GPU utilization below the threshold
    general: dict[str, float] = field(default_factory=dict)  # {operation: % of framework time at those moments}, numbers only

    @classmethod
    def of(cls, value: object) -> BottleneckDetails:
        details = as_object(value)
        general = as_object(details.get("general"))
        moments = []
        for key, found in as_object(details.get("bottlenecks")).items():
            counts = as_object(found)
            moments.append(BottleneckMoment(str(key), as_float(key, text=True),
                                            given(counts.get("CPUs")), given(counts.get("GPUs"))))
        return cls(bool(details), tuple(moments), given(details.get("low_gpu_utilization")),
                   {str(k): v for k, v in general.items() if is_finite(v)})


@dataclass(frozen=True)
class GpuDistance:
    """LoadBalancing's distance between the utilization histograms of two GPUs of a node, as given."""

    gpu: str
    other: str
    distance: float


@dataclass(frozen=True)
class BalancingNode:
    """One node in LoadBalancing's details (``{node: {"workloads": {gpu: counts}, "distances": {gpu: {gpu: d}}}}``):
    the typed view the workload balancing section and the diagnosis' evaluation both read."""

    node: str
    has_workloads: bool = False  # ``workloads`` is an object (an empty one included)
    gpus: tuple[str, ...] = ()  # the GPUs ``workloads`` lists, whatever their histograms hold
    histograms: dict[str, list[Any]] = field(default_factory=dict)  # {gpu: utilization counts in 2 % bins}, non-empty lists only
    distances: tuple[GpuDistance, ...] = ()  # the pairs whose distance is a number


def balancing_of(details: object) -> tuple[BalancingNode, ...]:
    """Every node of LoadBalancing's details, in their order; a node that is not an object is skipped."""
    found = []
    for node, data in as_object(details).items():
        if not isinstance(data, dict):
            continue
        has_workloads = isinstance(data.get("workloads"), dict)
        workloads = as_object(data.get("workloads"))
        distances = as_object(data.get("distances"))
        pairs = tuple(GpuDistance(str(gpu), str(other), d)
                      for gpu, others in distances.items() if isinstance(others, dict)
                      for other, d in others.items() if is_finite(d))
        found.append(BalancingNode(str(node), has_workloads, tuple(str(g) for g in workloads),
                                   {str(g): c for g, c in workloads.items() if isinstance(c, list) and c}, pairs))
    return tuple(found)


def _as_int(value: object, field_name: str, name: str, notes: list[str]) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
        isinstance(value, float) and not math.isfinite(value)
    ):
        notes.append(f"{name}.json: field {field_name} is {value!r}, not a number; shown as 0")
        return 0
    return int(value)


def load_rule_output(path: Path, notes: list[str]) -> RuleOutput:
    """Read one rule JSON; raise InputError naming the file when it is not a JSON object."""
    name = path.stem
    duplicates: list[str] = []
    try:
        data = read_json_file(path, duplicates=duplicates)
    except JsonFileError as err:
        why = "not UTF-8 text, cannot read this rule output" if str(err) == "not UTF-8 text" else str(err)
        raise InputError(f"{path}: {why}") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read ({err.strerror or err})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object, found {type(data).__name__}")
    if duplicates:  # e.g. a node twice in OverallSystemUsage's Details: one of them would vanish unnoticed
        keys = ", ".join(repr(k) for k in dict.fromkeys(duplicates))
        notes.append(f"{path.name}: key(s) {keys} appear twice in one object; the last one is used")
    missing = [key for key in REQUIRED_FIELDS if key not in data]
    if missing:
        notes.append(f"{path.name}: missing field(s) {', '.join(missing)}; defaults used")
    unknown = sorted(set(data) - set(REQUIRED_FIELDS))
    if unknown:
        notes.append(f"{path.name}: ignored unknown field(s) {', '.join(unknown)}")
    details = data.get("Details", {})
    if not isinstance(details, dict):
        notes.append(f"{path.name}: Details is not an object; ignored")
        details = {}
    params = data.get("RuleParameters", "")
    if not isinstance(params, str):
        notes.append(f"{path.name}: RuleParameters is not a string; ignored")
        params = ""
    for problem in (time_problems(details) if name == RuleName.MAX_INITIALIZATION_TIME else []):
        notes.append(f"{path.name}: {problem}")
    return RuleOutput(
        name=name,
        triggered=_as_int(data.get("RuleTriggered", 0), "RuleTriggered", name, notes),
        violations=_as_int(data.get("Violations", 0), "Violations", name, notes),
        details=details,
        datapoints=_as_int(data.get("Datapoints", 0), "Datapoints", name, notes),
        parameters_text=params,
        path=path,
    )


# Our extra files beside the rule JSONs: the engine's, the traces', and a recording's summary (recording.json).
EXTRA_FILES = RULE_EXTRA_NAMES


def load_rule_outputs(folder: Path) -> RuleOutputs:
    """Load every known rule JSON in ``folder``; other JSON files are noted and skipped."""
    outputs = RuleOutputs(folder=folder)
    first_error: InputError | None = None
    for path in sorted(folder.glob("*.json")):
        if path.name in EXTRA_FILES:
            continue
        if path.stem not in RULE_ORDER:
            outputs.notes.append(f"{path.name}: not a ProfilerReport rule output; skipped")
            continue
        try:
            outputs.rules[path.stem] = load_rule_output(path, outputs.notes)
        except InputError as err:  # one unreadable rule output costs that rule, not the report
            first_error = first_error or err
            why = str(err).removeprefix(f"{path}: ")
            outputs.notes.append(f"{path.name}: {why}; this rule is left out")
    if not outputs.rules:
        if first_error is not None:
            raise first_error
        raise InputError(f"{folder}: no rule outputs (expected files like LowGPUUtilization.json)")
    # Keep ProfilerReport's order so every consumer iterates the same way.
    outputs.rules = {name: outputs.rules[name] for name in RULE_ORDER if name in outputs.rules}
    outputs.timeline = _load_extra(folder, "timeline.json", outputs.notes)
    outputs.data_quality = _load_extra(folder, "data-quality.json", outputs.notes)
    outputs.traces = _load_extra(folder, "kineto.json", outputs.notes)
    outputs.recording = _load_extra(folder, "recording.json", outputs.notes)
    outputs.framework_account = _load_extra(folder, "framework-account.json", outputs.notes)
    return outputs


def _load_extra(folder: Path, name: str, notes: list[str]) -> dict[str, Any] | None:
    """Our engine's extra outputs live next to ``profiler-reports/``; a bad one is only a note."""
    for candidate in (folder.parent / name, folder / name):
        if candidate.exists():
            try:
                data = read_json_file(candidate)
            except (OSError, JsonFileError) as err:
                why = err.strerror if isinstance(err, OSError) and err.strerror else err
                notes.append(f"{candidate.name}: unreadable ({why}); its charts are left out")
                return None
            return data if isinstance(data, dict) else None
    return None




def rule_output_files(rule_dir: Path) -> list[Path]:
    """The files of a rule-output set: the rule JSONs in ``rule_dir`` and the engine's extras beside it."""
    rules = [rule_dir / f"{name}.json" for name in RULE_ORDER if (rule_dir / f"{name}.json").is_file()]
    extras = [next((c for c in (rule_dir.parent / n, rule_dir / n) if c.is_file()), None) for n in EXTRA_FILES]
    return rules + [path for path in extras if path is not None]


def check_rule_output_folder(dest: Path) -> None:
    """Before any work: ``dest`` must be new, empty or an earlier export (nothing of the user's is replaced)."""
    known = {f"{name}.json" for name in RULE_ORDER} | set(EXTRA_FILES)
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise InputError(f"{dest}: not a folder (rule outputs are written into a new or empty folder)")
    if dest.is_dir():
        others = sorted(p.name for p in dest.iterdir() if p.name not in known or not p.is_file() or p.is_symlink())
        if others:
            raise InputError(f"{dest}: the folder holds other files ({', '.join(others[:3])}"
                             f"{', ...' if len(others) > 3 else ''}); give a new or empty folder for the rule outputs")
    if dest.resolve() == Path.cwd().resolve():
        raise InputError(f"{dest}: the current folder; give a new or empty folder for the rule outputs")


def export_rule_outputs(rule_dir: Path, dest: Path) -> list[Path]:
    """Copy a rule-output set into ``dest``, flat: ``<Rule>.json`` in SageMaker's schema (readable by any
    tool that reads ProfilerReport's outputs) plus our ``timeline.json`` / ``data-quality.json`` /
    ``kineto.json``. ``reportgen generate dest`` renders the same report.

    ``dest`` is new, empty or an earlier export (only these file names): the set is made in a sibling
    folder and swapped in, so ``dest`` never holds half a set or a mix of two runs."""
    staged = StagedRuleOutputs(rule_dir, dest)
    return staged.swap_in()


class StagedRuleOutputs:
    """A rule-output export copied beside ``dest`` but not yet in place: ``generate`` stages it before it
    commits its other outputs (a full disk fails here, replacing nothing) and swaps it in after them (two
    renames in one folder), or discards it when the commit fails."""

    def __init__(self, rule_dir: Path, dest: Path):
        self.dest = Path(dest)
        check_rule_output_folder(self.dest)
        self.dest.parent.mkdir(parents=True, exist_ok=True)
        self.staging = self.dest.parent / f".{self.dest.name}.{uuid.uuid4().hex[:12]}.tmp"
        self.staging.mkdir()  # the umask's mode, as a folder the user made
        try:
            for path in rule_output_files(rule_dir):
                shutil.copyfile(path, self.staging / path.name)
        except BaseException:
            self.discard()
            raise

    def swap_in(self) -> list[Path]:
        try:
            if self.dest.is_dir():
                old = self.dest.parent / f".{self.dest.name}.{uuid.uuid4().hex[:12]}.old"
                os.rename(self.dest, old)
                self.staging.rename(self.dest)
                shutil.rmtree(old, ignore_errors=True)
            else:
                self.staging.rename(self.dest)
        except BaseException:
            self.discard()
            raise
        return sorted(self.dest.iterdir())

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)

