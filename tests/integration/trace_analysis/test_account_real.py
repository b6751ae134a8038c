"""The step-time account on every real trace we hold: it adds up to the steps, and it agrees with the runs' own
timing where the run measured the same thing (the scripts' truth.json)."""

from __future__ import annotations

import json

import pytest

from reportgen.diagnosis import diagnose
from reportgen.rule_outputs import RuleOutputs
from reportgen.trace_analysis.outputs import analyze_job
from tests.support.paths import RAW, RECORDINGS, need

TRACE = (".pt.trace.json", ".xplane.pb", "control.json", "sampled_rank-")
# every recording with traces outside planted/ (which has its own test), found rather than listed: a new one is
# checked too (cpu-memory's, keras's, cpu-torch/cycles' three cycles)
RECORDED = sorted(str(d.relative_to(RECORDINGS)) for d in RECORDINGS.glob("*/*") if d.is_dir()
                  and d.parent.name != "planted" and any(any(t in p.name for t in TRACE) for p in d.rglob("*")))
PLANTED = sorted(d.name for d in (RECORDINGS / "planted").iterdir() if (d / "truth.json").is_file())
RAW_TRACES = ["torch-cpu-record-inputbound", "torch-cpu-record-workers2", "torch-cpu-record-ddp2",
              "kineto-resnet50-num-workers-0", "kineto-resnet50-num-workers-4", "hta-resnet-v100-1gpu",
              "hta-cpu-only-gloo", "hta-trace-diff-rank3of8", "hta-sampled-128rank"]


def _doc(folder):
    files = sorted(p for p in folder.rglob("*") if p.is_file() and any(t in p.name for t in TRACE))
    assert files, folder
    doc, _ = analyze_job(files)
    return doc


def _accounts(doc):
    return {label: rank["account"] for label, rank in doc["ranks"].items() if rank.get("steps")}


def _check_adds_up(doc):
    accounts = _accounts(doc)
    assert accounts
    for label, a in accounts.items():
        steps = doc["ranks"][label]["steps"]
        assert a["steps"] == len(steps)
        assert a["step_ms"] == pytest.approx(sum(s["dur_ms"] for s in steps))
        assert sum(a["slices_ms"].values()) == pytest.approx(a["step_ms"], rel=1e-9)
        assert all(v >= 0 for v in a["slices_ms"].values())
        for i, step in enumerate(steps):  # and each step on its own
            assert sum(a["per_step_ms"][name][i] for name in a["per_step_ms"]) == pytest.approx(step["dur_ms"],
                                                                                                   abs=1e-5)


@pytest.mark.parametrize("name", RECORDED)
def test_recordings_account_adds_up_to_every_step(name):
    _check_adds_up(_doc(RECORDINGS / name))


@pytest.mark.parametrize("run", PLANTED)
def test_planted_runs_account_adds_up_to_every_step(run):
    _check_adds_up(_doc(RECORDINGS / "planted" / run))


KEY_AVERAGED = [run for run in PLANTED if "key_averages" in json.loads((RECORDINGS / "planted" / run / "truth.json")
                                                                            .read_text())]


@pytest.mark.parametrize("run", KEY_AVERAGED)
def test_account_is_torchs_own_key_averages(run):
    """torch's key_averages() of the profiled steps, saved by the script at the end of the run: the steps' total is
    ProfilerStep*'s CPU time, the time under no operator its self CPU time, the wait for data the DataLoader's."""
    truth = _truth(f"planted/{run}")["key_averages"]
    a = next(iter(_accounts(_doc(RECORDINGS / "planted" / run)).values()))
    loader = [v for key, v in truth.items() if key.startswith("enumerate(DataLoader)#")]
    tolerance = 0.001 * a["steps"]  # 1 µs a step: torch's own rounding
    assert a["steps"] == truth["ProfilerStep*"]["count"]
    assert a["step_ms"] == pytest.approx(truth["ProfilerStep*"]["cpu_us"] / 1000, abs=tolerance)
    assert a["slices_ms"]["no_operator"] == pytest.approx(truth["ProfilerStep*"]["self_cpu_us"] / 1000, abs=tolerance)
    assert len(loader) == 1 and a["slices_ms"]["data_wait"] == pytest.approx(loader[0]["cpu_us"] / 1000, abs=tolerance)


def test_every_recording_with_traces_is_accounted():
    assert {"cpu-torch/periodic", "cpu-torch/cycles", "cpu-memory/leak", "keras/callback", "gpu-input/w0",
            "gpu-host-sync/h100-host-sync", "jax-tf/tf-cpu"} <= set(RECORDED)


def test_every_torch_run_planted_since_key_averages_were_saved_is_checked():
    assert {"gc-pause", "checkpoint"} <= set(KEY_AVERAGED)


@pytest.mark.fixtures
@pytest.mark.parametrize("name", RAW_TRACES)
def test_real_traces_account_adds_up_to_every_step(name):
    _check_adds_up(_doc(need(RAW / name)))


def _truth(name):
    return json.loads((RECORDINGS / name / "truth.json").read_text())


@pytest.mark.parametrize("run", ["jax-cpu", "tf-cpu"])
def test_jax_and_tf_data_wait_is_the_scripts_own_input_share_and_a_finding(run):
    """The scripts time every next(): 13.9 % (JAX) and 24.6 % (TF) of the step. The DataLoader cause's own 25 %
    threshold never fired on them; the account finds the wait without it."""
    doc = _doc(RECORDINGS / "jax-tf" / run)
    a = next(iter(_accounts(doc).values()))
    truth = _truth(f"jax-tf/{run}")["input_share"]
    assert a["slices_ms"]["data_wait"] / a["step_ms"] == pytest.approx(truth, rel=0.15)
    outputs = RuleOutputs(folder=RECORDINGS)
    outputs.traces = doc
    diagnosis = diagnose(outputs)
    waste = [f for f in diagnosis.findings if f.cause == "step-waste"]
    assert waste and waste[0].metrics["slices"]["data_wait"] == pytest.approx(truth, rel=0.25)
    assert "waiting for data" in waste[0].title
    # the fix in the framework's words: tf.data's prefetch for TensorFlow, a prefetching iterator for JAX
    assert ("tf.data.AUTOTUNE" if run == "tf-cpu" else "prefetches") in waste[0].fix and "DataLoader" not in waste[0].fix
    if run == "tf-cpu":  # its map is a tf.numpy_function (train_tf.py): one call a batch, the Python waited for
        assert "1 Python function call a step" in waste[0].evidence[0] and "tf.numpy_function" in waste[0].fix


def test_gpu_input_bound_steps_wait_for_data_as_the_script_measured():
    """Loading in the training process: 84 % of the profiled steps wait for data; with 4 workers the same loop
    took 78 % less time (the script's own timing), and the wait falls to a third of the step."""
    w0 = next(iter(_accounts(_doc(RECORDINGS / "gpu-input" / "w0")).values()))
    w4 = next(iter(_accounts(_doc(RECORDINGS / "gpu-input" / "w4")).values()))
    truth = {t["workers"]: t["loop_s"] for t in _truth("gpu-input")}
    saved = 1 - truth[4] / truth[0]
    assert w0["perspective"] == "device"
    assert w0["slices_ms"]["data_wait"] / w0["step_ms"] == pytest.approx(saved, rel=0.1)
    assert w4["slices_ms"]["data_wait"] / w4["step_ms"] < 0.4


def test_host_sync_recording_is_the_host_blocked_slice_and_one_finding():
    doc = _doc(RECORDINGS / "gpu-host-sync" / "h100-host-sync")
    a = next(iter(_accounts(doc).values()))
    assert 0.2 < a["slices_ms"]["host_blocked"] / a["step_ms"] < 0.35
    outputs = RuleOutputs(folder=RECORDINGS)
    outputs.traces = doc
    causes = [f.cause for f in diagnose(outputs).findings]
    assert causes[0] == "host-sync" and "host-overhead" not in causes  # the blocked time is host-sync's, once
