"""Which of the questions that matter for a training job the data could answer.

A job is called healthy only when every question that applies to it was judged and none showed a
problem; a green status over questions nobody could look at is a false all-clear. The questions:

- ``gpu-use``: are the GPUs kept busy? (only for jobs with GPUs)
- ``input-pipeline``: does training wait for its data?
- ``step-times``: are some steps much slower than the rest, or some workers slower than the others?
- ``memory``: does memory (host, and GPU where there is one) stay within bounds?
- ``step-account``: where does each step's time go? (only for jobs with profiler traces, or a SageMaker job whose
  framework events hold its training steps: the step-time account puts every millisecond of every profiled step in
  one slice, so waste shows whether or not a cause fits)

Each is judged from whichever source can show it (utilization over a long enough timeline, a rule that
saw enough datapoints, enough profiled steps of a long enough loop); ``judge`` says which, or why none.
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen.diagnosis.evaluation import NOT_EVALUATED
from reportgen.diagnosis.evidence import Evidence
from reportgen.diagnosis.memory_causes import judged_from_traces

QUESTIONS = ("gpu-use", "input-pipeline", "step-times", "memory", "step-account")
LABELS = {"gpu-use": "GPU use", "input-pipeline": "the input pipeline", "step-times": "step times",
          "memory": "memory", "step-account": "where each step's time goes"}
MIN_LOOP_S = 10.0  # a training loop shorter than this says nothing about how a job runs
MIN_TRACE_STEPS = 1  # whole profiled steps per rank for a share of step time (DataLoader, GPU activity)
# The question each cause answers is on its registry row (causes.Cause.question).
MIN_STEPS = 20  # steps per worker for slow or periodic steps (engine.slow_steps.MIN_STEPS)


@dataclass(frozen=True)
class Answer:
    question: str
    judged: bool | None  # None: does not apply to this job (GPU use without GPUs)
    how: str  # what it was judged from, or why it could not be

    def to_data(self) -> dict:
        return {"question": self.question, "judged": self.judged, "how": self.how}


def _loop_long_enough(ev: Evidence) -> bool:
    """Traces alone are a sample of a loop whose length they do not tell: judged on their steps. Otherwise
    the training loop (or the job) must last MIN_LOOP_S."""
    if ev.trace_only:
        return True
    loop = ev.loop_s if ev.loop_s is not None else ev.duration_s
    return (loop or 0) >= MIN_LOOP_S


def _trace_steps(ev: Evidence) -> int:
    counts = [len(r.steps) for r in ev.trace_ranks.values() if r.steps is not None]
    return min(counts) if counts else 0


def _gpu_use(ev: Evidence) -> Answer:
    if ev.has_gpu is False:
        return Answer("gpu-use", None, "no GPU in this job")
    if ev.timeline_ok and any(s.gpu_util for s in ev.series.values()):
        return Answer("gpu-use", True, "GPU utilization over the training loop")
    if ev.evaluated("LowGPUUtilization"):
        return Answer("gpu-use", True, "the LowGPUUtilization rule")
    gpu_ranks = [r for r in ev.trace_ranks.values() if r.has_gpu_activity]
    if gpu_ranks and _trace_steps(ev) >= MIN_TRACE_STEPS and _loop_long_enough(ev):
        return Answer("gpu-use", True, "GPU activity in the profiled steps")
    if ev.has_gpu is None:
        return Answer("gpu-use", None, "no GPU metrics and no GPU activity in the traces")
    return Answer("gpu-use", False, "no GPU utilization over a training loop of at least a minute, and no rule "
                                    "that judges it saw enough datapoints")


def _input_pipeline(ev: Evidence, gpu: Answer) -> Answer:
    loader_ranks = [r for r in ev.trace_ranks.values() if r.dataloader is not None]
    if loader_ranks and _trace_steps(ev) >= MIN_TRACE_STEPS and _loop_long_enough(ev):
        return Answer("input-pipeline", True, "the DataLoader's share of the profiled step time")
    if gpu.judged and (ev.timeline_ok or ev.evaluated("CPUBottleneck") or ev.evaluated("Dataloader")):
        return Answer("input-pipeline", True, "whether the GPUs wait while the CPU side is busy")
    if ev.has_gpu is False and ev.evaluated("Dataloader"):
        return Answer("input-pipeline", True, "the Dataloader rule (data-loading processes against cores)")
    if ev.trace_ranks and not _loop_long_enough(ev):
        return Answer("input-pipeline", False, "the traced training loop is shorter than "
                                               f"{MIN_LOOP_S:.0f} s")
    if ev.trace_ranks:
        return Answer("input-pipeline", False, "no whole profiled step in a rank")
    return Answer("input-pipeline", False, "no profiler trace, and without one the time spent waiting for data "
                                           "cannot be told apart from compute" + ("; per-core load and I/O wait were "
                                                                                 "looked at" if ev.timeline_ok else ""))


def _step_times(ev: Evidence) -> Answer:
    if ev.evaluated("StepOutlier") and not ev.trace_ranks:  # traces: StepOutlier may judge a dozen steps
        return Answer("step-times", True, "the StepOutlier rule" + (" and the slow steps of every worker"
                                                                   if ev.slow_steps else ""))
    judged = [w for w, s in ev.slow_steps.items() if s.steps >= MIN_STEPS]
    if judged and _loop_long_enough(ev):
        return Answer("step-times", True, f"{min(ev.slow_steps[w].steps for w in judged)} or more steps per "
                                          "worker")
    steps = _trace_steps(ev)
    if steps >= MIN_STEPS and not _loop_long_enough(ev):
        return Answer("step-times", False, f"the traced training loop is shorter than {MIN_LOOP_S:.0f} s")
    if steps:
        return Answer("step-times", False, f"{steps} profiled step{'s' if steps != 1 else ''} per rank; slow or "
                                           f"periodic steps need at least {MIN_STEPS} (profile more active steps)")
    if ev.steps:
        return Answer("step-times", False, "too few steps per worker for the StepOutlier rule")
    state, why = ev.states.get("StepOutlier", (None, ""))
    if state == NOT_EVALUATED and why and not why.startswith("no datapoints"):
        return Answer("step-times", False, f"the StepOutlier rule could not judge them: {why}")
    if ev.trace_ranks:  # a trace with no step marked (a JAX or TF loop without a step annotation): say how to mark one
        return Answer("step-times", False, "the traces mark no training step (torch.profiler's ProfilerStep#N, "
                                           "jax.profiler.StepTraceAnnotation, tf.profiler.experimental.Trace with "
                                           "step_num)")
    return Answer("step-times", False, "no step events were recorded (no framework profiler or trace)")


def _memory(ev: Evidence) -> Answer:
    if ev.timeline_ok and any(s.host_memory or s.gpu_memory for s in ev.series.values()):
        parts = ["host"] if any(s.host_memory for s in ev.series.values()) else []
        parts += ["GPU"] if any(s.gpu_memory for s in ev.series.values()) else []
        return Answer("memory", True, f"{' and '.join(parts)} memory over the training loop")
    if ev.has_gpu and ev.evaluated("GPUMemoryIncrease"):
        return Answer("memory", True, "the GPUMemoryIncrease rule (GPU memory; its trend needs the raw metrics)")
    traced = judged_from_traces(ev.trace_ranks)
    if traced is not None:
        return Answer("memory", True, traced)
    if ev.usage_stat("CPU memory", "max") is not None and (ev.has_gpu is False or ev.usage_stat("GPU memory", "max")
                                                           is not None):
        return Answer("memory", True, "the peaks of memory use (their trend needs the raw metrics)")
    return Answer("memory", False, "no memory metrics over a training loop of at least a minute")


def _step_account(ev: Evidence) -> Answer:
    if not ev.trace_ranks:  # a SageMaker job: its training processes' framework events (their steps show the loop)
        steps_s = max(a.step_ms for a in ev.framework.nodes.values()) / 1000.0
        if not _loop_long_enough(ev) and steps_s < MIN_LOOP_S:
            return Answer("step-account", False, f"the training loop is shorter than {MIN_LOOP_S:.0f} s")
        return Answer("step-account", True, "every training step's time split into compute (the forward and backward "
                                            "passes), data wait, communication and the rest (framework events)")
    ranks = [r for r in ev.trace_ranks.values() if r.steps]
    accounted = [r for r in ranks if r.account is not None]
    if ranks and len(accounted) == len(ranks) and _loop_long_enough(ev):
        return Answer("step-account", True, "every profiled step's time split into compute and each kind of waste")
    if accounted and not _loop_long_enough(ev):
        return Answer("step-account", False, f"the traced training loop is shorter than {MIN_LOOP_S:.0f} s")
    return Answer("step-account", False, "no profiled step in a rank" if not ranks else
                  "a rank's steps have no step-time account (a kineto.json written by an older reportgen)")


def judge(ev: Evidence) -> list[Answer]:
    """One answer per question that applies, in QUESTIONS' order (``step-account`` only with profiler traces)."""
    gpu = _gpu_use(ev)
    answers = [gpu, _input_pipeline(ev, gpu), _step_times(ev), _memory(ev)]
    return answers + [_step_account(ev)] if ev.trace_ranks or ev.framework.nodes else answers
