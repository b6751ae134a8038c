"""The diagnosis against truth on real runs with one planted cost each (tests/recordings/planted/, issue 46).

Each run was recorded with ``reportgen record`` and timed by its own script (truth.json); the same job with the
fix was run twice to know what the fix saves. The verdict must name the planted cost, its fix, and an impact
within 30 % of what the fix saved in at least one rerun (the reruns drift with the shared host's load: the README
gives both) — or of the cost the script measured inside the planted code where the reruns drifted apart. Clean runs
must stay clean; slow steps by design are no finding.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from reportgen.diagnosis import diagnose
from reportgen.pipeline import analyze as analyze_source
from reportgen.rule_outputs import load_rule_outputs
from tests.support.paths import RECORDINGS

PLANTED = RECORDINGS / "planted"
TOLERANCE = 0.30


def _truth() -> dict:
    spec = importlib.util.spec_from_file_location("truth_table", PLANTED / "truth_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {row["run"]: row for row in module.truth_rows(PLANTED)}


TRUTH = _truth()


def _diagnosis(run, tmp_path):
    return diagnose(load_rule_outputs(analyze_source(str(PLANTED / run), tmp_path / run)))


# run -> (first cause, words its fix must hold, what its impact is held to: "fix" or "planted")
EXPECTED = {
    "metrics": ("host-overhead", "every N steps", "planted"),
    "tf-hostwork": ("host-overhead", "every N steps", "planted"),
    "microbatch": ("operator-overhead", "larger micro-batches", "fix"),
    "epoch-restart": ("step-outliers", "persistent_workers=True", "fix"),
    "padded": ("step-outliers", "Bucket samples by size", "fix"),
    "io-latency": ("input-pipeline", "waiting workers need no core", "fix"),
    "jax-recompile": ("compilation", "jax.jit sees static", "fix"),
    "periodic-eval": ("step-outliers", "extra work inside the step", "planted"),
    # planted after the account was built, for causes no detector was written for: a manual gc.collect() every
    # step (the trace names nothing: the unnamed slice with how to look closer), a checkpoint every 10 steps too
    # small to make two of its three steps outliers, TensorFlow stepped eagerly op by op
    "gc-pause": ("host-overhead", "gc.collect()", "fix"),
    "checkpoint": ("step-outliers", "every 10 steps", "profiled"),
    "tf-eager": ("operator-overhead", "@tf.function", "fix"),
    "jax-nojit": ("operator-overhead", "jax.jit", "steady"),
    "torch-recompile": ("compilation", "torch.compile", "fix"),
    # planted after the account's findings were written, no detector for it: autograd's anomaly detection left on
    # (its cost is inside the operators' own time: a slice carved out of compute by its signature)
    "anomaly": ("debug-mode", "set_detect_anomaly", "fix"),
    # a tf.function given a decaying learning rate as a Python float: traced and instantiated anew every step
    "tf-retrace": ("compilation", "tf.constant", "fix"),
    # next(iter(loader)) in every step: the loader's workers started and stopped each step
    "iter-per-step": ("loader-restart", "once per epoch", "fix"),
    # the model and its inputs in float64 (record_shapes=True: the operators' input types say double); healthy
    # before, 96 % "compute"
    "float64": ("float64", "model.float()", "fix"),
    # a tf.data map that is a tf.py_function: the input pipeline's wait, with a DataLoader's fix before
    "tf-pyfunc": ("input-pipeline", "tf.py_function", "fix"),
    # per-sample numpy work in the Dataset (CPU, not I/O), num_workers=0, on a 2-core host at 100 %: 1 worker, bounded
    # by the loading it moves (held to the rerun right after it: the second ran as the host's load rose); starved of
    # cores, not waiting, by the scheduler's run queue (below)
    "cpu-loading": ("input-pipeline", "num_workers from 0 to 1", "fix"),
    # probes of 16:21 UTC, healthy / a wrong first finding as recorded: the script's own copies outside every operator
    # (a tensor grown with torch.cat every step, held to the cat's own time: the reruns drifted with the host's load;
    # a snapshot of a 67 MB layer's weights and momentum cloned every step)
    "history-cat": ("tensor-copies", "concatenate once", "planted"),
    "needless-copy": ("tensor-copies", "Copy less often", "fix"),
    # JAX and TensorFlow probes of 16:21 UTC, no detector written for them: host metrics after a jitted step (under
    # no operator: the JAX CPU device's transfers are no events), a tf.data map in TensorFlow ops run sequentially
    # without prefetch, a tf.data source that is a Python generator (Dataset.from_generator)
    "jax-hostmetrics": ("host-overhead", "every N steps", "fix"),
    # (its threads already asked for both cores, 1.25 used and 1.92 waited: a parallel map finds no core, as its
    # reruns measured, 2-13 % saved; the cheaper map the finding asks for is held to the map's wait, the planted cost)
    "tf-noprefetch-map": ("input-pipeline", "cores are the limit", "planted"),
    "tf-generator": ("input-pipeline", "from_generator", "fix"),
    # a jitted JAX step at batch 8, too small for its fixed cost (keras-tiny-batch's cause, in JAX)
    "jax-tiny-batch": ("operator-overhead", "larger batch", "fix"),
    # probes of 19:17-19:21 UTC, no detector written for them: a 64 MB scratch tensor made (torch.zeros) every step
    # (held to the time the script measured in it: the reruns drifted with the host's load), a background Python
    # thread holding the GIL beside the steps (recorded again at 20:08 UTC with the process split by thread, its
    # first fix run beside it), a frozen backbone whose parameters still require grad
    "alloc-churn": ("allocator-churn", "Allocate it once", "planted"),
    "bg-thread": ("thread-contention", "own process", "fix"),
    "frozen-grad": ("unused-gradients", "requires_grad_(False)", "fix"),
}
# The verdicts that are not right yet, as the README's table says, each with why (strict: fixing one must say so)
NOT_YET = {
}


@pytest.mark.parametrize("run", [pytest.param(run, marks=pytest.mark.xfail(strict=True, reason=NOT_YET[run]))
                                 if run in NOT_YET else run for run in sorted(EXPECTED)])
def test_the_planted_cost_is_the_first_finding_with_its_fix_and_its_measured_cost(run, tmp_path):
    cause, words, held_to = EXPECTED[run]
    diagnosis = _diagnosis(run, tmp_path)
    truth = TRUTH[run]
    assert diagnosis.status == "problems"
    top = diagnosis.findings[0]
    assert top.cause == cause and words in top.fix, (top.cause, top.fix)
    causes = [f.cause for f in diagnosis.findings if f.counts]
    assert len(causes) == len(set(causes)) and causes.count(cause) == 1  # one stall, one finding
    # "profiled": the planted share of the profiled steps applied to the loop, where the reruns drifted apart and the
    # planted cost outside the window differs from inside it (checkpoint: the file's first two writes, before the
    # window, took 1.3 and 2.1 s; the window's 0.3-0.5 s)
    targets = {"fix": truth["fix_saved_s"], "planted": [truth["planted_s"]],
               "profiled": [truth["planted_share_profiled"] * truth["loop_less_export_s"]],
               # "steady": what the fix saved beyond the first step (jax-nojit's first step compiles every primitive
               # on its own: one step, which the compilation cause leaves alone and the eager finding takes for
               # start-up)
               "steady": truth["steady_saved_s"]}[held_to]
    assert any(abs(top.seconds - t) <= TOLERANCE * t for t in targets), (top.seconds, targets)


@pytest.mark.parametrize("run", ["clean", "tf-clean", "jax-clean", "accum-optimizer"])
def test_clean_runs_and_slow_steps_by_design_stay_clean(run, tmp_path):
    """Nothing planted (jax-clean's one compilation is its first: static shapes would compile it too), or slow
    steps by design: accum-optimizer's every 4th step runs the optimizer under gradient accumulation."""
    diagnosis = _diagnosis(run, tmp_path)
    assert diagnosis.status == "healthy" and diagnosis.findings == []


def test_the_profilers_export_matches_the_scripts_own_timing(tmp_path):
    """recording.json keeps when each trace was written; the export runs from the end of the cycle (torch stops and
    collects its events there, then its handler writes the file whose name stamps the handler's start) to that
    write: the whole prof.step() that closes the profiled window, as the script timed it."""
    for run in ("epoch-restart", "metrics", "microbatch"):  # 0.63 s, 3.18 s and 13.8 s inside the loop
        ev = _diagnosis(run, tmp_path).evidence
        script = json.loads((PLANTED / run / "truth.json").read_text())
        schedule = script["profiler_schedule"]
        closing = script["prof_step_s"][schedule["wait"] + schedule["warmup"] + schedule["active"] - 1]
        assert ev.profiler_export_s == pytest.approx(closing, rel=0.05)
        # the handler alone (the file name's stamp to the write) is 5-12 % less: the events' collection before it
        assert ev.profiler_export_s > sum(script["profiler_handler_s"])


def test_jax_and_tensorflows_export_runs_from_the_traces_end_to_their_last_file(tmp_path):
    """stop_trace() / stop() as the scripts timed them: 0.35 s (JAX writes the XSpace and a Chrome-trace copy; 7.06 s
    when every step of the first recording was profiled) and 0.045 s; from the traces' last event to the last write
    under plugins/profile/: 0.28 s (6.50 s) and 0.042 s. Within 10 % or 70 ms: the part of stop_trace() before the
    trace's last event and after its last write (10-65 ms on the JAX runs profiled in a window)."""
    for run in ("jax-nojit", "jax-recompile", "tf-eager"):
        ev = _diagnosis(run, tmp_path).evidence
        assert ev.profiler_export_s == pytest.approx(TRUTH[run]["profiler_export_s"], rel=0.1, abs=0.07)


def test_the_summary_gives_the_loop_at_a_glance_uses(tmp_path):
    """A recording's system metrics hold no step boundaries; the training loop estimated from its traces is what
    At a glance and every share use, and the job summary says so with the same number (not 'cannot be computed')."""
    from reportgen.diagnosis.evidence import CHILDREN_END, CHILDREN_START
    from reportgen.formatting import human_duration
    from reportgen.report.build import build_report
    from reportgen.section_ids import SectionId

    report = build_report(load_rule_outputs(analyze_source(str(PLANTED / "epoch-restart"), tmp_path / "o")))
    ev = report.diagnosis.evidence
    summary = next(s for s in report.sections if s.id == SectionId.TRAINING_JOB_SUMMARY)
    text = " ".join(b.text for b in summary.blocks if hasattr(b, "text"))
    assert "cannot be computed" not in text
    # its ends where the recording saw them: the DataLoader's workers' first start and last end
    assert (f"({CHILDREN_START}) to " in text and f"({CHILDREN_END}): {human_duration(ev.loop_s)}, the profiler's own "
            "export" in text)
    assert f"shutdown after it {human_duration(ev.shutdown_s)}" in text
    # the estimate against the script's own loop: 38.0 s, the export (0.58 s) inside it
    assert ev.loop_s == pytest.approx(TRUTH["epoch-restart"]["loop_less_export_s"], rel=0.05)


def test_without_a_child_process_the_loop_ends_where_the_script_did(tmp_path):
    """tf-clean has no child process: its loop ends at the end of its script as `reportgen record` kept it (the
    command's atexit hook), not at the exit 2.0 s later, and the job summary says so with the shutdown after it."""
    from reportgen.diagnosis.evidence import SCRIPT_END
    from reportgen.formatting import human_duration
    from reportgen.report.build import build_report
    from reportgen.section_ids import SectionId

    report = build_report(load_rule_outputs(analyze_source(str(PLANTED / "tf-clean"), tmp_path / "o")))
    ev = report.diagnosis.evidence
    summary = next(s for s in report.sections if s.id == SectionId.TRAINING_JOB_SUMMARY)
    text = " ".join(b.text for b in summary.blocks if hasattr(b, "text"))
    recording = json.loads((PLANTED / "tf-clean" / "recording.json").read_text())
    assert ev.loop_marks[1] == SCRIPT_END and ev.loop[1] == recording["script_end_s"]
    assert f"({SCRIPT_END}): {human_duration(ev.loop_s)}" in text
    assert f"shutdown after it {human_duration(ev.shutdown_s)}" in text
    # the teardown (2.2 s to the recorder's end; the job's end is its last sample's tick) is no longer loop
    assert 1.5 < ev.shutdown_s <= recording["ended"] - recording["script_end_s"]
    truth = json.loads((PLANTED / "tf-clean" / "truth.json").read_text())
    assert truth["t_end"] <= ev.loop[1] <= truth["t_end"] + 0.25  # truth.json written, a line printed


def test_a_script_idle_after_its_loop_ends_the_loop_at_its_last_work(tmp_path):
    """tf-generator's script idled 4.2 s after its loop (the tf.data iterator over a Python generator released: no
    CPU, no wait for a core) before its last line: the loop ends at its last busy tick, within a tick of the script's
    own loop end, and the idle seconds are shutdown, said so in the job summary."""
    from reportgen.diagnosis.evidence import IDLE_TO_SCRIPT_END
    from reportgen.formatting import human_duration
    from reportgen.report.build import build_report
    from reportgen.section_ids import SectionId

    report = build_report(load_rule_outputs(analyze_source(str(PLANTED / "tf-generator"), tmp_path / "o")))
    ev = report.diagnosis.evidence
    truth = json.loads((PLANTED / "tf-generator" / "truth.json").read_text())
    recording = json.loads((PLANTED / "tf-generator" / "recording.json").read_text())
    assert ev.loop_marks[1] == IDLE_TO_SCRIPT_END
    assert truth["t_loop_end"] <= ev.loop[1] <= truth["t_loop_end"] + 0.5
    assert ev.shutdown_s > recording["script_end_s"] - ev.loop[1] > 4.0  # the idle seconds and the teardown
    summary = next(s for s in report.sections if s.id == SectionId.TRAINING_JOB_SUMMARY)
    text = " ".join(b.text for b in summary.blocks if hasattr(b, "text"))
    assert f"({IDLE_TO_SCRIPT_END}): {human_duration(ev.loop_s)}" in text


def test_a_script_end_that_is_no_number_marks_no_idle_end(tmp_path):
    """tf-generator's recording with its script's end unreadable (text, NaN, a bool): no idle run up to it can be
    read, nor the end itself: the loop runs to the exit, without a traceback."""
    import shutil

    from reportgen.diagnosis.evidence import AT_EXIT

    recording = json.loads((PLANTED / "tf-generator" / "recording.json").read_text())
    for i, bad in enumerate(("soon", float("nan"), True)):
        run = tmp_path / f"run-{i}"
        shutil.copytree(PLANTED / "tf-generator", run)
        (run / "recording.json").write_text(json.dumps({**recording, "script_end_s": bad}))
        ev = diagnose(load_rule_outputs(analyze_source(str(run), tmp_path / f"o-{i}"))).evidence
        assert ev.loop_marks[1] == AT_EXIT and ev.shutdown_s == 0.0


def test_a_loop_that_waits_is_where_the_command_asked_for_less_cpu(tmp_path):
    """io-latency, recorded before the script's end was kept, waits on I/O in its loop: its command asked the host
    for 0.1-0.5 of a core a tick (CPU used and waited for) against a whole one in its start-up and in the work after
    its loop (key_averages(), the teardown). The loop runs between those levels, within a tick of the script's own
    ends, not from the waited steps at the profiled median (4.0 s early) to the exit (7.8 s late)."""
    from reportgen.diagnosis.evidence import DEMAND_END, DEMAND_START

    ev = _diagnosis("io-latency", tmp_path).evidence
    truth = json.loads((PLANTED / "io-latency" / "truth.json").read_text())
    assert ev.loop_marks == (DEMAND_START, DEMAND_END)
    assert abs(ev.loop[0] - truth["t_loop_start"]) <= 0.5 and abs(ev.loop[1] - truth["t_loop_end"]) <= 0.5
    assert ev.shutdown_s > 7.0  # key_averages(), truth.json and the interpreter's teardown


def test_a_script_end_outside_the_loops_bounds_is_no_end(tmp_path):
    """The script's end counts only after the profiler's last activity (its trace's last write) and before the exit:
    a mark before the export or after the exit (a clock that stepped) leaves the end at the exit."""
    import shutil

    from reportgen.diagnosis.evidence import AT_EXIT, SCRIPT_END

    recording = json.loads((PLANTED / "tf-clean" / "recording.json").read_text())
    written = max(recording["traces_written_s"].values())
    for at, end in ((written - 0.5, AT_EXIT), (recording["ended"] + 60, AT_EXIT), (written + 0.5, SCRIPT_END)):
        run = tmp_path / f"run-{at}"
        shutil.copytree(PLANTED / "tf-clean", run)
        (run / "recording.json").write_text(json.dumps({**recording, "script_end_s": at}))
        ev = diagnose(load_rule_outputs(analyze_source(str(run), tmp_path / f"o-{at}"))).evidence
        assert ev.loop_marks[1] == end and (ev.loop[1] == at) == (end == SCRIPT_END)



def test_cpu_loading_is_not_taken_for_waiting_when_the_timeline_is_judged(tmp_path):
    """A starved loader is not a waiting one (issue 46). cpu-loading's recording (49.5 s, its CPU judged over the loop
    from its ticks) used 0.45 of a core on a host at 100 % while loading took 80 % of each step: under the 0.60 that
    loading as CPU work asks. The scheduler's run queue says it asked for a whole core (0.56 more, runnable, waiting
    for one), so the loading is CPU work and the workers fit the cores (1 on 2), not 3 "that need no core".
    io-latency's, recorded the same way on a host at 100 %, asked for 0.52 of a core, no more than the rest of its
    step and a little: waiting."""
    top = _diagnosis("cpu-loading", tmp_path).findings[0]
    truth = TRUTH["cpu-loading"]
    assert top.cause == "input-pipeline" and "num_workers from 0 to 1" in top.fix
    assert "waiting workers need no core" not in top.fix
    assert any(abs(top.seconds - t) <= TOLERANCE * t for t in truth["fix_saved_s"] if t > 0), (
        top.seconds, truth["fix_saved_s"])
    (said,) = [e for e in top.evidence if "run queue" in e]
    # over the training loop (its start-up and the profiler's export left out), from the command's ticks
    used, queued = _ticks_mean(PLANTED / "cpu-loading", _diagnosis("cpu-loading", tmp_path).evidence)
    assert said.startswith("the loading is CPU work starved of cores, not waiting: the training process used "
                           f"{used:.2f} of a core over the loop")
    assert top.metrics["loading_cpu"]["reading"] == "computes" and top.metrics["loading_cpu"]["window"] == "loop"
    assert top.metrics["loading_cpu"]["used_cores"] == pytest.approx(used, abs=0.002)  # 0.45 (0.46 over the recording)
    assert top.metrics["loading_cpu"]["run_queue_cores"] == pytest.approx(queued, abs=0.002)  # 0.56 (0.54)
    waiting = _diagnosis("io-latency", tmp_path).findings[0]
    assert waiting.metrics["loading_cpu"]["reading"] == "waits" and "need no core" in waiting.fix


def _ticks_mean(run, ev) -> tuple[float, float]:
    """The command's CPU and run-queue wait (cores) over the loop less the profiler's export, from job-metrics.jsonl's
    ticks themselves (each tick's figures are over the time since the one before it), as the test reads them."""
    ticks = [json.loads(line) for line in (run / "job-metrics.jsonl").read_text().splitlines() if line.strip()]
    lo, hi = ev.loop
    sums, covered = [0.0, 0.0], 0.0
    for before, tick in zip(ticks, ticks[1:]):
        a, b = max(before["Timestamp"], lo), min(tick["Timestamp"], hi)
        if b <= a:
            continue
        # the export inside this tick's time is the profiler's
        span = (b - a) - sum(max(min(b, end) - max(a, start), 0.0) for start, end in ev.export_spans)
        if span > 0:
            covered += span
            sums[0] += tick["CPUCores"] * span
            sums[1] += (tick["RunQueueCores"] or 0.0) * span
    return sums[0] / covered, sums[1] / covered


def test_older_recordings_read_the_whole_recording_and_say_so(tmp_path):
    """Without the command's ticks (a recording or an analysis made before they were read over the loop), the CPU it
    used and waited for are recording.json's means over the whole recording, start-up included, and the evidence
    says so: io-latency's 0.13 and 0.39 of a core, the same reading (waits). A recording under a minute has no such
    reading (cpu-loading's 49.5 s: its CPU is judged from its ticks only)."""
    import shutil

    folder = tmp_path / "io-latency"
    shutil.copytree(PLANTED / "io-latency", folder)
    (folder / "job-metrics.jsonl").unlink()
    recording = json.loads((folder / "recording.json").read_text())
    used, queued = (recording[key] / recording["wall_s"] for key in ("job_cpu_s", "job_run_queue_s"))
    top = diagnose(load_rule_outputs(analyze_source(str(folder), tmp_path / "out"))).findings[0]
    (said,) = [e for e in top.evidence if "run queue" in e]
    assert said.startswith(f"the loading mostly waits, on I/O, not on the cores: the training process used {used:.2f} of "
                           "a core over the whole recording, its start-up included")
    assert top.metrics["loading_cpu"]["window"] == "recording" and top.metrics["loading_cpu"]["reading"] == "waits"
    assert top.metrics["loading_cpu"]["run_queue_cores"] == pytest.approx(queued, abs=0.005)  # 0.39


def test_without_the_run_queue_a_starved_loader_is_an_open_question_priced_as_cpu_work(tmp_path):
    """The same recordings without the run-queue account (as `reportgen record` wrote them before it): on a host
    at 100 % little CPU may be starvation or waiting. Neither is claimed: the finding says the question is open,
    gives the cores' workers and prices them (the smaller saving), naming how many would help if it waits."""
    import shutil

    for run, hide in (("cpu-loading", 4), ("io-latency", 2)):
        folder = tmp_path / run
        shutil.copytree(PLANTED / run, folder)
        recording = json.loads((folder / "recording.json").read_text())
        for key in ("job_run_queue_s", "job_run_queue_pct_of_host"):
            del recording[key]
        (folder / "recording.json").write_text(json.dumps(recording))
        ticks = [json.loads(line) for line in (folder / "job-metrics.jsonl").read_text().splitlines() if line.strip()]
        (folder / "job-metrics.jsonl").write_text("".join(  # nor tick by tick
            json.dumps({k: v for k, v in tick.items() if k != "RunQueueCores"}) + "\n" for tick in ticks))
        top = diagnose(load_rule_outputs(analyze_source(str(folder), tmp_path / f"{run}-out"))).findings[0]
        assert top.cause == "input-pipeline" and top.metrics["loading_cpu"]["reading"] == "open"
        assert "num_workers from 0 to 1" in top.fix and "need no core" not in top.fix
        assert f"up to {hide} if the loading waits on I/O rather than computing" in top.fix
        assert any("whether the loading computes or waits is open" in e for e in top.evidence)
        assert "priced as CPU work" in top.basis
        # what 1 worker saves when it loads as the training process did: the loading bounds the step
        share = top.metrics["dataloader_step_share"]
        assert top.loop_share == pytest.approx(1 - max(share, 1 - share), abs=1e-6)


def test_keras_tiny_batch_is_steps_too_small_for_their_fixed_cost(tmp_path):
    """keras-tiny-batch (probe of 2026-12-07 13:44, no detector written for it): model.fit at batch 8, one step an
    execution. As recorded the verdict was host-overhead, 2.9 s, with a metrics-and-logging fix: the tf.function
    call's own cost (its Python, the eager runtime, the executor scheduling 0.24 ms of kernels) was "compute". The
    account now splits a graph call whose kernels are less than the rest of it: the fixed cost is the finding, the
    Python between calls with it, the fix a larger batch or steps_per_execution, held to the larger batch's saving
    (batch 256, the same samples); steps_per_execution=32 saved less (the executor's per-operation cost stays)."""
    diagnosis = _diagnosis("keras-tiny-batch", tmp_path)
    truth = TRUTH["keras-tiny-batch"]
    top = diagnosis.findings[0]
    assert diagnosis.status == "problems" and top.cause == "operator-overhead", (top.cause, top.title)
    assert "larger batch" in top.fix and "steps_per_execution" in top.fix
    causes = [f.cause for f in diagnosis.findings if f.counts]
    assert "host-overhead" not in causes  # the Python between the small steps is the same per-step cost, once
    spe, larger_batch = truth["fix_saved_s"]  # fix1: steps_per_execution=32, fix2: batch 256
    assert abs(top.seconds - larger_batch) <= TOLERANCE * larger_batch, (top.seconds, larger_batch)
    assert top.seconds > spe  # an upper bound: steps_per_execution gives back only part of it


def test_print_log_names_the_tensor_printed_every_step(tmp_path):
    """print-log (probe of 2026-12-07 14:08): a 16x10 logits tensor logged with logging.info("%s") every step. As
    recorded the verdict was host-overhead with the generic culprits; the trace shows 333 aten::item calls a step
    outside the optimizer and the backward pass (its repr reads every element), so the finding names printing or
    logging tensors and the fix is to log a float every N steps. Held to the planted cost in the profiled steps
    applied to the loop (3.9 s): the reruns, recorded again on a quiet host with the script's end, saved 3.6 / 1.7 s
    (the second's loop ran 1.9 s longer than the first's)."""
    diagnosis = _diagnosis("print-log", tmp_path)
    truth = TRUTH["print-log"]
    top = diagnosis.findings[0]
    assert diagnosis.status == "problems" and top.cause == "host-overhead", (top.cause, top.title)
    assert "Stop printing or logging whole tensors" in top.fix and "333 a step" in top.fix
    assert any("tensor elements into Python one by one" in line for line in top.evidence)
    planted = truth["planted_share_profiled"] * truth["loop_less_export_s"]
    assert abs(top.seconds - planted) <= TOLERANCE * planted, (top.seconds, planted)


def test_copies_that_grow_every_step_are_named_and_slow_steps_leave_them_to_the_copies(tmp_path):
    """history-cat (probe of 16:21 UTC, healthy as recorded; recorded again at 17:45 UTC on a quieter host, 120 steps,
    45-74 profiled): aten::cat outside any operator grows from 37 to 60 ms a step (a median 39 ms in the first third,
    56 ms in the last: 1.44x, r 0.94), 53 % of the profiled steps; the finding says it grows and gives the
    list-then-one-cat fix. needless-copy
    (step-outliers with the fix for larger inputs as recorded): three steps the busy host slowed, 2.9 s of their
    extra in the snapshot's clones, which the copies' finding counts (all its time), not the slow steps'."""
    grown = _diagnosis("history-cat", tmp_path).findings[0]
    assert grown.metrics["grows"] is True and grown.metrics["copies_named_ms"].keys() == {"aten::cat"}
    assert "the copies grow with every step" in grown.evidence[1]
    copied = _diagnosis("needless-copy", tmp_path)
    top, slow = copied.findings[0], next(f for f in copied.findings if f.cause == "step-outliers")
    assert top.metrics["grows"] is False and "aten::clone" in top.metrics["copies_named_ms"]
    (said,) = [e for e in slow.evidence if "tensor copies" in e]
    assert said.startswith("2.9 s of their extra time is the script's own tensor copies")
    # the slow steps lost 7.3 s of the profiled 25.6 s (28 %): what the clones did not take, 4.4 s (17 %), is theirs
    assert slow.metrics["seconds_lost"] == pytest.approx(7.3, abs=0.05) and 0.16 < slow.loop_share < 0.18


def test_subprocess_monitor_is_time_under_no_operator_with_the_every_n_steps_fix(tmp_path):
    """subprocess-monitor (probe of 16:21 UTC): three monitoring commands run with subprocess.run every step. The
    trace holds nothing of them; the account puts the wait under no operator, host-overhead. As recorded the evidence
    called it the script's Python; the recording's process count saw children come and go 8 times inside the loop
    (10 as recorded again at 17:24 UTC; up to 3 processes: the worker and a command), so the finding says the step
    may wait on what it starts and the fix names commands run from the step first."""
    diagnosis = _diagnosis("subprocess-monitor", tmp_path)
    top = diagnosis.findings[0]
    assert diagnosis.status == "problems" and top.cause == "host-overhead"
    assert diagnosis.evidence.process_churn == (10, 3)
    assert top.fix.startswith("If the step runs a command (subprocess.run or os.system")
    assert "every N steps, or in a background thread" in top.fix
    assert any(e.startswith("the recording saw the job's processes come and go 10 times") for e in top.evidence)
    assert "tensor-copies" not in [f.cause for f in diagnosis.findings]
    # a loop whose worker stays from its first batch to its end has no such churn, and no such fix
    metrics = _diagnosis("metrics", tmp_path)
    assert metrics.evidence.process_churn == (0, 0) and "subprocess" not in metrics.findings[0].fix


def test_subprocess_monitors_impact_is_its_planted_cost(tmp_path):
    """Recorded again with the children's CPU (17:24 UTC): the loop ends at its worker's last work, 0.27 s before the
    script's loop end, not at the worker's end 1.5 s after it (prof.key_averages() and the truth written): 4.19 s
    against the planted 3.81 s (+10 %; +20 % to the worker's end). The clean steps' own few % under no operator are
    still claimed with the plant's."""
    top = _diagnosis("subprocess-monitor", tmp_path).findings[0]
    planted = TRUTH["subprocess-monitor"]["planted_s"]
    assert abs(top.seconds - planted) <= TOLERANCE * planted, (top.seconds, planted)


def test_a_tf_data_map_in_tensorflow_ops_without_prefetch_gets_tf_datas_own_fix(tmp_path):
    """tf-noprefetch-map: the step waits on a sequential map in TensorFlow ops (no tf.py_function): the wait is
    the account's data slice, as large as the script's own wait, and the fix is tf.data's (a parallel map and a
    prefetch buffer), not a DataLoader's workers nor a py_function's rewrite."""
    diagnosis = _diagnosis("tf-noprefetch-map", tmp_path)
    top = diagnosis.findings[0]
    assert diagnosis.status == "problems" and top.cause == "input-pipeline"
    assert "num_parallel_calls=tf.data.AUTOTUNE" in top.fix and ".prefetch(" in top.fix
    assert "py_function" not in top.fix and "num_workers" not in top.fix
    assert "parallel map thread" in top.basis and "worker" not in top.basis  # tf.data's words, not a DataLoader's
    share = top.metrics["dataloader_step_share"]
    assert abs(share - TRUTH["tf-noprefetch-map"]["planted_share_profiled"]) < 0.08, share


@pytest.mark.parametrize("run", ["jax-hostmetrics", "tf-hostwork"])
def test_host_work_in_a_jax_or_tensorflow_trace_gets_their_profilers_way_to_look_closer(run, tmp_path):
    """Host metrics after a jitted JAX step (and TensorFlow's host numpy): the time under no operator, and the way to
    see which lines is the XSpace profilers' Python tracer, not torch's with_stack=True, which they have not."""
    top = _diagnosis(run, tmp_path).findings[0]
    assert top.cause == "host-overhead"
    assert "python_tracer_level=1" in top.fix and "with_stack" not in top.fix and "np.asarray" in top.fix
    assert top.metrics["share_of_steps"] == pytest.approx(TRUTH[run]["planted_share_profiled"], abs=0.05)


def test_the_other_threads_are_named_only_where_they_used_a_tenth_of_a_core(tmp_path):
    """bg-thread's recording split by thread: its other threads used 0.14 of a core over the loop. Halved (0.07), or
    without the split (recordings before it), or with a damaged series, the time under no operator is host-overhead's
    again, with no traceback; the finding's impact is that slice. So it is where the step's thread did not sleep
    through the time under no operator (it ran the script's own Python, or an operator's pool worked beside it)."""
    outputs = load_rule_outputs(analyze_source(str(PLANTED / "bg-thread"), tmp_path / "bg"))
    found = diagnose(outputs)
    top = found.findings[0]
    threads = found.evidence.loop_threads
    assert top.cause == "thread-contention" and threads is not None
    assert threads.other_cores == pytest.approx(top.metrics["other_threads_cores"]) and threads.other_cores >= 0.10
    assert top.loop_share == pytest.approx(top.metrics["no_operator_share"])  # held to the slice it refines
    assert f"{threads.other_cores:.2f} of a core during the loop" in top.evidence[0]
    assert "host-overhead" not in [f.cause for f in found.findings]  # one stall, one finding
    kept = outputs.recording["thread_usage"]
    for series in ([[t, main, queue, other / 2] for t, main, queue, other in kept], None,
                   [[t, "x", queue, other] for t, main, queue, other in kept]):
        outputs.recording["thread_usage"] = series
        again = diagnose(outputs)
        causes = [f.cause for f in again.findings]
        assert causes[0] == "host-overhead" and "thread-contention" not in causes
        assert again.findings[0].loop_share == pytest.approx(top.metrics["no_operator_share"])
    # the step's thread ran (on a core or waiting for one) all but 5 % of the loop: not held off the GIL
    outputs.recording["thread_usage"] = [[t, 0.4 * (t - kept[0][0]), 0.55 * (t - kept[0][0]), other]
                                         for t, main, queue, other in kept]
    causes = [f.cause for f in diagnose(outputs).findings]
    assert causes[0] == "host-overhead" and "thread-contention" not in causes


def test_a_thread_name_from_the_recording_is_shown_as_text(tmp_path):
    """The busiest threads' names are the kernel's, written by the recorded program: At a glance shows them escaped."""
    from reportgen.render.blocks import render_glance
    from reportgen.report.build import build_report

    outputs = load_rule_outputs(analyze_source(str(PLANTED / "bg-thread"), tmp_path / "bg"))
    hostile = "<img src=x onerror=alert(1)>"
    outputs.recording["busiest_threads"] = [[hostile, 7, 9.4]]
    report = build_report(outputs)
    top = report.diagnosis.findings[0]
    assert top.cause == "thread-contention" and any(f"{hostile} (9.4 CPU s)" in line for line in top.evidence)
    html = render_glance(report)
    assert "&lt;img src=x onerror=alert(1)&gt; (9.4 CPU s)" in html and hostile not in html
