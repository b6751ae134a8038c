"""A straggler told and priced from the workers' step-time accounts, whether they are trace ranks or a SageMaker
job's training processes (their framework events' account).

A straggler's cost is what evening it out saves. The gap is what the others wait for it each step: in lock step
(collectives in the account) their exposed communication beyond its own; without them (SageMaker processes whose
framework events hold no collective) its step beyond theirs, the wait for its batch before the step included (a
slow loader never makes the ``Step:ModeKeys.TRAIN`` event itself longer), or, where the steps are equal (lock step
through collectives nobody recorded), its work beyond theirs: each step less the slack under no operator in which
the others wait for it (``lock_step_straggler``). When it is slower in compute, that is
work, which evening out moves rather than removes: spread over the *n* workers each takes 1/*n* of it, so
(*n*−1)/*n* of the gap is saved (half for two); slower in anything else (waiting for data, Python outside the
passes), a fix removes it: the whole gap.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from reportgen.trace_ranks import TraceAccount

STEP_GAP = 0.10  # a process's median step this much above the others' median: the straggler (causes.STRAGGLER)
WAIT_GAP = 0.10  # the others' exposed communication this much of the step above its own (trace_analysis.straggler)
WORK_GAP = 0.10  # in lock step, a worker's work (its step less its slack) this much of its step above the others'
SLACK = "no_operator"  # where a worker in lock step waits for a slower one when no collective is recorded


@dataclass(frozen=True)
class Evened:
    """What evening the straggler out saves: ``share`` of its step (and so of the loop), the slice it is slower in,
    and the sentence that says why."""

    share: float
    slower_in: str
    why: str


@dataclass(frozen=True)
class ProcessStraggler:
    """The straggler among accounted processes: who, how it was told, the gap (ms per step) and its price."""

    who: str
    method: str  # "collective wait" or "step time"
    its_ms: float  # its median step (step time) or its median exposed communication per step (collective wait)
    others_ms: float  # the others' median of the same
    gap_share: float  # the gap as a share of its step
    slower_in: str
    its_slice_ms: float  # its median per step of the slice it is slower in, and the others' median of it
    others_slice_ms: float
    evened: Evened


def _median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else 0.0


def _slice_median(account: TraceAccount, name: str) -> float:
    values = account.per_step_ms.get(name, ())
    return _median(values) if len(values) == account.steps else 0.0


def _step_median(account: TraceAccount) -> float:
    return _median(account.step_durations_ms())


def slower_in(accounts: dict[str, TraceAccount], who: str, robust: bool,
              waits: tuple[str, ...] = ("communication",)) -> tuple[str, float, float]:
    """(slice, its value, the others' median) of the slice, the slices the others wait in (``waits``) apart, in which
    ``who`` exceeds the others most: shares of the step (``robust`` False, as for trace ranks) or medians per step in
    ms (``robust``: a few slow steps of thousands do not move it)."""
    mine, others = accounts[who], [a for label, a in accounts.items() if label != who]
    value = (lambda a, name: _slice_median(a, name)) if robust else (lambda a, name: a.share(name))
    excess = {}
    for name in mine.slices_ms:
        if name not in waits:
            theirs = _median(value(a, name) for a in others)
            excess[name] = (value(mine, name) - theirs, value(mine, name), theirs)
    name = max(excess, key=lambda n: excess[n][0])
    return name, excess[name][1], excess[name][2]


def evened_out(gap: float, slowest_in: str, n: int, workers: str, waited: str, title: str | None = None) -> Evened:
    """The price of a straggler whose gap (share of the step) the others wait, slower in ``slowest_in`` (``title``:
    its words), among ``n`` workers (``workers``: "ranks" or "processes"; ``waited``: the others' wait in words, the
    gap's percentage filled in for ``{pct}``)."""
    wait = f"the other {workers} wait for it " + waited.format(pct=f"{gap * 100:.0f}")
    if slowest_in == "compute":
        return Evened(gap * (n - 1) / n, slowest_in,
                      f"{wait}; it is slower in compute, which is work: evened out over the {n} {workers}, each takes "
                      f"1/{n} of it, so {(n - 1) / n * 100:.0f} % of that wait is saved")
    return Evened(gap, slowest_in, f"{wait}; it is slower in {title or slowest_in.replace('_', ' ')}, which a fix "
                                   "removes rather than moves")


def exposed_gap(accounts: dict[str, TraceAccount], rank: str) -> float | None:
    """The others' *exposed* communication beyond the rank's own, a share of the step (median over the others): the
    slice in which they wait for it. None unless the rank and another have an account."""
    if rank not in accounts or len(accounts) < 2:
        return None
    mine, others = accounts[rank], [a for label, a in accounts.items() if label != rank]
    return statistics.median(a.share("communication") for a in others) - mine.share("communication")


def rank_saving(accounts: dict[str, TraceAccount], rank: str) -> Evened | None:
    """What evening a trace rank out gives back: the others' *exposed* communication beyond its own (a collective
    overlapped with backward compute costs nothing), (n-1)/n of it when it is slower in compute."""
    exposed = exposed_gap(accounts, rank)
    if exposed is None or exposed <= 0:
        return None
    name, _, _ = slower_in(accounts, rank, robust=False)
    waited = ("{pct} % of their step in exposed communication" if name == "compute" else
              "{pct} % of their step in exposed communication (collectives not overlapped with compute)")
    return evened_out(exposed, name, len(accounts), "ranks", waited)


def process_straggler(accounts: dict[str, TraceAccount], titles: dict[str, str]) -> ProcessStraggler | None:
    """The straggler among a SageMaker job's accounted training processes, or None. With collectives in the
    accounts (SMDataParallel, Horovod), the process that waits least in them when the others' median exposed
    communication per step exceeds its own by ``WAIT_GAP`` of its step (lock step: the others wait for it);
    otherwise the process whose median step, the wait for its batch included, is ``STEP_GAP`` above the others'
    median. Medians per step: a few slow steps are the slow steps' finding, never a straggler. ``titles``: the
    slices' words."""
    accounts = {label: a for label, a in accounts.items() if a.per_step_whole}  # steps that add up, only
    if len(accounts) < 2:
        return None
    n = len(accounts)
    comm = {label: _slice_median(a, "communication") for label, a in accounts.items()}
    steps = {label: _step_median(a) for label, a in accounts.items()}
    if sum(1 for v in comm.values() if v > 0) >= 2:
        who = min(comm, key=lambda label: (comm[label], label))
        theirs = _median(v for label, v in comm.items() if label != who)
        gap = (theirs - comm[who]) / steps[who] if steps[who] > 0 else 0.0
        if gap <= WAIT_GAP:
            return None
        method, its, others = "collective wait", comm[who], theirs
        waited = "{pct} % of its step in exposed communication (median steps)"
    else:
        who = max(steps, key=lambda label: (steps[label], label))
        theirs = _median(v for label, v in steps.items() if label != who)
        if theirs <= 0 or steps[who] / theirs - 1 < STEP_GAP:
            return lock_step_straggler(accounts, titles, "processes")
        gap = 1 - theirs / steps[who]
        method, its, others = "step time", steps[who], theirs
        waited = "{pct} % of its step (its median step against theirs, the wait for each batch included)"
    name, its_slice, others_slice = slower_in(accounts, who, robust=True)
    return ProcessStraggler(who, method, its, others, gap, name, its_slice, others_slice,
                            evened_out(gap, name, n, "processes", waited, titles.get(name)))


def lock_step_straggler(accounts: dict[str, TraceAccount], titles: dict[str, str],
                        workers: str) -> ProcessStraggler | None:
    """The straggler of workers in lock step whose accounts hold no collective (PyTorch DDP's all-reduce and
    Horovod's are not in SageMaker's framework events): every worker's step takes the slowest one's time, so the
    steps are equal (within ``STEP_GAP``: a slower step is the step-time method's) and the others' wait hides as
    slack, time under no operator (``SLACK``) at their step's end. Each worker's work is its median step less its
    median slack; the worker with the most is the one the others wait for when it is ``WORK_GAP`` of its step above
    the others' median. The gap is priced as what evening it out saves (``evened_out``: half of it for two workers
    slower in compute, which is work). None for one worker, balanced work, or steps that do not add up."""
    accounts = {label: a for label, a in accounts.items() if a.per_step_whole}
    if len(accounts) < 2:
        return None
    steps = {label: _step_median(a) for label, a in accounts.items()}
    if min(steps.values()) <= 0 or max(steps.values()) / min(steps.values()) - 1 >= STEP_GAP:
        return None
    work = {label: steps[label] - _slice_median(a, SLACK) for label, a in accounts.items()}
    who = max(work, key=lambda label: (work[label], label))
    theirs = _median(v for label, v in work.items() if label != who)
    gap = (work[who] - theirs) / steps[who]
    if gap < WORK_GAP:
        return None
    name, its_slice, others_slice = slower_in(accounts, who, robust=True, waits=("communication", SLACK))
    waited = ("{pct} % of its step: the steps are equal (lock step), its work (the step less the time under no "
              "operator at its end) exceeds theirs by that much (medians)")
    return ProcessStraggler(who, "busy time", work[who], theirs, gap, name, its_slice, others_slice,
                            evened_out(gap, name, len(accounts), workers, waited, titles.get(name)))
