"""What makes the slow steps slow: the step-time account of the slow steps against the median step.

A slow step is slow *in* something: it waits for data (a loader restarted at each epoch), compiles (new input
shapes), runs the optimizer (gradient accumulation: by design), runs Python the profiler does not name
(evaluation or a checkpoint inside the step), or waits in a collective for a slower rank. The slice whose excess
over the median step is largest names it, and the fix follows from that, not from the cause's id.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from reportgen.diagnosis.evidence import Evidence
from reportgen.timeline_view import SlowStep
from reportgen.trace_ranks import TraceAccount

SLICE_TITLES = {
    "compute": "compute",
    "data_wait": "waiting for data",
    "communication": "exposed communication",
    "host_blocked": "the host blocked on the device",
    "memory_management": "memory allocation calls",
    "memory_copies": "memory copies with nothing else on the GPU",
    "compilation": "compilation",
    "dispatch": "operator dispatch and kernel launches",
    "debug_checks": "a debugging aid's checks (autograd anomaly detection)",
    "no_operator": "time under no profiler operator",
}
# A SageMaker job's framework events record the forward and backward passes, not operators: its compute is those
# passes and the rest of the step (the loss, optimizer.step(), the script's Python) is "no operator"
FRAMEWORK_TITLES = {**SLICE_TITLES, "compute": "the forward and backward passes",
                    "no_operator": "the step outside the forward and backward passes"}
BY_DESIGN = 0.5  # the optimizer's extra time is at least this share of the slow steps' excess: accumulation
SOME_STEPS = 0.2  # a step pays a slice "in some steps" when it has a fifth of the median step more of it than usual
NOISE_MADS = 5  # ... and more than the slice's usual step-to-step spread (as the slow steps' 5 MAD)


def steps_paying(account: TraceAccount, name: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The steps (positions) that pay the slice beyond its median step by a fifth of a median step or more, and by
    more than 5 MADs of the slice (a busy host's noise is no work) — the steps that open the trace in an unbroken
    run left out (start-up work every run pays) — and every step's excess of the slice over its median (ms).
    Periodic work too small to make each step an outlier still shows here."""
    values = account.per_step_ms.get(name, ())
    if len(values) != account.steps or not values:
        return (), ()
    usual = _median(values)
    excess = tuple(max(v - usual, 0.0) for v in values)
    totals = [sum(step) for step in zip(*(v for v in account.per_step_ms.values() if len(v) == account.steps))]
    spread = _median([abs(v - usual) for v in values])  # the slice's own step-to-step noise (a shared host's)
    paying = [i for i, e in enumerate(excess) if e >= max(SOME_STEPS * _median(totals), NOISE_MADS * spread)]
    warmup = 0
    while warmup < len(paying) and paying[warmup] == warmup:
        warmup += 1
    return tuple(paying[warmup:]), excess


@dataclass(frozen=True)
class SlowStepStory:
    """The slow steps of one rank, explained by the account."""

    slice: str  # the slice with the largest excess over the median step
    excess_ms: dict[str, float]  # each slice's time over the median step's, summed over the slow steps (>= 0)
    optimizer_excess_ms: float  # time under Optimizer.step# over the median step's, summed
    steps: int  # slow steps explained
    first_step_positions: tuple[int, ...]  # their positions in the rank's sequence of steps
    work_ratio: float | None = None  # the slow steps' operator calls (or kernels) against the median step's
    warmup_positions: tuple[int, ...] = ()  # slow steps that open the trace in an unbroken run: start-up work
    warmup_ms: float = 0.0  # their time over the median step (left out of the slow steps' cost)

    @property
    def same_work_longer(self) -> bool:
        """The slow steps issue the same operators as the others, which just take longer: larger inputs."""
        return self.work_ratio is not None and 0.9 <= self.work_ratio <= 1.1

    @property
    def total_ms(self) -> float:
        return sum(self.excess_ms.values())


    @property
    def only_warmup(self) -> bool:
        return self.slice == "warm-up"

    @property
    def share(self) -> float:
        """The named slice's part of the slow steps' excess."""
        return self.excess_ms.get(self.slice, 0.0) / self.total_ms if self.total_ms > 0 else 0.0

    @property
    def by_design(self) -> bool:
        """Slow because they run the optimizer and the others do not: gradient accumulation."""
        return self.total_ms > 0 and self.optimizer_excess_ms >= BY_DESIGN * self.total_ms


def fix_for(found: SlowStepStory, loader_workers: bool | None, period: int | None, shared_host: bool = False,
            framework: bool = False) -> str:
    """The fix for slow steps, from what makes them slow (``shared_host``: the recording's host was busier than
    the job, so a step that did the same work for longer may have waited for a core; ``framework``: the account
    is a SageMaker job's framework events', whose slices are coarser and whose closer look is smdebug's)."""
    when = f"every {period} steps" if period else "in the slow steps"
    if framework and found.slice == "no_operator":
        return (f"The slow steps spend their extra time outside the forward and backward passes {when}: in the loss, "
                "optimizer.step() or the script's own Python in the step (evaluation, checkpointing, logging: move it "
                "off the training step, or do it less often). smdebug's Python profiling (cProfile) of those steps "
                "names the functions.")
    if framework and found.slice == "compute" and not period:
        if found.work_ratio is not None and found.work_ratio > 1.1:
            return (f"The slow steps run {found.work_ratio:.1f}x the forward and backward passes of the median step: "
                    "extra work inside the step (evaluation, extra forward passes). Move it off the training step, or "
                    "do it less often.")
        return ("The slow steps run as many forward and backward passes as the others, each longer: their inputs are "
                "larger (the longest padded batches, the largest images). Bucket samples by size (batches of similar "
                "length) or pad to a few fixed sizes; smdebug's detailed profiling of those steps "
                "(DetailedProfilingConfig) records their operators to confirm it.")
    if found.slice == "data_wait":
        if loader_workers:
            every = f"every {period} steps" if period else "now and then"
            return (f"The slow steps wait for the DataLoader {every}. If that is the start of each epoch, its worker "
                    "processes are started again each time: keep them alive with persistent_workers=True. If it "
                    "recurs within an epoch, the workers cannot keep up: more workers (within the cores) or cheaper "
                    "samples.")
        return (f"The slow steps wait for data {when}: load ahead of the step (DataLoader workers with "
                "persistent_workers=True, prefetching) so an expensive batch does not stall the loop.")
    if found.slice == "compilation":
        return ("The slow steps compile again: new input shapes or dtypes reach the compiled step. Pad inputs to one "
                "shape or a few fixed lengths (bucketing, the last partial batch too) or mark dynamic dimensions.")
    if found.slice == "no_operator":
        return (f"The slow steps run code the profiler does not name {when}: Python inside the step (evaluation, "
                "checkpointing, logging: move it off the training step, or do it less often), or the process waited "
                "for a core on a busy host. Profile with with_stack=True (or sample with py-spy) to tell which.")
    if found.slice == "communication":
        return ("The slow steps wait in collectives: another rank was slower at those steps. Look at that rank's "
                "slow steps (data, Python or uneven inputs) and even them out.")
    if found.slice == "compute" and period:
        return (f"The slow steps come every {period} steps and compute more: periodic work inside the step "
                "(evaluation, extra forward passes, saving a checkpoint). Move it off the training step, make it "
                "asynchronous, or do it less often.")
    if found.slice == "compute" and found.same_work_longer:
        return ("The slow steps run the same operators as the others, only longer: their inputs are larger (the "
                "longest padded batches, the largest images). Bucket samples by size (batches of similar length) or "
                "pad to a few fixed sizes; record_shapes=True shows the shapes."
                + (" The host was shared with other work: the process may instead have waited for a core in those "
                   "steps (then no fix of the job's own is needed)." if shared_host else ""))
    if found.slice == "compute" and found.work_ratio is not None and found.work_ratio > 1.1:
        return (f"The slow steps issue {found.work_ratio:.1f}x the operators of the median step: extra work inside "
                "the step (evaluation, extra forward passes, saving a checkpoint). Move it off the training step, "
                "make it asynchronous, or do it less often.")
    if found.slice == "compute":
        return ("The slow steps compute more: larger inputs (the longest padded batches: bucket by length or pad to "
                "a fixed size), or evaluation and extra forward passes inside the step. Record shapes "
                "(record_shapes=True) to see which.")
    return (f"The slow steps spend their extra time in {SLICE_TITLES[found.slice]} {when}: see the step-time account "
            "in the PyTorch profiler section for those steps.")


def _median(values) -> float:
    return statistics.median(values) if values else 0.0


def story(ev: Evidence, worker: str, slowest: list[SlowStep]) -> SlowStepStory | None:
    """The story of a worker's listed slow steps: a trace rank's ("rank <label>") from its profiler trace, or a
    SageMaker training process's (``algo-2-27``) from its framework events' account, its steps matched by
    number; None for other workers or without an account."""
    if worker.startswith("rank "):
        rank = ev.trace_ranks.get(worker[len("rank "):])
        account: TraceAccount | None = rank.account if rank is not None else None
        if account is None:
            return None
        numbers = [str(s.step if s.step is None else int(s.step)) for s in rank.step_list]
        durations = [(s.dur_ms or 0.0) for s in rank.step_list]
    else:
        account = ev.framework.nodes.get(worker)
        numbers = list(ev.framework.steps.get(worker, ()))
        if account is None or len(numbers) != account.steps:
            return None
        durations = [sum(step) for step in zip(*(v for v in account.per_step_ms.values() if len(v) == account.steps))]
    if not slowest:
        return None
    position = {number: i for i, number in enumerate(numbers)}
    picked = sorted(position[item.step] for item in slowest if item.step in position)
    if not picked and not worker.startswith("rank "):
        return None  # the process's listed steps are not in its account: nothing to tell them by
    return account_story(account, durations, picked)


def account_story(account: TraceAccount, durations: list[float], picked: list[int]) -> SlowStepStory | None:
    """The story of the slow steps at ``picked`` (positions in the account's steps, sorted; ``durations`` each
    step's wall time, ms), whichever kind of trace the account comes from (a rank's, or a SageMaker process's whose
    slow steps are found on the account's own steps). Slow steps opening the trace are start-up work, told apart."""
    warmup: list[int] = []
    for i in picked:  # slow steps that open the trace in an unbroken run: warm-up
        if i != len(warmup):
            break
        warmup.append(i)
    typical = _median(durations)
    warmup_ms = sum(max(durations[i] - typical, 0.0) for i in warmup)
    picked = [i for i in picked if i not in warmup]
    if not picked:
        return SlowStepStory("warm-up", {}, 0.0, 0, (), None, tuple(warmup), warmup_ms)
    excess = {}
    for name, values in account.per_step_ms.items():
        if len(values) != account.steps:
            continue
        median = _median(values)
        excess[name] = max(sum(values[i] - median for i in picked), 0.0)
    if not excess or sum(excess.values()) <= 0:
        return None
    optimizer = account.optimizer_per_step_ms
    optimizer_excess = 0.0
    if len(optimizer) == account.steps:
        median = _median(optimizer)
        optimizer_excess = max(sum(optimizer[i] - median for i in picked), 0.0)
    top = max(excess, key=excess.get)
    work = account.work_per_step
    ratio = None
    if len(work) == account.steps and _median(work) > 0:
        ratio = statistics.mean(work[i] for i in picked) / _median(work)
    return SlowStepStory(top, excess, optimizer_excess, len(picked), tuple(sorted(picked)), ratio, tuple(warmup),
                         warmup_ms)
