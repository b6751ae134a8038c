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
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from reportgen.trace_ranks import TraceAccount, TraceRank

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

    def to_data(self) -> dict:
        return {"per_step_ms": self.per_step_ms, "share": self.share, "recorded_median_step_ms": self.recorded_median_ms,
                "unrecorded_mean_step_ms": self.unrecorded_mean_ms, "unrecorded_steps": self.unrecorded_steps,
                "pauses": self.pauses, "export_in_pauses_ms": self.export_in_pauses_ms, "rank": self.rank,
                "note": self.note or None}


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
                            len(account.between_cycles), export_s * 1000.0, label)


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


def _less_cost(account: TraceAccount, cost_ms: float) -> TraceAccount:
    """The account with ``cost_ms`` of profiler work taken out of the slices that hold it, pro rata (each step's too),
    and recorded as ``profiler_ms``: its shares are then of the steps less the profiler, and still add up to 1."""
    slices, per_step = dict(account.slices_ms), dict(account.per_step_ms)
    left = cost_ms
    for group in (OPERATOR_SLICES, AFTER):
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


def without_profiler_cost(ranks: dict[str, TraceRank], overhead: ProfilerOverhead | None) -> dict[str, TraceRank]:
    """The ranks with the profiler's measured cost per recorded step taken out of their host step-time accounts
    (``TraceAccount.profiler_ms``): every share is then of the step less the profiler's cost, the step as the loop's
    unrecorded steps run it, which is what a finding's share is scaled to. The cost comes out of the operators'
    slices, where torch's profiler does its per-operator recording, pro rata (the trace cannot say which operator it
    slowed most), then out of the Python between them; waits (data, communication, the device) keep their time and
    so weigh more. The ranks as they are where nothing was measured, and a device account (what the GPU did: the
    host's profiling slows it only where the GPU waits for the host); the same figure for every rank (one
    profiler, one schedule)."""
    if overhead is None or overhead.per_step_ms is None or overhead.per_step_ms <= 0:
        return ranks
    out = {}
    for label, rank in ranks.items():
        account = rank.account
        if account is None or account.step_ms <= 0 or account.perspective != "host":
            out[label] = rank
            continue
        cost = min(overhead.per_step_ms * account.steps, MAX_COST_SHARE * account.step_ms)
        out[label] = replace(rank, account=_less_cost(account, cost))
    return out
