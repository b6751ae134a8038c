"""GPU causes from PyTorch profiler traces (reportgen.diagnosis.gpu_causes): the project's trace generator
plants each one the way torch writes it on a CUDA machine (testdata/kineto_synthetic.py, PLANTED), plus a
healthy bf16 DDP job whose communication overlaps backward and that reads loss.item() once a step."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

import pytest

from reportgen.diagnosis import diagnose
from reportgen.trace_analysis import analyze_job, find_traces
from reportgen.rule_outputs import RuleOutputs
from testdata.kineto_synthetic import PLANTED, KinetoSet, write_set


@functools.lru_cache(maxsize=None)
def _analysed(cause: str | None) -> str:
    """The planted set's kineto.json, written and analysed once per cause for the whole module (two tests
    read each); returned as JSON text so that no test can change what another one reads."""
    with tempfile.TemporaryDirectory() as folder:
        write_set(KinetoSet(ranks=2, mb=2.5, seed=3, cycles=1, straggler=None, cause=cause), Path(folder))
        doc, _ = analyze_job(find_traces(Path(folder)))
    return json.dumps(doc)


def _diagnosis(tmp_path: Path, cause: str | None):
    doc = json.loads(_analysed(cause))
    made = RuleOutputs(folder=Path("."))
    made.rules, made.timeline, made.traces = {}, None, doc
    return diagnose(made), doc


def test_healthy_ddp_job_with_overlap_and_one_item_per_step_is_healthy(tmp_path):
    diagnosis, doc = _diagnosis(tmp_path, None)
    # no finding; traces alone show no memory and a few profiled steps no step times: not called healthy (#27)
    assert diagnosis.findings == [] and diagnosis.status == "insufficient-data"
    assert [a.question for a in diagnosis.answers if a.judged] == ["gpu-use", "input-pipeline", "step-account"]
    ga = doc["ranks"]["0"]["gpu_analysis"]
    assert ga["sync"]["per_step"] == 1.0 and ga["overlap"]["comm_comp_overlap_pct"] > 75


@pytest.mark.parametrize("cause", sorted(PLANTED))
def test_each_planted_gpu_cause_is_the_first_finding(tmp_path, cause):
    diagnosis, _ = _diagnosis(tmp_path, cause)
    assert diagnosis.status == "problems"
    first = diagnosis.findings[0]
    assert first.cause == cause, [(f.cause, f.share) for f in diagnosis.findings]
    assert "gpu-underused" not in [f.cause for f in diagnosis.findings]
    assert first.counts and first.metrics["per_step_ms"] > 0 and first.seconds > 0
    assert first.fix and any("per step" in e for e in first.evidence)


def test_host_sync_names_the_operators_and_counts_beyond_one_item(tmp_path):
    diagnosis, doc = _diagnosis(tmp_path, "host-sync")
    sync = doc["ranks"]["0"]["gpu_analysis"]["sync"]
    assert sync["per_step"] == 22.0  # 21 planted + loss.item()
    finding = diagnosis.findings[0]
    assert any("aten::item > aten::_local_scalar_dense: 21 per step" in e for e in finding.evidence)
    # each planted sync leaves the GPU idle for the 2 ms of host work after it (plus the relaunch); the largest gap
    # of each step is left out as its one normal sync: the loss.item() one, except in the trace's last step, whose
    # end has no GPU work after it (no gap), so one planted gap is left out there
    steps = len(doc["ranks"]["0"]["steps"])
    assert (21 * steps - 1) * 2.0 / steps <= finding.metrics["per_step_ms"] < 21 * 2.1


def test_launch_bound_job_is_not_called_underused(tmp_path):
    diagnosis, doc = _diagnosis(tmp_path, "kernel-launch-bound")
    launch = doc["ranks"]["0"]["gpu_analysis"]["launch"]
    assert launch["kernels_per_step"] > 1400 and launch["shorter_than_launch_share"] > 0.9
    assert [f.cause for f in diagnosis.findings] == ["kernel-launch-bound"]


def test_communication_bound_reports_zero_overlap(tmp_path):
    diagnosis, doc = _diagnosis(tmp_path, "communication-bound")
    finding = diagnosis.findings[0]
    assert finding.metrics["comm_comp_overlap_pct"] == pytest.approx({"0": 0.0, "1": 0.0}, abs=0.01)  # ns rounding
    assert 0.35 < finding.share < 0.45  # 6 buckets of 19 ms after a ~175 ms backward
    # 6 buckets of 25,165,824 bf16 gradients (50.3 MB) in ~19 ms each; 2 ranks: bus = algorithm bandwidth
    assert any("measured bus bandwidth 2.6 GB/s (algorithm bandwidth 2.6 GB/s, 302 MB a step)" in e
               for e in finding.evidence), finding.evidence


def test_fp32_on_a100_finds_the_eligible_share(tmp_path):
    diagnosis, doc = _diagnosis(tmp_path, "no-mixed-precision")
    tc = doc["ranks"]["0"]["gpu_analysis"]["tensor_cores"]
    assert tc["compute_capability"] == 8.0 and tc["eligible_share"] > 0.9
    assert "allow_tf32" in diagnosis.findings[0].fix and "bfloat16" in diagnosis.findings[0].fix


def test_pageable_copies_report_bytes_and_bandwidth(tmp_path):
    diagnosis, doc = _diagnosis(tmp_path, "pageable-memcpy")
    page = doc["ranks"]["0"]["gpu_analysis"]["memcpy"]["pageable_htod"]
    assert page["bytes_per_step"] == 77_070_336
    assert page["gb_per_s"] == pytest.approx(6.5, rel=0.05)
    assert any("77 MB per step" in e for e in diagnosis.findings[0].evidence)
    assert "pin_memory=True" in diagnosis.findings[0].fix


WEIRD = [None, "x", [], {}, [1, "a"], {"a": "b"}, float("nan"), float("inf"), -1, 10**400, True, 0]


def _leaves(doc, path=()):
    """Every (container, key) below ``doc``."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield doc, key
        yield from _leaves(value, (*path, key))


@pytest.mark.parametrize("cause", sorted(PLANTED))
def test_odd_gpu_analysis_values_never_break_the_diagnosis_or_the_section(tmp_path, cause):
    """A kineto.json written by something else: any value under a rank's gpu_analysis (and its steps, devices,
    collectives) replaced by an odd one, one at a time; diagnose and the section builder still answer."""
    import copy
    import random

    from reportgen.report.sections.gpu_kernels_operators import build

    _, doc = _diagnosis(tmp_path, cause)
    rank = doc["ranks"]["0"]
    spots = [(c, k) for c, k in _leaves({"gpu_analysis": rank["gpu_analysis"], "steps": rank["steps"][:2],
                                        "devices": rank["devices"], "collectives": rank["collectives"]})]
    rng = random.Random(cause)
    for round_ in range(40):
        made = copy.deepcopy(doc)
        target = made["ranks"]["0"]
        view = {"gpu_analysis": target["gpu_analysis"], "steps": target["steps"][:2], "devices": target["devices"],
                "collectives": target["collectives"]}
        container, key = rng.choice([(c, k) for c, k in _leaves(view)])
        container[key] = rng.choice(WEIRD)
        outputs = RuleOutputs(folder=Path("."))
        outputs.rules, outputs.timeline, outputs.traces = {}, None, made
        diagnosis = diagnose(outputs)
        assert diagnosis.status in ("healthy", "problems", "insufficient-data"), round_
        json.dumps(diagnosis.to_data(), allow_nan=True)
        build(outputs)
    assert spots  # the walk found values to replace


def _handmade_job(tmp_path, syncs_per_step: int, sync_call: str, inside: str | None) -> Path:
    """A trace the generator never wrote: 4 steps of 40 kernels of 500 µs, launched ahead by the host; at
    ``syncs_per_step`` points a blocking ``sync_call`` (in operator ``inside``, or called directly) waits for
    the GPU, then the host works 400 µs before launching again."""
    events, t, corr = [], 0.0, 0
    for step in range(4):
        step_start, host, gpu = t, t + 5.0, max(t + 20.0, 0.0)
        for i in range(40):
            corr += 1
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": host, "dur": 5.0, "args": {"correlation": corr}})
            start = max(gpu, host + 8.0)
            events.append({"ph": "X", "cat": "kernel", "name": "ampere_bf16_s16816gemm_bf16_128x128_nn", "pid": 0,
                           "tid": 7, "ts": start, "dur": 500.0, "args": {"device": 0, "stream": 7, "correlation": corr}})
            gpu, host = start + 500.0, host + 12.0
            if syncs_per_step and i % (40 // syncs_per_step) == 40 // syncs_per_step - 1:
                end = max(gpu, host) + 3.0
                if inside:
                    events.append({"ph": "X", "cat": "cpu_op", "name": inside, "pid": 1, "tid": 1, "ts": host,
                                   "dur": end + 2.0 - host, "args": {}})
                corr += 1
                events.append({"ph": "X", "cat": "cuda_runtime", "name": sync_call, "pid": 1, "tid": 1,
                               "ts": host + 1.0, "dur": end - host - 1.0, "args": {"correlation": corr}})
                host = end + 400.0
        t = max(gpu, host) + 50.0
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": step_start, "dur": t - step_start, "args": {}})
    return _a100_job(tmp_path, events)


@pytest.mark.parametrize("call, inside", [("cudaDeviceSynchronize", None), ("cudaStreamSynchronize", "aten::nonzero"),
                                          ("cudaEventSynchronize", "aten::equal")])
def test_host_syncs_the_generator_never_wrote(tmp_path, call, inside):

    folder = _handmade_job(tmp_path, 8, call, inside)
    doc, _ = analyze_job(find_traces(folder))
    made = RuleOutputs(folder=Path("."))
    made.rules, made.timeline, made.traces = {}, None, doc
    diagnosis = diagnose(made)
    first = diagnosis.findings[0]
    assert first.cause == "host-sync", [(f.cause, f.share) for f in diagnosis.findings]
    # 8 syncs a step, each followed by 400 µs of host work with the GPU drained (+ the relaunch); each step's
    # largest gap is its one normal sync: 7 counted a step, 6 in the last (its last sync has no GPU work after it)
    assert 6.75 * 0.40 <= first.metrics["per_step_ms"] <= 6.75 * 0.45
    who = inside or "(no operator: a direct CUDA call)"
    assert any(f"{who}: 8 per step" in e for e in first.evidence), first.evidence


def test_the_same_job_without_syncs_is_healthy(tmp_path):
    folder = _handmade_job(tmp_path, 0, "", None)
    doc, _ = analyze_job(find_traces(folder))
    made = RuleOutputs(folder=Path("."))
    made.rules, made.timeline, made.traces = {}, None, doc
    diagnosis = diagnose(made)
    assert diagnosis.findings == [] and diagnosis.status == "insufficient-data"  # no sync finding; no all-clear


def test_unfused_memory_bound_kernels_get_fusion_advice_chosen_by_the_evidence(tmp_path):
    """The planted unfused model (casts, scaling, masking, dropout as separate kernels in every layer, AdamW per
    tensor): torch.compile for the chains, the optimizer named from its Optimizer.step#AdamW.step with fused=True,
    autocast for the casts; the impact an estimate no larger than the memory-bound time, close to what the same model
    without those kernels saves."""
    diagnosis, doc = _diagnosis(tmp_path, "memory-bound-kernels")
    healthy = json.loads(_analysed(None))
    finding = diagnosis.findings[0]
    assert [f.cause for f in diagnosis.findings] == ["memory-bound-kernels"]
    assert "torch.compile(model)" in finding.fix and "torch.optim.AdamW(params, ..., fused=True)" in finding.fix
    assert "1440 per-tensor launches" in finding.fix and "torch.autocast" in finding.fix
    assert "channels_last" not in finding.fix  # no layout transposes in a transformer's trace
    assert "estimate" in finding.fix and finding.metrics["estimate"] is True
    assert any("Optimizer.step#AdamW.step launches 1440 kernels per step" in e for e in finding.evidence)
    assert any("launched by aten::add" in e for e in finding.evidence)
    account = doc["ranks"]["0"]["account"]
    mix = account["gpu"]["kernel_mix"]
    steps = account["steps"]
    assert finding.metrics["per_step_ms"] == pytest.approx(mix["fusable_ms"] / steps)
    assert finding.metrics["per_step_ms"] <= mix["unfused_memory_bound_ms"] / steps
    fused = healthy["ranks"]["0"]["account"]
    added = account["step_ms"] / steps - fused["step_ms"] / fused["steps"]
    assert 0.75 * added <= finding.metrics["per_step_ms"] <= added
    assert finding.metrics["unfused_share_of_compute"]["0"] > 0.5


@pytest.mark.parametrize("name", ["host.xplane.pb", "host.xplane.pb.gz", "HOST.XPLANE.PB.GZ"])
def test_no_fusion_advice_for_xla_traces(name, tmp_path):
    """The same kernel mix read from a JAX / TensorFlow trace, gzip'd or not: XLA fuses already, so no finding
    (the name test once missed ``.xplane.pb.gz``); the PyTorch trace's own name keeps it."""
    def causes(file_name):
        doc = json.loads(_analysed("memory-bound-kernels"))
        for rank in doc["ranks"].values():
            rank["files"] = [file_name]
        made = RuleOutputs(folder=Path("."))
        made.rules, made.timeline, made.traces = {}, None, doc
        return [f.cause for f in diagnose(made).findings]
    assert "memory-bound-kernels" not in causes(name)
    assert "memory-bound-kernels" in causes("rank-0.pt.trace.json.gz")


def _launches_job(tmp_path, steps: list[list[tuple]]) -> Path:
    """A trace in the shape of HTA's small test traces: each step a list of host operators ``(name, start, dur,
    launch_call_us, kernel_us)`` relative to the step's start (no launch where ``launch_call_us`` is 0), an operator
    nested in the one before when it starts inside it; each launch call 5 µs into its operator, its kernel 5 µs after
    the call ends."""
    events, t, corr = [], 0.0, 0
    for number, ops in enumerate(steps):
        length = max(start + dur for _, start, dur, _, _ in ops) + 20.0
        for name, start, dur, call, kernel in ops:
            events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": t + start, "dur": dur,
                           "args": {}})
            if call:
                corr += 1
                at = t + start + 5.0
                events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                               "ts": at, "dur": call, "args": {"correlation": corr}})
                events.append({"ph": "X", "cat": "kernel", "name": f"void elementwise_kernel_{name}", "pid": 0,
                               "tid": 7, "ts": at + call + 5.0, "dur": kernel,
                               "args": {"device": 0, "stream": 7, "correlation": corr}})
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number}", "pid": 1, "tid": 1,
                       "ts": t, "dur": length, "args": {}})
        t += length + 10.0
    return _a100_job(tmp_path, events)


def _a100_job(tmp_path: Path, events: list[dict]) -> Path:
    """A one-rank job folder whose trace holds ``events`` on an A100 (compute capability 8.0)."""
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "rank-0.pt.trace.json").write_text(json.dumps({
        "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "computeMajor": 8, "computeMinor": 0}],
        "traceEvents": events}))
    return folder


def _diagnosed(folder: Path):
    doc, _ = analyze_job(find_traces(folder))
    made = RuleOutputs(folder=Path("."))
    made.rules, made.timeline, made.traces = {}, None, doc
    return diagnose(made), doc


def _adds(first: float, n: int, gap: float) -> list[tuple]:
    """``n`` small operators from ``first`` on, each launching a 4 µs kernel with a 10 µs call, ``gap`` apart."""
    return [("aten::add", first + i * gap, 40.0, 10.0, 4.0) for i in range(n)]


@pytest.mark.parametrize("allocation", [True, False])
def test_a_claimed_dispatch_slice_priced_in_part_leaves_the_rest_open(tmp_path, allocation):
    """cuda_event_sync's shape (issue 46): one step whose largest cost is a 2.2 ms ``aten::empty`` under
    ``aten::ones`` with no runtime call, before a few short launches. kernel-launch-bound prices the launch gaps
    only; the rest of the account's ``dispatch`` stays open as step-waste, naming the operators, never swallowed."""
    ops = [("aten::ones", 0.0, 2400.0, 0.0, 0.0), ("aten::empty", 5.0, 2200.0, 0.0, 0.0)] if allocation else []
    ops += _adds(2450.0 if allocation else 0.0, 5, 60.0)
    diagnosis, doc = _diagnosed(_launches_job(tmp_path, [ops]))
    found = {f.cause: f for f in diagnosis.findings}
    launch = found["kernel-launch-bound"]
    account = doc["ranks"]["0"]["account"]
    dispatch = account["slices_ms"]["dispatch"] / account["step_ms"]
    if allocation:
        waste = found["step-waste"]
        # the account is complete by construction: what the launch finding prices plus what it leaves open
        assert waste.metrics["slices"]["dispatch"] == pytest.approx(dispatch - launch.metrics["share_of_step_time"])
        assert waste.metrics["slices"]["dispatch"] > 0.7
        assert waste.metrics["priced_by_claims"]["dispatch"] == launch.metrics["share_of_step_time"]
        assert "aten::ones 2.40 ms, aten::empty 2.20 ms" in waste.evidence[0], waste.evidence
        assert "do it once before the loop" in waste.fix
    else:  # the launch gaps (with the Python between launches) price the whole slice: nothing left open
        assert launch.metrics["share_of_step_time"] >= dispatch
        assert "step-waste" not in found, [(f.cause, f.share) for f in diagnosis.findings]


@pytest.mark.parametrize("first_launch_us", [6000.0, 10.0])
def test_a_one_off_launch_is_warm_up_not_every_steps_launch_overhead(tmp_path, first_launch_us):
    """mi250's shape (issue 46): the first profiled step's first launch of a kernel takes 6 ms (its code loaded),
    600x the median call, most of the launch gaps; it is left out of the launch overhead and said to be warm-up."""
    first = [("aten::add_", 180.0, first_launch_us + 30.0, first_launch_us, 4.0)]  # after the forward's 3 kernels
    steps = [_adds(0.0, 3, 60.0) + first + _adds(first_launch_us + 240.0, 4, 60.0), _adds(0.0, 8, 60.0)]
    diagnosis, doc = _diagnosed(_launches_job(tmp_path, steps))
    ga = doc["ranks"]["0"]["gpu_analysis"]
    launch_stats, gaps, gpu = ga["launch"], ga["idle_gaps_ms"], doc["ranks"]["0"]["gpu"]
    found = {f.cause: f for f in diagnosis.findings}
    assert "kernel-launch-bound" in found, [(f.cause, f.share) for f in diagnosis.findings]
    finding = found["kernel-launch-bound"]
    total = sum(s["dur_ms"] for s in doc["ranks"]["0"]["steps"])
    launch_idle = gaps["host_wait"] + gaps["kernel_wait"]
    if first_launch_us > 1000:
        assert launch_stats["one_over_cutoff_us"] == first_launch_us
        warm = first_launch_us / 1000.0
        assert finding.metrics["warmup_share"] == pytest.approx(warm / total)
        rest = (launch_idle - warm) * min(total / gpu["window_ms"], 1.0)
        assert finding.metrics["per_step_ms"] == pytest.approx(rest / 2)
        assert finding.evidence[0].startswith("one launch call took 6.00 ms, 600x the median call"), finding.evidence
        assert finding.fix.startswith("First profile later steps (torch.profiler.schedule(wait=1, warmup=1")
        assert "step-waste" not in found  # the one-off is neither launch overhead nor every step's waste
    else:
        assert "one_over_cutoff_us" not in launch_stats and "warmup_share" not in finding.metrics
        assert finding.fix.startswith("Launch fewer, larger kernels")
