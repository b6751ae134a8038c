"""Whether the data loading the training process does itself (``num_workers=0``) computes or waits, from the CPU
it asked for: how many workers help and what they save depend on it.

Loading that waits (I/O latency, a remote store) uses little CPU, and workers that wait need no core each; loading
that computes (decoding, augmentation) needs a core per worker. On a host of its own a process gets the CPU it
asks for, so little CPU means waiting. On a saturated shared host a process starved of cores uses little CPU too:
only the scheduler's account of the time its threads were runnable but waited for a core (``reportgen record``'s
run queue) tells the two apart. Where that account is missing and the host left no core free, the question is
open, and the input-pipeline finding prices the smaller saving (loading as CPU work) and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen.diagnosis.evidence import Evidence

WAITING = 0.5  # the loading asked for less than this part of one core per unit of its step share: it waits

WAITS, COMPUTES, OPEN = "waits", "computes", "open"


@dataclass(frozen=True)
class LoadingCpu:
    """What the training process's CPU over the loop says of its loading (``share`` of each step's wall time).

    ``reading``: WAITS, COMPUTES or OPEN (starved or waiting, not known). ``used``: cores it used; ``queued``:
    cores' worth of its threads' time runnable but waiting for a core (None: no such account); ``free``: the
    shared host's idle cores (None: a host of its own)."""

    reading: str
    share: float
    used: float
    queued: float | None = None
    free: float | None = None
    over: str = "over the loop"  # the window of ``used`` and ``queued`` (Evidence.job_cpu_over)

    @property
    def asked(self) -> float:
        """The cores it asked for: what it used and what it waited on the run queue for."""
        return self.used + (self.queued or 0.0)

    @property
    def by_run_queue(self) -> bool:
        """The reading was decided by the run queue: its CPU alone would have said it waits."""
        return self.queued is not None and self.used < need(self.share)

    def metrics(self) -> dict[str, str | float | None]:
        """For report.json's finding: the reading and its cores (of one core each, over the loop)."""
        return {"reading": self.reading, "loading_step_share": round(self.share, 4), "used_cores": round(self.used, 4),
                "run_queue_cores": None if self.queued is None else round(self.queued, 4),
                "host_free_cores": None if self.free is None else round(self.free, 4),
                "window": "loop" if self.over == "over the loop" else "recording"}

    def evidence(self, whose: str) -> str:
        """The evidence line for a reading that is not plain CPU work ("" for that)."""
        used = f"the training process used {self.used:.2f} of a core {self.over}{whose}"
        loading = f"loading took {self.share * 100:.0f} % of each step"
        if self.queued is not None:
            asked = (f" and waited {self.queued:.2f} of a core runnable for one (the scheduler's run queue) while "
                     f"{loading}: it asked for {self.asked:.2f} of a core, the rest of the step up to "
                     f"{1 - self.share:.2f} of it")
            if self.reading == WAITS:
                return f"the loading mostly waits, on I/O, not on the cores: {used}{asked}"
            if self.by_run_queue:
                return (f"the loading is CPU work starved of cores, not waiting: {used}{asked}; the host's other "
                        "work held the cores")
            return ""
        if self.reading == WAITS:
            return f"the loading mostly waits: {used} while {loading}"
        if self.reading == OPEN:
            return (f"whether the loading computes or waits is open: {used} while {loading}, on a host with "
                    f"{self.free:.2f} of a core free; a process starved of cores and one waiting on I/O both use "
                    "little CPU, and this recording has no run-queue account to tell them apart (reportgen record "
                    "keeps one on Linux)")
        return ""


def need(share: float) -> float:
    """The cores a training process asks for when its loading (``share`` of each step) is CPU work: the rest of
    the step (CPU work in a CPU-only job, a core at least) and at least ``WAITING`` of a core while it loads.
    Loading that waits asks for the rest of the step alone. Compute on several threads asks for more: read as
    CPU work, the smaller saving."""
    return (1 - share) + WAITING * share


def loading_cpu(ev: Evidence, share: float | None) -> LoadingCpu | None:
    """The reading of a CPU-only training process that loads ``share`` of each step itself; None when its CPU
    over the loop is unknown (no timeline of a minute or more, no recording)."""
    pct = ev.loop_cpu_pct()
    if pct is None or not ev.cores or not share:
        return None
    used = pct / 100 * ev.cores
    queue = ev.loop_run_queue_pct()
    queued = max(queue, 0.0) / 100 * ev.cores if queue is not None else None
    over = ev.job_cpu_over()  # the loop's own where the recording has the command's ticks
    if used >= need(share):
        return LoadingCpu(COMPUTES, share, used, queued, over=over)
    if queued is not None:
        return LoadingCpu(COMPUTES if used + queued >= need(share) else WAITS, share, used, queued, over=over)
    if ev.job_cpu is not None:  # a shared host: what the others left is all the process could have had
        free = max(100.0 - ev.job_cpu["host"], 0.0) / 100 * ev.cores
        if used + free < need(share):
            return LoadingCpu(OPEN, share, used, None, free, over=over)
        return LoadingCpu(WAITS, share, used, None, free, over=over)
    return LoadingCpu(WAITS, share, used, over=over)
