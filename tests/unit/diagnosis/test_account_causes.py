"""Findings from the step-time account, on hand-made traces whose every step is known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen.diagnosis import diagnose
from reportgen.diagnosis.account_causes import copies_grow
from reportgen.rule_outputs import RuleOutputs
from reportgen.trace_analysis.job import analyze_traces

MULTI = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def _ev(name, ts, dur, cat="cpu_op", args=None, tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args or {}}


DOUBLE = {"Input type": ["double", "double"], "Input Dims": [[64, 64], [64, 64]]}  # record_shapes=True, float64


def _steps(tmp_path: Path, parts, gap=lambda i: 10) -> RuleOutputs:
    """One CPU rank whose step i is made of ``parts(i)``: (kind, µs) in order, kind one of "op", "load",
    "python" (an annotation over no operator), "comm" (a CPU collective), "optimizer" (an operator under
    Optimizer.step#)."""
    events, t = [], 0.0
    for i in range(40):
        start = t
        for kind, dur in parts(i):
            if kind == "op":
                events.append(_ev("aten::mm", t, dur))
            elif kind == "load":
                events.append(_ev(MULTI, t, dur, "user_annotation"))
            elif kind == "python":
                events.append(_ev("log_metrics", t, dur, "user_annotation"))
            elif kind == "comm":
                events.append(_ev("gloo:all_reduce", t, dur, "user_annotation"))
            elif kind == "optimizer":
                events += [_ev("Optimizer.step#SGD.step", t, dur, "user_annotation"), _ev("aten::add_", t, dur)]
            elif kind == "op64":  # an operator on float64 tensors
                events.append(_ev("aten::mm", t, dur, args=DOUBLE))
            elif kind == "slowconv64":  # float64's reference convolution (oneDNN has no float64 kernel)
                events.append(_ev("aten::_slow_conv2d_forward", t, dur, args=DOUBLE))
            elif kind in ("clone", "cat"):  # a copy the script makes itself, outside every other operator
                events.append(_ev(f"aten::{kind}", t, dur))
            elif kind == "opcopy":  # an operator whose own copy is inside it (a layer's, not the script's)
                events += [_ev("aten::mm", t, dur), _ev("aten::copy_", t + dur / 4, dur / 2)]
            elif kind == "optcopy":  # a copy inside the optimizer's range
                events += [_ev("Optimizer.step#SGD.step", t, dur, "user_annotation"), _ev("aten::clone", t, dur)]
            elif kind in ("tfload", "tfload-py", "tfload-gen"):  # waiting for a tf.data pipeline; "-py": its map is
                events.append(_ev("EagerLocalExecute: IteratorGetNext", t, dur))  # Python; "-gen": its source is
                if kind in ("tfload-py", "tfload-gen"):  # three Python calls on the pipeline's thread meanwhile
                    events += [_ev("EagerPyFunc:EagerPyFunc", t + k * dur / 3, dur / 4, tid=2) for k in range(3)]
                if kind == "tfload-gen":  # the iterator tf.data's from_generator reads the generator with
                    events.append(_ev("Iterator::Root::Prefetch::BatchV2::FlatMap[0]::Generator", t, dur / 2,
                                      "TraceMe", tid=3))
            t += dur
        events.append(_ev(f"ProfilerStep#{i}", start, t - start, "user_annotation"))
        t += gap(i)  # time between this step and the next, outside every step
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    doc, _ = analyze_traces([path])
    return RuleOutputs(folder=tmp_path, traces=doc)


def _causes(diagnosis):
    return [f.cause for f in diagnosis.findings]


def test_python_every_step_is_host_overhead_with_what_the_trace_names(tmp_path):
    diagnosis = diagnose(_steps(tmp_path, lambda i: [("load", 200), ("op", 7000), ("python", 3000)]))
    assert _causes(diagnosis) == ["host-overhead"] and diagnosis.status == "problems"
    finding = diagnosis.findings[0]
    assert finding.share == pytest.approx(3000 / 10200, rel=1e-3)  # of the profiled steps
    assert "log_metrics" in " ".join(finding.evidence) and "with_stack=True" in finding.fix


def test_a_clean_loop_is_healthy_from_the_account(tmp_path):
    diagnosis = diagnose(_steps(tmp_path, lambda i: [("load", 200), ("op", 9800)]))
    assert diagnosis.findings == []
    assert next(a for a in diagnosis.answers if a.question == "step-account").judged is True


def test_optimizer_steps_under_accumulation_are_slow_by_design(tmp_path):
    """Every 4th step also runs the optimizer: those steps are slow by design, never a finding."""
    diagnosis = diagnose(_steps(tmp_path, lambda i: [("load", 200), ("op", 9800)]
                                + ([("optimizer", 6000)] if i % 4 == 3 else [])))
    assert "step-outliers" not in _causes(diagnosis) and diagnosis.findings == []


def test_a_loader_restarted_each_epoch_is_one_stall_with_its_fix(tmp_path):
    """Workers restarted at each epoch: the first step of every 8 waits 60 ms for data. One finding (the slow
    steps), fixed with persistent_workers=True; the input pipeline is not blamed for the same seconds."""
    diagnosis = diagnose(_steps(tmp_path, lambda i: [("load", 60000 if i % 8 == 0 else 300), ("op", 9700)]))
    assert _causes(diagnosis) == ["step-outliers"]
    finding = diagnosis.findings[0]
    assert finding.metrics["slow_in"] == "data_wait" and "persistent_workers=True" in finding.fix
    # ms: four epochs' first steps over the median step; the first (step 0) starts the workers with persistent
    # workers too, so it is warm-up, named and left out of the cost
    lost = 4 * (60000 - 300) / 1000
    assert any(e.startswith("the first profiled step is slow too (60 ms over the median step)") for e in finding.evidence)
    total = (35 * 10000 + 5 * 69700) / 1000
    assert finding.share == pytest.approx(lost / total, rel=0.01)


@pytest.mark.parametrize("slow, fix", [
    ([("load", 200), ("op", 30000)], "run the same operators as the others, only longer"),  # a long padded batch
    ([("load", 200), ("op", 9800), *[("op", 2000)] * 10], "issue 11.0x the operators"),  # evaluation in the step
])
def test_slow_steps_tell_larger_inputs_from_extra_work(tmp_path, slow, fix):
    diagnosis = diagnose(_steps(tmp_path, lambda i: slow if i in (5, 17, 31) else [("load", 200), ("op", 9800)]))
    finding = next(f for f in diagnosis.findings if f.cause == "step-outliers")
    assert finding.metrics["slow_in"] == "compute" and fix in finding.fix


def _noisy(i):
    """A step's compute on a busy host: 9,800 µs ± 1,250 (a MAD of about 750 µs over the steps)."""
    return 9800 + ((i * 7) % 11 - 5) * 250


def test_work_some_steps_pay_without_being_outliers_is_counted_with_the_slow_steps(tmp_path):
    """A checkpoint every 10 steps: one of them is an outlier, the others pay the same Python without being
    outliers each; the slow steps' finding counts them all, with the period, and nothing counts them twice."""
    def parts(i):
        extra = {9: 9000, 19: 3000, 29: 3000, 39: 3000}.get(i, 0)
        return [("load", 200), ("op", _noisy(i))] + ([("python", extra)] if extra else [])
    diagnosis = diagnose(_steps(tmp_path, parts))
    assert _causes(diagnosis) == ["step-outliers"]
    finding = diagnosis.findings[0]
    assert "every 10 steps" in finding.fix
    assert finding.loop_share == pytest.approx(18000 / sum(200 + _noisy(i) for i in range(40)), rel=0.1)
    assert any("3 more steps pay the same time under no profiler operator" in e for e in finding.evidence)


def test_a_few_steps_paying_under_the_outlier_threshold_are_still_waste(tmp_path):
    """Ten of forty steps pay 2.5 ms of Python each (a quarter of the step): no step is an outlier by 5 MAD of the
    step times, yet together they are 6 % of the steps' time: step-waste says so, with the period."""
    diagnosis = diagnose(_steps(tmp_path, lambda i: [("load", 200), ("op", _noisy(i))]
                                + ([("python", 2500)] if i % 4 == 1 else [])))
    assert "step-outliers" not in _causes(diagnosis)
    waste = [f for f in diagnosis.findings if f.cause == "step-waste"]
    steps = sum(200 + _noisy(i) + (2500 if i % 4 == 1 else 0) for i in range(40))
    assert waste and waste[0].loop_share == pytest.approx(25000 / steps, rel=1e-3)
    assert "every 4 steps" in waste[0].title and "time under no profiler operator" in waste[0].title


def test_waste_every_step_pays_and_waste_some_steps_pay_are_one_finding(tmp_path):
    """Exposed communication in every step (6 %) and Python in every 4th step under the outlier threshold: one
    step-waste finding that counts both, each once."""
    diagnosis = diagnose(_steps(tmp_path, lambda i: [("load", 200), ("op", _noisy(i)), ("comm", 650)]
                                + ([("python", 2500)] if i % 4 == 1 else [])))
    waste = [f for f in diagnosis.findings if f.cause == "step-waste"]
    steps = sum(200 + _noisy(i) + 650 + (2500 if i % 4 == 1 else 0) for i in range(40))
    assert len(waste) == 1 and "step-outliers" not in _causes(diagnosis)
    finding = waste[0]
    assert finding.metrics["slices"]["communication"] == pytest.approx(40 * 650 / steps, rel=1e-3)
    assert finding.metrics["some_steps_share"] == pytest.approx(25000 / steps, rel=1e-3)
    assert finding.loop_share == pytest.approx((40 * 650 + 25000) / steps, rel=1e-3)
    assert any("every 4 steps" in e for e in finding.evidence) and "every 4 steps" in finding.fix


def test_work_after_every_step_outside_it_is_a_finding_of_its_own(tmp_path):
    """Steps of 1 ms, 0.2 ms between each two (a callback after each batch): 39 gaps, 7.8 ms of 47.8 ms."""
    diagnosis = diagnose(_steps(tmp_path, lambda i: [("op", 1000)], gap=lambda i: 200))
    assert _causes(diagnosis) == ["between-steps"] and diagnosis.status == "problems"
    finding = diagnosis.findings[0]
    assert finding.share == pytest.approx(39 * 200 / (40 * 1000 + 39 * 200), rel=1e-3)
    assert "a median 0.2 ms after each step" in finding.evidence[0] and "on_train_batch_end" in finding.fix


def test_a_few_long_pauses_between_steps_are_evaluation_or_checkpoints(tmp_path):
    """A 3 ms pause after every 10th step (4 of the 39 gaps), 10 µs after the others."""
    diagnosis = diagnose(_steps(tmp_path, lambda i: [("op", 1000)], gap=lambda i: 3000 if i % 10 == 9 else 10))
    finding = diagnosis.findings[0]
    assert finding.cause == "between-steps"
    assert "most of it in 3 long pauses (after step 10, 20, 30)" in finding.evidence[0]
    assert "evaluation, checkpoints" in finding.fix and finding.share == pytest.approx(9350 / 49350, rel=1e-3)


def test_compute_in_float64_is_a_finding_with_what_float32_saves(tmp_path):
    """The operators' recorded input types say double: float32 halves their time, and leaves a third of a reference
    convolution's (oneDNN's float32 kernel instead); the same loop in float32 stays healthy."""
    diagnosis = diagnose(_steps(tmp_path, lambda i: [("load", 200), ("slowconv64", 6000), ("op64", 3000),
                                                     ("op", 800)]))
    assert _causes(diagnosis) == ["float64"] and diagnosis.status == "problems"
    finding = diagnosis.findings[0]
    assert finding.share == pytest.approx((6000 * 2 / 3 + 3000 / 2) / 10000, rel=1e-3)  # of the profiled steps
    assert finding.metrics["float64_share"] == pytest.approx(0.9) and finding.metrics["fallback_share"] == 0.6
    assert "model.float()" in finding.fix and "90 % of the profiled steps' time" in finding.evidence[0]
    float32 = diagnose(_steps(tmp_path, lambda i: [("load", 200), ("op", 9800)]))
    assert float32.findings == []


def test_copies_the_script_makes_every_step_are_a_finding_with_all_their_time(tmp_path):
    """A clone outside every operator in each step (a snapshot to roll back to): operator time, so compute, but no
    computation needs it; the finding claims all of it, the fix is to copy less often."""
    diagnosis = diagnose(_steps(tmp_path, lambda i: [("load", 200), ("op", 6800), ("clone", 3000)]))
    assert _causes(diagnosis) == ["tensor-copies"] and diagnosis.status == "problems"
    finding = diagnosis.findings[0]
    assert finding.share == pytest.approx(0.3, rel=1e-3) and finding.metrics["grows"] is False
    assert finding.title.startswith("Every step copies tensors no computation needs (aten::clone)")
    assert "Copy less often" in finding.fix and "every step pays it: 3.0 ms" in finding.evidence[1]


def test_copies_that_grow_every_step_are_a_tensor_concatenated_onto(tmp_path):
    """torch.cat onto a kept tensor: each step copies all the steps before it, the steps get slower one by one; the
    fix is a list concatenated once (or a preallocated tensor), the impact all the copies' time."""
    cat = lambda i: 100.0 * (i + 1)  # noqa: E731
    diagnosis = diagnose(_steps(tmp_path, lambda i: [("load", 200), ("op", 5000), ("cat", cat(i))]))
    finding = diagnosis.findings[0]
    assert finding.cause == "tensor-copies" and finding.metrics["grows"] is True
    copied = sum(cat(i) for i in range(40))
    assert finding.share == pytest.approx(copied / (copied + 40 * 5200), rel=1e-3)
    assert "grows every step (aten::cat)" in finding.title and "concatenate once" in finding.fix
    assert "the copies grow with every step" in finding.evidence[1]


def test_a_tensor_grown_every_step_is_seen_growing_from_a_window_late_in_the_loop():
    """A concatenation copies in proportion to the steps before it: a window of 30 steps from step 45 sees the
    copies rise by 1.4x from its first third to its last (history-cat, recorded on a quiet host: 1.44, r 0.94), not
    double; steady copies with noise, or a few slow ones, do not grow."""
    late = tuple(0.8 * k for k in range(45, 75))
    assert copies_grow(late)
    assert not copies_grow(tuple(0.8 * k for k in range(120, 150)))  # 1.15x: too late in a loop to tell a rise
    steady = tuple(160.0 + (7.0 if k % 3 == 0 else -4.0) + 0.2 * k for k in range(30))  # noise (needless-copy: 1.09x, r 0.38)
    assert not copies_grow(steady)
    assert not copies_grow(tuple(30.0 if k < 25 else 90.0 for k in range(30)))  # a jump at the end: r < 0.8


def test_copies_inside_operators_or_the_optimizer_are_the_models_own(tmp_path):
    """A layer's copy inside its operator, the optimizer's inside its range: compute, no finding."""
    diagnosis = diagnose(_steps(tmp_path, lambda i: [("load", 200), ("opcopy", 6800), ("optcopy", 3000)]))
    assert _causes(diagnosis) == []


def test_a_tf_data_map_in_python_is_the_input_pipelines_with_the_tf_fix(tmp_path):
    """Half of each step waits in IteratorGetNext: a tf.data pipeline, whose fix is tf.data's, never a DataLoader's;
    with tf.py_function calls on its threads meanwhile, the fix is to write the map in TensorFlow ops."""
    python = diagnose(_steps(tmp_path, lambda i: [("tfload-py", 5000), ("op", 5000)]))
    finding = python.findings[0]
    assert finding.cause == "input-pipeline" and "tf.py_function" in finding.fix and "DataLoader" not in finding.fix
    assert finding.share == pytest.approx(0.5, rel=1e-3)
    assert "3 tf.py_function / tf.numpy_function calls a step" in " ".join(finding.evidence)
    assert "waiting for the tf.data pipeline (IteratorGetNext)" in finding.evidence[-2]
    plain = diagnose(_steps(tmp_path, lambda i: [("tfload", 5000), ("op", 5000)])).findings[0]
    assert plain.cause == "input-pipeline" and "tf.data.AUTOTUNE" in plain.fix and "tf.py_function" not in plain.fix


def test_a_tf_data_source_that_is_a_python_generator_gets_the_generators_fix(tmp_path):
    """The same Python calls, from the pipeline's source: the iterator the trace names ends in ``::Generator``
    (Dataset.from_generator), so the fix replaces the generator, not a map the job does not have."""
    finding = diagnose(_steps(tmp_path, lambda i: [("tfload-gen", 5000), ("op", 5000)])).findings[0]
    assert finding.cause == "input-pipeline" and finding.share == pytest.approx(0.5, rel=1e-3)
    assert "from_generator" in finding.fix and "map's Python function" not in finding.fix
    assert "a Python generator (Dataset.from_generator: Iterator::Root::Prefetch::BatchV2::FlatMap[0]::Generator" \
        in " ".join(finding.evidence)


def _framework(tmp_path: Path, parts) -> RuleOutputs:
    """The same steps as a SageMaker job's training process (framework-account.json, no profiler trace)."""
    doc = _steps(tmp_path, parts).traces
    (rank,) = doc["ranks"].values()
    account = {"nodes": {"algo-1-27": {"account": rank["account"], "steps": [str(i) for i in range(40)]}},
               "not_accounted": {}}
    return RuleOutputs(folder=tmp_path, framework_account=account)


def test_a_sagemaker_process_waiting_for_data_is_a_finding_outside_forward_and_backward_is_not(tmp_path):
    """From framework events the time under no operator holds optimizer.step() (smdebug records only the forward
    and backward passes): not host overhead; a wait for data every step pays is a finding, in the node's words."""
    quiet = diagnose(_framework(tmp_path, lambda i: [("op", 700_000), ("python", 300_000)]))  # 40 steps of 1 s
    assert _causes(quiet) == [] and any(a.question == "step-account" and a.judged for a in quiet.answers)
    waiting = diagnose(_framework(tmp_path, lambda i: [("load", 200_000), ("op", 700_000), ("python", 100_000)]))
    assert _causes(waiting) == ["step-waste"]
    finding = waiting.findings[0]
    assert finding.metrics["slices"]["data_wait"] == pytest.approx(0.2, rel=1e-3)
    assert finding.sections == ["framework-metrics-summary"] and "framework metrics summary" in finding.evidence[-1]


def _jax_eager(tmp_path: Path, compile_us: float) -> RuleOutputs:
    """JAX without jax.jit, 40 steps of 25 primitives from Python (each call 100 µs, 40 of them its kernel, 20 µs of
    Python after it: 2 of every 3 ms outside the kernels); step 0 first compiles for ``compile_us``, as JAX does
    each primitive's first call."""
    events, t = [], 0.0
    for i in range(40):
        start = t
        if i == 0 and compile_us:
            events.append(_ev("backend_compile_and_load", t, compile_us))
            t += compile_us
        for _ in range(25):
            events += [_ev("PjitFunction(matmul)", t, 100),
                       _ev("CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice", t + 50, 40)]
            t += 120
        events.append(_ev(f"ProfilerStep#{i}", start, t - start, "user_annotation"))
        t += 10
    tmp_path.mkdir()
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    doc, _ = analyze_traces([path])
    return RuleOutputs(folder=tmp_path, traces=doc)


def test_a_first_step_that_compiles_once_is_start_up_not_a_share_of_every_step(tmp_path):
    """A window from the loop's start holds its first step's compilation at far more than its part of a long loop:
    the every-step overhead is taken over the other steps and applied to the loop less that step (jax-nojit)."""
    without = diagnose(_jax_eager(tmp_path / "a", 0)).findings[0]
    assert without.cause == "operator-overhead" and "no jax.jit" in without.title
    assert without.seconds == pytest.approx(40 * 2.0 / 1000, rel=0.02)  # 2 of 3 ms, in each of the 40 steps
    compiled = diagnose(_jax_eager(tmp_path / "b", 300_000)).findings[0]
    # every step pays 2 of its 3 ms: the share of the steps after the first, not of a window the one compilation
    # fills (2 ms x 40 of 420 ms: 19 %, which a loop longer than the window would be charged); traces alone are the
    # loop, so the seconds are the 39 other steps' 2 ms each
    assert compiled.cause == "operator-overhead"
    assert compiled.metrics["share_of_steps"] == pytest.approx(2 / 3, rel=0.01)
    assert compiled.seconds == pytest.approx(39 * 2.0 / 1000, rel=0.02)
    assert any("first step (0.30 s) compiled (backend_compile_and_load 0.3 s)" in e for e in compiled.evidence)
