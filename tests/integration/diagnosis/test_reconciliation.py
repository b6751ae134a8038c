"""Impacts that reconcile (issue 46, item 4), on every recording and real trace we hold: a finding that refines a
slice of the step-time account never claims more than that slice; findings of the same slice together never claim
more than it (one stall, one finding); all findings together never more than the time they are shares of; and that
time is the steps' (the training loop less the profiler's export), never a window holding the export.

One diagnosis per recording, every invariant checked on it."""

from __future__ import annotations

import importlib.util
import json

import pytest

from reportgen.diagnosis import diagnose
from reportgen.diagnosis.evidence import (CHILDREN_END, CHILDREN_IDLE, CHILDREN_START, DEMAND_END, DEMAND_START,
                                         FROM_STEPS, IDLE_TO_SCRIPT_END, SCRIPT_END)
from reportgen.pipeline import analyze as analyze_source
from reportgen.rule_outputs import load_rule_outputs
from tests.support.paths import RAW, RECORDINGS, SAMPLE_DATA, need

TRACE = (".pt.trace.json", ".xplane.pb")
# every recording with traces, found rather than listed, so that a new one is checked too
RECORDED = sorted(str(d.relative_to(RECORDINGS)) for d in RECORDINGS.glob("*/*") if d.is_dir()
                  and any(any(t in p.name for t in TRACE) for p in d.rglob("*")))
# SageMaker data with framework events (sample_data's two processes are accounted; smdebug's own fixtures hold
# events too, no accounted step among them: the totals are checked there)
SAGEMAKER = ["smdebug-horovod-timeline", "smdebug-tf-model-timeline-2", "smdebug-tf-profiler-trace", "smdebug-tf-timeline"]
RAW_TRACES = ["torch-cpu-record-inputbound", "torch-cpu-record-workers2", "torch-cpu-record-ddp2",
              "kineto-resnet50-num-workers-0", "kineto-resnet50-num-workers-4", "hta-resnet-v100-1gpu",
              "hta-cpu-only-gloo", "hta-trace-diff-rank3of8", "hta-sampled-128rank"]
# the account slices each cause's impact is taken from (account_causes.CLAIMS read the other way; causes whose
# impact is a model of a fix rather than a slice — micro-batches — are not listed; the straggler's, below)
REFINES = {"host-overhead": ("no_operator",), "thread-contention": ("no_operator",), "compilation": ("compilation",),
           "allocator-churn": ("memory_management",), "debug-mode": ("debug_checks",),
           "loader-restart": ("data_wait", "no_operator"), "host-sync": ("host_blocked",),
           "input-pipeline": ("data_wait",), "io-bound": ("data_wait",), "cpu-bound": ("data_wait",),
           "kernel-launch-bound": ("dispatch", "no_operator"),
           # what a fix gives back of the compute slice (faster kernels, float32): within it
           "no-mixed-precision": ("compute",), "memory-bound-kernels": ("compute",), "float64": ("compute",),
           # the copies with no kernel beside them, and the GPU idle while the host was in them (its precedence)
           "pageable-memcpy": ("memory_copies",),
           "communication-bound": ("communication",), "tensor-copies": ("compute",), "unused-gradients": ("compute",),
           "step-waste": ("data_wait", "communication", "host_blocked", "memory_management", "memory_copies",
                          "compilation", "dispatch", "debug_checks", "no_operator")}
SLACK = 1e-6


def _truth_rows() -> dict:
    spec = importlib.util.spec_from_file_location("truth_table", RECORDINGS / "planted" / "truth_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {row["run"]: row for row in module.truth_rows(RECORDINGS / "planted")}


TRUTH = _truth_rows()


def json_truth(run: str) -> dict:
    return json.loads((RECORDINGS / "planted" / run / "truth.json").read_text())


def _steps_share(finding, ev) -> float | None:
    """The finding's impact as a share of the profiled steps' time (what the account's shares are of): of the
    training loop as the steps run it; a share of the job made one of the loop (the steps' time scaled to it)."""
    if finding.loop_share is not None:
        return finding.loop_share
    if ev.trace_only:
        return finding.share
    if ev.loop_s and ev.duration_s and _accounts(ev):
        return finding.share * ev.duration_s / ev.loop_s
    return None


def _accounts(ev) -> list:
    """The step-time accounts the findings are judged from: the traced ranks', else a SageMaker job's processes'
    (their framework events)."""
    traced = [r.account for r in ev.trace_ranks.values() if r.account is not None]
    return traced or list(ev.framework.nodes.values())


def _slice_share(ev, names) -> float:
    """The largest share of the rank's steps the slices together hold, over the ranks (or processes)."""
    return max((sum(a.share(n) for n in names) for a in _accounts(ev)), default=0.0)


def _refines(finding) -> tuple[str, ...]:
    """The slices a finding's impact is drawn from. A straggler's: the others' wait for it in collectives, on ranks
    (what evening it out saves); among SageMaker processes the slice it is slower in too, when their accounts hold no
    collective (its step beyond theirs); in lock step without collectives, the others' slack under no operator and
    the slice it is slower in."""
    if finding.cause == "straggler":
        compared = finding.metrics.get("compared")
        if finding.metrics.get("method") == "busy time":  # lock step, no collective: the others' slack, its extra
            return ("no_operator", finding.metrics["slower_in"])
        if compared == "ranks":
            return ("communication",)
        if compared == "processes":
            return ("communication", finding.metrics["slower_in"])
        return ()  # StepOutlier's medians: no account behind the price
    return REFINES.get(finding.cause, ())


def _check(folder, tmp_path):
    diagnosis = diagnose(load_rule_outputs(analyze_source(str(folder), tmp_path / "o")))
    ev = diagnosis.evidence
    counted = [f for f in diagnosis.findings if f.counts and f.risk is None]
    for f in counted:
        share = _steps_share(f, ev)
        if _refines(f) and share is not None:
            assert share <= _slice_share(ev, _refines(f)) + SLACK, (f.cause, share)
        if share is not None and f.loop_share is not None and not ev.trace_only:
            # the seconds are the share of the loop less the profiler's export, never of a window holding it
            assert f.seconds == pytest.approx(f.loop_share * (ev.loop_s or ev.duration_s), rel=1e-9)
        if ev.trace_only:  # traces alone: the steps' own time, never the trace's span (what ran between the steps)
            steps_s = max(sum(r.account.step_durations_ms()) for r in ev.trace_ranks.values()
                          if r.account is not None) / 1000
            assert ev.profiled_steps_s == pytest.approx(steps_s, rel=1e-6)
            assert f.seconds == pytest.approx(f.share * steps_s, rel=1e-6)
    # one stall, one finding: the findings drawing on the same slice never claim more than it holds
    for name in {n for f in counted for n in _refines(f)}:
        claiming = [f for f in counted if name in _refines(f) and _steps_share(f, ev) is not None]
        union = sorted({n for f in claiming for n in _refines(f)})
        assert sum(_steps_share(f, ev) for f in claiming) <= _slice_share(ev, union) + SLACK, [f.cause for f in claiming]
    # all findings together never claim more than the time they are shares of
    assert sum(f.share for f in counted) <= 1.0 + SLACK, [(f.cause, f.share) for f in counted]
    assert sum(f.seconds for f in counted) <= (ev.duration_s or 0.0) * (1 + SLACK)
    return diagnosis


@pytest.mark.parametrize("name", RECORDED)
def test_recordings_impacts_reconcile_with_the_account(name, tmp_path):
    diagnosis = _check(RECORDINGS / name, tmp_path)
    run = name.split("/", 1)[1]
    ev = diagnosis.evidence
    if name.startswith("planted/") and ev.profiler_export_s:
        # the loop every share is applied to leaves the profiler's export out, as long as the script timed it; it
        # ends after the profiler's last activity and no later than the command's exit: at its last child
        # process's end where it had children (within a tick of the script's loop end or its last line), at their
        # or the command's last work where they idled after it (within a tick of the loop's end), else at
        # the script's end where the recording has it (its atexit hooks: after the truth's last time stamp and the
        # file written, 19-125 ms on the runs re-recorded with it), else at the exit (the interpreter's teardown
        # after the script's last line, 1.6-7.4 s on these runs, included)
        script = json_truth(run)
        start, end = ev.loop
        if ev.loop_marks[1] in (CHILDREN_IDLE, IDLE_TO_SCRIPT_END, DEMAND_END):  # the loop's last work seen
            assert script["t_loop_end"] - TICK_S <= end <= script["t_loop_end"] + TICK_S
        elif ev.loop_marks[1] == CHILDREN_END:
            assert script["t_loop_end"] - TICK_S <= end <= script["t_end"] + TICK_S
        elif ev.loop_marks[1] == SCRIPT_END:
            # the teardown after it: 1.1-2.0 s with torch or TensorFlow imported, 0.2-0.8 s with JAX alone
            assert script["t_end"] <= end <= script["t_end"] + SCRIPT_END_S and ev.shutdown_s > 0.1
        else:
            assert script["t_loop_end"] <= end and ev.shutdown_s == 0.0  # the command's exit
        assert ev.loop_s == pytest.approx(end - start - ev.profiler_export_s, rel=1e-9)
        if "profiler_schedule" in script:  # torch: the prof.step() closing the window (collection and handler)
            rel = EXPORT_REL.get(run, 0.05)
            assert ev.profiler_export_s == pytest.approx(script["prof_step_s"][_closing_step(script)], rel=rel,
                                                         abs=EXPORT_ABS_S)


# the Python around torch's collection and handler in the closing prof.step(), outside the export the trace's write
# times bound: 8 ms on frozen-grad's 0.15 s export (−5.5 %)
EXPORT_ABS_S = 0.010
# bg-thread's closing prof.step() also waits for the GIL its monitor thread holds, in the Python around torch's
# collection and its handler (0.855 s against the 0.776 s handler and the 0.802 s from the cycle's end to the
# trace's write: −6.3 %)
EXPORT_REL = {"bg-thread": 0.10}


TICK_S = 0.5  # the planted runs' recording interval: a child's start or end is seen within one tick
SCRIPT_END_S = 0.25  # from the truth's last time stamp to the atexit hook: truth.json written, a line printed


def _closing_step(script: dict) -> int:
    """The step whose prof.step() closes torch's one recorded window (stop, collect, export)."""
    schedule = script["profiler_schedule"]
    return min(schedule["wait"] + schedule["warmup"] + schedule["active"], script["steps"]) - 1


def _script_loop_less_profiler(run: str) -> float:
    """The script's own loop less the profiler's export inside it: torch's whole closing prof.step() (what reportgen
    leaves out: collection and handler), TensorFlow's stop(); JAX stops after the loop (truth_table's)."""
    script = json_truth(run)
    if "profiler_schedule" in script:
        return script["loop_s"] - script["prof_step_s"][_closing_step(script)]
    return TRUTH[run]["loop_less_export_s"]


# Where the recording holds no mark of the loop's end (the job had no child process and was recorded before
# `record` kept the script's end, or it ran on after the script's loop), the loop runs to the command's exit and the
# interpreter's teardown counts as training (`tf-clean`, `anomaly`, `print-log`,
# `keras-tiny-batch`, `tf-hostwork`, `tf-eager`, `tf-retrace`, `tf-pyfunc`, `jax-clean`, `jax-recompile` and `jax-nojit`, re-recorded
# with the script's end, pass; `subprocess-monitor`, `float64` and `history-cat`, whose workers outlive the loop,
# re-recorded with the children's CPU, pass; `tf-generator`, whose script idled 4.2 s after its loop as the tf.data
# iterator over a Python generator was released, ends at its last work before that: it passes; `io-latency`, whose
# loop waits on I/O and asks for a fifth of a core against start-up's and the work after it's whole one, runs from
# the end of start-up to the end of that level: it passes;
# `jax-tiny-batch` since the profiler's cost is measured from the steps after its window: its 100 waited steps at 0.88 ms a step, not the window's 9.4 ms;
# `microbatch` since its 21 waited steps are found by their CPU, 0.097 s a step after its window, not at the window's
# 1.20 s median step: on the shared host they took 0.50-3.43 s each; `cpu-loading` since it was recorded again with
# the script's end: as first recorded its loop ran to the exit, 3.0 s of teardown counted).
NO_END_MARK = {
    "jax-hostmetrics": "the start 5.3 s late (-12.5 %): the 20 steps before the traced window, the first one's 4.8 s "
                       "compilation among them (0.78 CPU s against 0.03 a step), counted neither at the window's median "
                       "step nor at a step's CPU after it",
}


@pytest.mark.parametrize("run", [pytest.param(run, marks=pytest.mark.xfail(strict=True, reason=NO_END_MARK[run]))
                                 if run in NO_END_MARK else run for run in sorted(TRUTH)])
def test_the_loop_less_the_export_is_the_scripts_own(run, tmp_path):
    """The training loop every share is scaled by, less the profiler's export, within 5 % of the script's own loop
    less its profiler: its ends from the recording's child processes (a DataLoader's workers start with the loop's
    first batch and end with it or with the script's last line), the export from the traces' write times."""
    ev = diagnose(load_rule_outputs(analyze_source(str(RECORDINGS / "planted" / run), tmp_path / "o"))).evidence
    # without a child process: from the profiled steps (less the steps the schedule waited) to the script's end
    # or from the end of start-up to the end of the loop's level where the command asked the CPU for less in its loop
    assert ev.loop_marks in {(CHILDREN_START, CHILDREN_END), (CHILDREN_START, CHILDREN_IDLE)} | {
        (start, end) for start in (FROM_STEPS, DEMAND_START) for end in (SCRIPT_END, IDLE_TO_SCRIPT_END, DEMAND_END)}
    assert ev.loop_s == pytest.approx(_script_loop_less_profiler(run), rel=0.05)



@pytest.mark.fixtures
@pytest.mark.parametrize("name", RAW_TRACES)
def test_real_traces_impacts_reconcile_with_the_account(name, tmp_path):
    _check(need(RAW / name), tmp_path)


def test_sample_data_impacts_reconcile_with_its_processes_account(tmp_path):
    """sample_data's two processes are accounted from their framework events: the input pipeline's price is held to
    their wait for data (a share of the job, made one of the loop here)."""
    diagnosis = _check(SAMPLE_DATA, tmp_path)
    (finding,) = [f for f in diagnosis.findings if f.cause == "input-pipeline"]
    ev = diagnosis.evidence
    assert finding.share * ev.duration_s / ev.loop_s == pytest.approx(finding.metrics["account_data_wait_share"])


@pytest.mark.fixtures
@pytest.mark.parametrize("name", SAGEMAKER)
def test_sagemaker_fixtures_impacts_reconcile(name, tmp_path):
    _check(need(RAW / name), tmp_path)


def test_every_recording_with_traces_is_checked():
    assert {"planted/clean", "cpu-torch/periodic", "keras/callback", "jax-tf/jax-cpu", "gpu-input/w0",
            "cpu-memory/leak"} <= set(RECORDED)
