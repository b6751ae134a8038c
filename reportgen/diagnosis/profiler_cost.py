"""The profiler's own cost per step: how much slower a step is while the profiler records it.

A trace holds only the steps the profiler recorded, so a step's time without it is not in the trace — except
between profiling cycles. ``ProfilerStep#N`` counts every ``prof.step()``, so two cycles' numbers say how many
steps ran unrecorded between them; the pause from the one cycle's last step to the next one's first holds the
profiler stopping, collecting and exporting the first cycle's trace (all in the ``prof.step()`` right after its
last step) and then those steps. With the trace's last write known (a ``reportgen record`` recording keeps it),
the unrecorded steps' mean time is (next cycle's first step − that write) ÷ steps, and the profiler's cost per
recorded step is the recorded steps' median less that. (The file name's time stamp marks the handler's start
only: torch collects the events before it, 50 ms of the 290 ms ``prof.step()`` on ``cpu-torch/cycles``.)

The unrecorded steps include the schedule's warm-up steps, in which the profiler already runs (it keeps nothing
from them): with ``warmup=1`` and ``wait=20`` that is 1 of 21, so the figure is a slight underestimate.

With one profiling cycle (a window of steps, the usual JAX / TensorFlow / torch schedule) the steps after the window
run unrecorded to the loop's end: where a recording marks that end (the script's end, its child processes') and its
command names the steps the loop ran (``--steps 12000``: :mod:`reportgen.command_flags`), the steps after the last
profiled one (its number + 1 up to that count) and the time from the window's end (its export included) to the
loop's end give the same mean (:func:`after_window`). Work the loop does after its last step before that mark counts
in it (the figure is then low, never high); a profiler started after the loop's first step numbers its steps from
there, which the count cannot tell.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from reportgen.sources.layout import XSPACE_SUFFIXES
from reportgen.trace_ranks import ACCOUNT_SLICES, TraceAccount, TraceRank

MIN_UNRECORDED = 3  # steps between cycles in all: fewer say little about a step's time without the profiler


@dataclass(frozen=True)
class ProfilerOverhead:
    """The figure for report.json's ``diagnosis.profiler_overhead`` (ms; shares 0..1), or why it is not measurable
    (``per_step_ms`` None and ``note`` saying why)."""

    per_step_ms: float | None = None  # recorded median step less the unrecorded steps' mean
    share: float | None = None  # of the recorded median step
    recorded_median_ms: float | None = None
    unrecorded_mean_ms: float | None = None
    unrecorded_steps: int = 0
    pauses: int = 0
    export_in_pauses_ms: float = 0.0  # from each cycle's last step to its trace's last write: stop, collect, write
    rank: str | None = None
    note: str = ""
    measured_from: str | None = None  # where the unrecorded steps ran, in words (None: not measured)
    excluded: bool = False  # taken out of every share (between cycles: when positive; after the window: UNREPRESENTATIVE)
    unrecorded_span: tuple[float, float] | None = None  # after the window: where its unrecorded steps ran (epoch s)

    def to_data(self) -> dict:
        return {"per_step_ms": self.per_step_ms, "share": self.share, "recorded_median_step_ms": self.recorded_median_ms,
                "unrecorded_mean_step_ms": self.unrecorded_mean_ms, "unrecorded_steps": self.unrecorded_steps,
                "pauses": self.pauses, "export_in_pauses_ms": self.export_in_pauses_ms, "rank": self.rank,
                "note": self.note or None, "measured_from": self.measured_from, "excluded": self.excluded}


def _of_rank(label: str, rank: TraceRank, exports: list[tuple[float, float]]) -> ProfilerOverhead:
    account = rank.account
    if account is None or not account.between_cycles:
        return ProfilerOverhead(rank=label, note="one profiling cycle: no steps ran without the profiler between "
                                                 "recorded ones, so its cost per step cannot be measured")
    stepping_s, export_s, steps = 0.0, 0.0, 0
    for gap in account.between_cycles:
        lo, hi = gap.start_us / 1e6, gap.end_us / 1e6
        written = [end for _, end in exports if lo <= end <= hi]
        if not written:
            return ProfilerOverhead(rank=label, pauses=len(account.between_cycles),
                                    note="the profiler's export between its cycles is not known (traces without "
                                         "their write times: record with reportgen record), so the steps' time "
                                         "without the profiler cannot be told from it")
        stepping_s += hi - max(written)
        export_s += max(written) - lo
        steps += gap.unrecorded_steps
    if steps < MIN_UNRECORDED:
        return ProfilerOverhead(rank=label, pauses=len(account.between_cycles), unrecorded_steps=steps,
                                note=f"{steps} unrecorded step{'s' if steps != 1 else ''} between the profiling "
                                     f"cycles: at least {MIN_UNRECORDED} are needed to measure the profiler's cost")
    durations = account.step_durations_ms()
    if not durations:  # a kineto.json without the steps' slices (written by hand, or cut short)
        return ProfilerOverhead(rank=label, pauses=len(account.between_cycles), unrecorded_steps=steps,
                                note="the recorded steps' own times are missing from the account")
    recorded = statistics.median(durations)
    unrecorded = stepping_s * 1000.0 / steps
    per_step = recorded - unrecorded
    return ProfilerOverhead(per_step, per_step / recorded if recorded > 0 else None, recorded, unrecorded, steps,
                            len(account.between_cycles), export_s * 1000.0, label,
                            measured_from=f"the {steps} steps between its cycles", excluded=per_step > 0)


def _after_window_of_rank(label: str, rank: TraceRank, steps_run: tuple[int, str], loop_end_s: float,
                          exports: list[tuple[float, float]]) -> ProfilerOverhead | None:
    account, begin = rank.account, rank.start_us
    steps = [x for x in rank.step_list if x.step is not None and x.step == int(x.step) and x.start_ms is not None
             and x.dur_ms is not None and x.dur_ms > 0]
    if account is None or account.between_cycles or not steps or begin is None:
        return None
    last = max(steps, key=lambda x: x.step or 0.0)
    window_end = max(begin / 1e6 + ((x.start_ms or 0.0) + (x.dur_ms or 0.0)) / 1000.0 for x in steps)
    # the export runs after the last recorded step, inside the loop (torch's in the closing prof.step(), JAX's
    # stop_trace() in the next step): the unrecorded steps start after it
    start = max([window_end] + [end for lo, end in exports if window_end - 1.0 <= lo and end <= loop_end_s])
    count = steps_run[0] - int(last.step or 0) - 1
    if count < MIN_UNRECORDED or loop_end_s <= start:
        return ProfilerOverhead(rank=label, unrecorded_steps=max(count, 0),
                                note=f"one profiling cycle, and {max(count, 0)} of the {steps_run[1]} steps after it "
                                     f"to the loop's end: at least {MIN_UNRECORDED} are needed to measure its cost")
    durations = account.step_durations_ms()
    if not durations:
        return None
    recorded = statistics.median(durations)
    unrecorded = (loop_end_s - start) * 1000.0 / count
    per_step = recorded - unrecorded
    share = per_step / recorded if recorded > 0 else None
    return ProfilerOverhead(per_step, share, recorded, unrecorded, count, 0, 0.0, label,
                            measured_from=f"the {count} steps after its window (step {int(last.step or 0) + 1} to "
                                          f"the last of the recorded command's {steps_run[1]}) to the loop's end",
                            excluded=share is not None and share >= UNREPRESENTATIVE, unrecorded_span=(start, loop_end_s))


def after_window(ranks: dict[str, TraceRank], steps_run: tuple[int, str], loop_end_s: float,
                 exports: list[tuple[float, float]]) -> ProfilerOverhead | None:
    """The profiler's cost per recorded step with one profiling cycle: the recorded median step less the mean step
    after the window (``steps_run``: the steps the loop ran and the command's words for it, ``--steps 12000``;
    ``loop_end_s``: the loop's end where the recording marks it; ``exports``: the profiler's exports, epoch s).
    None where no rank has one cycle of numbered steps."""
    measured = [m for label, rank in sorted(ranks.items())
                if (m := _after_window_of_rank(label, rank, steps_run, loop_end_s, exports)) is not None]
    if not measured:
        return None
    return max(measured, key=lambda m: (m.per_step_ms is not None, m.unrecorded_steps))


COLLECT_MAX_S = 600.0  # a cycle's end this long before its handler started is another cycle's


def cycle_ends_s(ranks: dict[str, TraceRank]) -> list[float]:
    """Where each recorded cycle ends (epoch s): the last step of each cycle before a pause, and each rank's last
    traced event."""
    ends = [gap.start_us / 1e6 for r in ranks.values() if r.account is not None for gap in r.account.between_cycles]
    return ends + [r.end_us / 1e6 for r in ranks.values() if r.end_us is not None]


def with_collection(exports: list[tuple[float, float]], ranks: dict[str, TraceRank]) -> list[tuple[float, float]]:
    """torch's exports from the end of the cycle they write (the profiler stops and collects its events there,
    inside the same ``prof.step()``), not from the handler's start that the file's name stamps: on the planted runs
    the collection is 5-13 % beyond the handler (2.1 s of anomaly's 17.9 s, 1.6 s of microbatch's 21.9 s)."""
    ends = cycle_ends_s(ranks)
    out = []
    for start, end in exports:
        before = [e for e in ends if start - COLLECT_MAX_S <= e <= start]
        out.append((max(before) if before else start, end))
    return out


def profiler_overhead(ranks: dict[str, TraceRank], exports: list[tuple[float, float]]) -> ProfilerOverhead | None:
    """The profiler's cost per recorded step, from the rank with the most unrecorded steps between its cycles
    (None without traces). ``exports``: (start, end) epoch seconds of the profiler's exports."""
    if not ranks:
        return None
    measured = [_of_rank(label, rank, exports) for label, rank in sorted(ranks.items())]
    return max(measured, key=lambda m: (m.per_step_ms is not None, m.unrecorded_steps, m.pauses))



# Where a host account's steps do the profiler's per-operator work: inside the operators it records (their start and
# end, shapes, stacks, allocations); then, past all of them, in the Python between them (with_stack traces it)
OPERATOR_SLICES = ("compute", "dispatch", "memory_management", "memory_copies", "compilation", "debug_checks")
AFTER = ("no_operator",)


def _less_cost(account: TraceAccount, cost_ms: float, groups: tuple[tuple[str, ...], ...] = (OPERATOR_SLICES, AFTER)
               ) -> TraceAccount:
    """The account with ``cost_ms`` of profiler work taken out of the slices that hold it, pro rata (each step's too),
    and recorded as ``profiler_ms``: its shares are then of the steps less the profiler, and still add up to 1.
    ``groups``: where the cost is taken from, in order (torch's: its operators, then the Python between them)."""
    slices, per_step = dict(account.slices_ms), dict(account.per_step_ms)
    left = cost_ms
    for group in groups:
        held = sum(slices.get(name, 0.0) for name in group)
        if held <= 0 or left <= 0:
            continue
        taken = min(left, held)
        keep = 1.0 - taken / held
        for name in group:
            slices[name] = slices.get(name, 0.0) * keep
            per_step[name] = tuple(v * keep for v in per_step.get(name, ()))
        left -= taken
    return replace(account, slices_ms=slices, per_step_ms=per_step, profiler_ms=cost_ms - left)


MAX_COST_SHARE = 0.9  # of the recorded steps: a larger measured cost says more of the pauses than of the steps
# Steps after a window ran later in the loop than its steps, on a host whose load drifts: on the planted recordings
# the window's median step was 0.01x to 1.7x the mean step after it (below 1x: later steps compiled, waited or ran
# longer inputs; above it: microbatch's 2,817 operator events a step, or the host's load moving). Only a window whose
# steps took twice as long or more (the cost half its median step or more: jax-tiny-batch, 10.7x) is told from that
# drift: then it is not representative of the loop, its cost is taken out and Data quality says so.
UNREPRESENTATIVE = 0.5


def window_note(overhead: ProfilerOverhead | None, xspace: bool) -> str:
    """For Data quality, where the profiler's measured cost makes the profiled window unlike the loop (half its
    median step or more), what that does to the shares; "" otherwise. ``xspace``: JAX / TensorFlow traces."""
    if overhead is None or overhead.share is None or overhead.share < UNREPRESENTATIVE:
        return ""
    kept = ("its shares are kept as recorded (JAX's and TensorFlow's profilers slow the whole process, not one part "
            "of the step), so they describe the profiled steps, not the loop's: time a few hundred steps without the "
            "profiler to check them" if xspace else
            "its cost was taken out of the operators' time, then the Python between them, where torch's profiler "
            "does its work")
    return (f"The profiled window is not representative of the training loop: its median step took "
            f"{overhead.recorded_median_ms:.2f} ms against {overhead.unrecorded_mean_ms:.2f} ms a step without the "
            f"profiler ({overhead.measured_from}): the profiler's own cost, {overhead.per_step_ms:.2f} ms a step "
            f"({100 * overhead.share:.0f} %); {kept}.")


def is_xspace(rank: TraceRank) -> bool:
    """A rank read from JAX's or TensorFlow's profiler output (``.xplane.pb``)."""
    return any(name.endswith(XSPACE_SUFFIXES) for name in rank.files)


def _slices_of(rank: TraceRank) -> tuple[tuple[str, ...], ...]:
    """Where the profiler's cost lies in a rank's steps: torch's profiler records each operator (its shapes, stack,
    allocations) inside it, so its operators first, then the Python between them; JAX's and TensorFlow's profilers
    (an XSpace trace) record a few events per operation and slow the whole process instead — their collection
    threads take cores, the runtime's threads hand work to each other — so every slice, pro rata: the window's
    shares are kept as recorded."""
    if is_xspace(rank):
        return (tuple(ACCOUNT_SLICES),)
    return (OPERATOR_SLICES, AFTER)


def without_profiler_cost(ranks: dict[str, TraceRank], overhead: ProfilerOverhead | None) -> dict[str, TraceRank]:
    """The ranks with the profiler's measured cost per recorded step taken out of their host step-time accounts
    (``TraceAccount.profiler_ms``): every share is then of the step less the profiler's cost, the step as the loop's
    unrecorded steps run it, which is what a finding's share is scaled to. The cost comes out of the operators'
    slices, where torch's profiler does its per-operator recording, pro rata (the trace cannot say which operator it
    slowed most), then out of the Python between them; waits (data, communication, the device) keep their time and
    so weigh more. The ranks as they are where nothing was measured, and a device account (what the GPU did: the
    host's profiling slows it only where the GPU waits for the host); the same figure for every rank (one
    profiler, one schedule)."""
    if overhead is None or overhead.per_step_ms is None or overhead.per_step_ms <= 0 or not overhead.excluded:
        return ranks
    out = {}
    for label, rank in ranks.items():
        account = rank.account
        if account is None or account.step_ms <= 0 or account.perspective != "host":
            out[label] = rank
            continue
        cost = min(overhead.per_step_ms * account.steps, MAX_COST_SHARE * account.step_ms)
        out[label] = replace(rank, account=_less_cost(account, cost, _slices_of(rank)))
    return out
