"""What the PyTorch profiler traces (``kineto.json``) provide, for the sections that would otherwise
say "no steps" or "no CPU operators" right above the PyTorch section that lists them.

SageMaker Debugger's sections read its own framework data (OverallFrameworkMetrics, Dataloader,
step_num); when a job has PyTorch profiler traces instead, those sections say so and point at the
traces' numbers rather than claiming nothing was recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen.report.util import number
from reportgen.rule_outputs import RuleOutputs
from reportgen.trace_ranks import PYTORCH_TRACES, TraceLoader, doc_traces_name

PYTORCH_TITLE = "GPU kernels and operators (PyTorch profiler)"
XSPACE_TITLE = "Kernels and operators (JAX / TensorFlow profiler)"


def kernels_title(traces_name: str) -> str:
    """The trace section's title, naming the profiler the traces came from (``trace_ranks.traces_name``): a
    JAX or TensorFlow profile is no PyTorch one, and a CPU-only one has no GPU kernels to promise."""
    return PYTORCH_TITLE if traces_name == PYTORCH_TRACES else XSPACE_TITLE
EPOCH_US_2001 = 1e15  # trace timestamps at least this large are µs since the epoch (absolute)


@dataclass
class TraceFacts:
    ranks: int = 0
    steps: int = 0
    cpu_ops: int = 0
    mean_step_ms: float | None = None
    dataloader_share: float | None = None  # largest over ranks, 0..1
    dataloader_per_step_ms: float | None = None
    iterator: str | None = None
    workers: bool | None = None
    first_step_s: float | None = None  # epoch seconds of the first profiled step (absolute timestamps only)
    first_step: int | None = None  # its number N (ProfilerStep#N)
    profiled_s: float | None = None  # profiled step time per rank, averaged over ranks (s)
    name: str = PYTORCH_TRACES  # what the traces are called: "JAX / TensorFlow profiler traces" for XSpace files

    @property
    def any(self) -> bool:
        return self.ranks > 0

    def pointer(self) -> str:
        return f"see \u201c{kernels_title(self.name)}\u201d"


def trace_facts(outputs: RuleOutputs) -> TraceFacts:
    ranks = list(outputs.trace_ranks().values())
    facts = TraceFacts(ranks=len(ranks), name=doc_traces_name(getattr(outputs, "traces", None)))
    if not ranks:
        return facts
    facts.steps = sum(len(r.step_list) for r in ranks)
    facts.cpu_ops = sum(int(number(r.cpu_op_count, 0)) for r in ranks)
    totals = [sum(number(s.dur_ms, 0.0) for s in r.step_list) / 1000.0 for r in ranks if r.step_list]
    facts.profiled_s = sum(totals) / len(totals) if totals else None
    means = [number(r.step_mean_ms) for r in ranks]
    means = [m for m in means if m is not None]
    facts.mean_step_ms = sum(means) / len(means) if means else None
    firsts = []
    for r in ranks:
        start, steps = number(r.start_us), r.step_list
        if start is not None and start >= EPOCH_US_2001 and steps and number(steps[0].start_ms) is not None:
            firsts.append((start / 1e6 + number(steps[0].start_ms) / 1e3, steps[0].step))
    if firsts:
        facts.first_step_s, step = min(firsts, key=lambda pair: pair[0])
        facts.first_step = step if isinstance(step, int) and not isinstance(step, bool) else None
    loaders = [r.dataloader or TraceLoader() for r in ranks]
    shares = [(number(d.step_share), d) for d in loaders if number(d.step_share) is not None]
    if shares:
        share, top = max(shares, key=lambda pair: pair[0])
        facts.dataloader_share = share
        facts.dataloader_per_step_ms = number(top.per_step_ms)
        facts.iterator = top.iterator
        facts.workers = top.workers
    return facts


def steps_sentence(facts: TraceFacts, job_s=None) -> str:
    mean = f", {facts.mean_step_ms:.0f} ms per step on average" if facts.mean_step_ms is not None else ""
    job_s = number(job_s)
    cover = (f" ({facts.profiled_s:.1f} s per rank, {100 * facts.profiled_s / job_s:.1f} % of the {job_s:.0f} s job)"
             if job_s and facts.profiled_s is not None else "")
    return (f"The {facts.name} hold {facts.steps} profiled step(s) over {facts.ranks} rank(s){mean} "
            f"({facts.pointer()}); they cover only the profiled steps{cover}, not the whole loop.")


def initialization_sentence(facts: TraceFacts, job_start) -> str:
    """An upper bound of the initialization time from the first profiled step, when both clocks are absolute."""
    job_start = number(job_start)
    if facts.first_step_s is None or job_start is None or facts.first_step_s < job_start:
        return ""
    which = f" (ProfilerStep#{facts.first_step})" if facts.first_step is not None else ""
    return (f"The {facts.name}' first profiled step{which} started {facts.first_step_s - job_start:.1f} s "
            "after the job: initialization took at most that long (steps before the profiler's schedule "
            "started recording are not in the traces).")


def dataloader_sentence(facts: TraceFacts) -> str:
    if facts.dataloader_share is None:
        return ""
    how = {False: " in the training process, without DataLoader workers (num_workers=0)",
           True: " with DataLoader worker processes"}.get(facts.workers, "")
    per_step = (f", {facts.dataloader_per_step_ms:.0f} ms per step" if facts.dataloader_per_step_ms is not None
                else "")
    iterator = f"; iterator {facts.iterator}" if facts.iterator else ""
    loaded = f", loaded{how}" if how else ""  # a JAX / TensorFlow profile says nothing of DataLoader workers
    return f"Data loading took {100 * facts.dataloader_share:.0f} % of the profiled step time{per_step}{loaded}{iterator}."
