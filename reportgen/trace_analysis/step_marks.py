"""Where a rank's profiled steps lie: torch's ``ProfilerStep#N`` annotations, checked against the profiler's
own span, or the optimizer's steps where a trace has no step annotation.

Two shapes real traces have that the step marks alone would misread (HTA's test traces, issue 46):

* **A step that outlasts the profiler.** Kineto writes each profiling cycle's own span as an event
  ``PyTorch Profiler (N)``; nothing is recorded after it ends. A step annotation may still end seconds later
  (a step the profiler stopped inside: HTA's triton_example holds a ``ProfilerStep#1`` of 13.3 s in a 355 ms
  trace, 1.5 ms of it recorded). That tail is no time the trace saw: the step is cut at the span's end
  (:func:`cut_step_overruns`), with a note for Data quality; else the whole tail was priced as the script's
  own Python and the GPU called idle 100 % of the "traced" time.
* **No step annotation at all.** ``torch.profiler.profile()`` used without ``schedule`` and ``prof.step()``
  writes no ``ProfilerStep#N``; every step-based figure (the account, step times, the input pipeline's share)
  was then missing and the job "insufficient-data". torch still annotates each ``optimizer.step()``
  (``Optimizer.step#<Name>.step``): one training step lies between two consecutive optimizer steps' ends
  (:func:`profiled_steps`), said so in Data quality. Fewer than two optimizer steps give no step.
"""

from __future__ import annotations

import re

import numpy as np

from reportgen.readers import trace_model as k
from reportgen.trace_analysis.columns import ends_of, with_names

STEP = re.compile(r"^ProfilerStep#(\d+)$")
PROFILER_SPAN = re.compile(r"^PyTorch Profiler \(\d+\)$")  # Kineto's own span of one profiling cycle
OPTIMIZER_STEP = re.compile(r"^Optimizer\.step#")  # torch's annotation of optimizer.step()


def _name_ids(trace: k.TraceColumns, pattern: re.Pattern) -> np.ndarray:
    return np.fromiter((i for i, n in enumerate(trace.names) if pattern.match(n)), dtype=np.int32)


def cut_step_overruns(trace: k.TraceColumns) -> tuple[np.ndarray, list[str]]:
    """The trace's durations with every step annotation that ends after the profiler span it starts in cut at
    that span's end, and a note per cut step (none: the durations unchanged, the same array)."""
    steps = np.nonzero(with_names(trace, _name_ids(trace, STEP)))[0]
    spans = np.nonzero((trace.cat == k.OTHER) & with_names(trace, _name_ids(trace, PROFILER_SPAN)))[0]
    if not steps.size or not spans.size:
        return trace.dur_us, []
    span_lo, span_hi = trace.start_us[spans], ends_of(trace, spans)
    dur = trace.dur_us
    notes = []
    for row in steps:
        start, end = float(trace.start_us[row]), float(ends_of(trace, row))
        inside = np.nonzero((span_lo <= start) & (start <= span_hi))[0]
        if not inside.size:
            continue
        span_end = float(span_hi[inside].max())
        if end <= span_end:
            continue
        if dur is trace.dur_us:
            dur = dur.copy()
        dur[row] = span_end - start
        notes.append(f"{trace.names[int(trace.name[row])]} ends {(end - span_end) / 1e6:.3g} s after the profiler's "
                     f"own span ({(span_end - start) / 1000.0:.3g} ms of it recorded): cut at the span's end, "
                     "the time after it was not profiled")
    return dur, notes


def profiled_steps(trace: k.TraceColumns) -> tuple[list[dict], str | None]:
    """The rank's steps in time order (``step``, ``start_us``, ``dur_us``) and, when they were not annotated,
    how they were found. ``ProfilerStep#N`` on the CPU side first (a repeated step keeps the longest); else
    between consecutive ``Optimizer.step#`` annotations' ends (nested repeats of one call count once)."""
    cpu_side = ~trace.rows(*k.GPU_CATEGORIES, k.GPU_ANNOTATION)
    numbers = {i: int(m.group(1)) for i, n in enumerate(trace.names) if (m := STEP.match(n))}
    if numbers:
        mask = cpu_side & with_names(trace, np.fromiter(numbers, dtype=np.int32))
        best: dict[int, tuple[float, float]] = {}
        for name, start, dur in zip(trace.name[mask], trace.start_us[mask], trace.dur_us[mask]):
            step = numbers[int(name)]
            if step not in best or dur > best[step][1]:
                best[step] = (float(start), float(dur))
        if best:
            return [{"step": step, "start_us": s, "dur_us": d}
                    for step, (s, d) in sorted(best.items(), key=lambda x: x[1][0])], None
    rows = np.nonzero(cpu_side & with_names(trace, _name_ids(trace, OPTIMIZER_STEP)))[0]
    ends: list[float] = []
    names: set[str] = set()
    for row in rows[np.argsort(trace.start_us[rows], kind="stable")]:
        if ends and trace.start_us[row] < ends[-1]:
            continue  # inside the optimizer step already kept (an annotation repeated by a wrapper)
        ends.append(float(ends_of(trace, row)))
        names.add(trace.names[int(trace.name[row])])
    if len(ends) < 2:
        return [], None
    steps = [{"step": i + 1, "start_us": lo, "dur_us": hi - lo} for i, (lo, hi) in enumerate(zip(ends, ends[1:]))]
    how = (f"no ProfilerStep#N annotations (a profiler without schedule and prof.step()): {len(steps)} steps taken "
           f"between the ends of {len(ends)} consecutive {' / '.join(sorted(names))} annotations (call prof.step() "
           "after each step for exact ones)")
    return steps, how


__all__ = ["OPTIMIZER_STEP", "PROFILER_SPAN", "STEP", "cut_step_overruns", "profiled_steps"]
