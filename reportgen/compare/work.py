"""Each run's work: how many training steps it ran, so that ``compare`` judges two runs by the same work.

Two job durations compare only when the runs did the same work: a run of 800 steps that takes 31 s is faster
per step than one of 320 steps that takes 17 s. The steps are read where the data has them, else estimated:

* **counted**: StepOutlier's steps of a SageMaker job (each node's histogram plus its outliers; the run's count
  is the most of any node, since data-parallel nodes step together);
* **given**: a ``reportgen record`` recording's command line (``--steps 320``, ``--max-steps``, ``--num-steps``,
  ``--train-steps``, ``--total-steps``, either spelling), unless it also names epochs (then the steps may be an
  epoch's) or the estimate below is more than ``COMMAND_MISMATCH`` times apart from it (then the flag counts
  something else);
* **estimated**: a recording's training loop less the profiler's export (report.json's
  ``diagnosis.loop.seconds``) ÷ its profiled steps' mean step (the mean over the ranks of the step duration
  section's ``ProfilerStep`` means). The profiled steps are a sample: on the 25 planted recordings (issue 46)
  the estimate lies within −51 % to +86 % of the steps the scripts ran (half of them within ±10 %).

Without either (PyTorch profiler traces alone, no loop) the work is unknown and ``compare`` says nothing of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from reportgen.command_flags import MAX_STEPS, steps_of_command
from reportgen.report.json_views import ReportJson, TrainingLoop
from reportgen.report.views import step_nodes_of
from reportgen.section_ids import SectionId

PROFILED_PHASE = "ProfilerStep"  # the step duration section's phase of a profiler trace's steps
# Counted steps that differ by more than this are different work. It is the verdict's own "about as fast" band
# (``SAME_TIME_PCT``, 5 %): a smaller difference of work cannot by itself move a duration across it, and it
# absorbs an epoch's last partial batch or a few extra steps (a job whose steps got 20 % faster with the same
# time between them runs 3 % more steps in 80 % of the time); real changes of work (epochs, a step budget) are
# far larger.
COUNTED_TOLERANCE = 0.05
# Estimated steps (a sample's mean step) are off by −51 % to +86 % on the planted recordings (cpu-loading's
# profiled steps missed its slow loads, padded's held its slowest steps): only B at 2.5x A's steps or more (or
# the reverse) is different work; the planted pair tf-hostwork / tf-clean, 320 against 800 steps, is 3.0x estimated.
ESTIMATED_TOLERANCE = 1.5
COMMAND_MISMATCH = 3.0  # a command's step count this far from the estimate counts something else


@dataclass(frozen=True)
class Work:
    """One run's work in training steps (``verdict.work.a`` / ``.b`` in compare.json: ``to_data``)."""

    steps: float  # steps per node (or rank): counted, given by the command, or estimated
    estimated: bool
    source: str  # where the number comes from, in words
    loop_s: float | None = None  # the estimate's training loop less the profiler's export (s)
    mean_step_s: float | None = None  # the estimate's profiled mean step (s)
    batch: int | None = None  # samples per step, where the run's batch size is known (``compare.batch``)

    @property
    def samples(self) -> float | None:
        """Steps × batch size, None without a batch size."""
        return self.steps * self.batch if self.batch else None

    def with_batch(self, batch: int | None) -> Work:
        return replace(self, batch=batch)

    def how(self) -> str:
        """Where the number comes from: ``the recorded command's --steps 320`` / ``estimated: …``."""
        return f"{'estimated: ' if self.estimated else ''}{self.source}"

    def text(self) -> str:
        """``312 steps (estimated: …)`` / ``320 steps (the recorded command's --steps 320)``."""
        return f"{self.steps:.0f} steps ({self.how()})"

    def to_data(self) -> dict:
        return {"steps": self.steps, "estimated": self.estimated, "from": self.source, "loop_s": self.loop_s,
                "mean_step_s": self.mean_step_s, "batch": self.batch, "samples": self.samples}


def work_of_report(data: object) -> Work | None:
    """A run's work from its report.json's data (``check --base``, ``trend``: no recorded command there)."""
    report = ReportJson.of(data)
    return work_of(report.sections, TrainingLoop.of_report(data))


def work_of(sections: dict, loop: TrainingLoop | None, command: object = None) -> Work | None:
    """A run's work from its report's ``sections`` (data by id), its training loop (report.json's
    ``diagnosis.loop``) and a recording's ``command`` (recording.json's list, when there is one); None when
    neither counts nor an estimate is possible."""
    nodes = step_nodes_of((sections or {}).get(SectionId.STEP_DURATION_ANALYSIS))
    counted = [_counted(n.counts, n.outliers) for n in nodes if n.phase != PROFILED_PHASE]
    counted = [c for c in counted if c is not None]
    if counted:
        return Work(float(max(counted)), False, "StepOutlier's steps, the most of any node" if len(counted) > 1
                    else "StepOutlier's steps")
    means = [n.mean for n in nodes if n.phase == PROFILED_PHASE and n.mean is not None and n.mean > 0]
    if loop is None or not means:
        return None
    mean = sum(means) / len(means)
    steps = loop.seconds / mean
    if not (math.isfinite(steps) and 0 < steps <= MAX_STEPS):
        return None
    given = steps_of_command(command)
    if given is not None and 1 / COMMAND_MISMATCH <= steps / given[0] <= COMMAND_MISMATCH:
        return Work(float(given[0]), False, f"the recorded command's {given[1]}", loop.seconds, mean)
    ranks = f", over {len(means)} ranks" if len(means) > 1 else ""
    return Work(steps, True, f"the training loop less the profiler's export, {loop.seconds:.1f} s, ÷ the profiled "
                             f"steps' mean step, {mean * 1000:.1f} ms{ranks}", loop.seconds, mean)


def _counted(counts, outliers) -> float | None:
    """A node's steps: its histogram's counts (outliers left out) plus its outliers; None when damaged."""
    if not isinstance(counts, list) or not counts:
        return None
    values = [*counts, outliers if outliers is not None else 0]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= MAX_STEPS
               for v in values):
        return None
    total = float(sum(values))
    return total if total > 0 else None


def in_samples(a: Work, b: Work) -> bool:
    """Whether the work is measured in samples: both runs' batch sizes are known (else in steps)."""
    return a.samples is not None and b.samples is not None


def amounts(a: Work, b: Work) -> tuple[float, float]:
    """A's and B's work in one unit: samples where both batch sizes are known, else steps."""
    if in_samples(a, b):
        return float(a.samples or 0), float(b.samples or 0)
    return a.steps, b.steps


def differs(a: Work | None, b: Work | None) -> bool:
    """Whether the two runs did different work: both known and apart by more than the tolerance of how they
    were found (``COUNTED_TOLERANCE``, or ``ESTIMATED_TOLERANCE`` when either is an estimate), in samples where
    both batch sizes are known (800 steps of 32 and 400 of 64 are the same work), else in steps."""
    if a is None or b is None:
        return False
    tolerance = ESTIMATED_TOLERANCE if a.estimated or b.estimated else COUNTED_TOLERANCE
    na, nb = amounts(a, b)
    return max(na, nb) / min(na, nb) - 1 > tolerance


def different_work(a: Work | None, b: Work | None, labels: tuple[str, str] = ("A", "B")) -> str:
    """Why the runs' durations are different work ("" when they are not): for the regression gate, which must
    not judge such runs by their job durations."""
    if not differs(a, b):
        return ""
    assert a is not None and b is not None
    return (f"the runs did different work ({labels[0]} {a.text()}; {labels[1]} {b.text()}), so their job "
            "durations do not compare")
