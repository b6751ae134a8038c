"""The kernel mix on every real GPU trace we hold and on our GPU recordings: it adds up to the step-time account's
compute slice, rank by rank, and the fusion finding (memory-bound-kernels) fires on none of them: each is either
GEMM/convolution-dominated (ResNet-50 in fp32: 32-35 % of the compute memory-bound and unfused, a DLRM 40 %, a transformer in bf16: 23 %) or
its GPU waits most of the step (the memory-bound CNN of gpu-input computes 11 % / 50 % of its steps). The JAX and
TensorFlow recordings have no device account: no mix, no finding."""

from __future__ import annotations

import pytest

from reportgen.diagnosis import diagnose
from reportgen.rule_outputs import RuleOutputs
from reportgen.trace_analysis.outputs import analyze_job
from tests.support.paths import RAW, RECORDINGS, need

TRACE = (".pt.trace.json", ".xplane.pb", "control.json", "sampled_rank-")
GPU_RAW = ["hta-resnet-v100-1gpu", "hta-trace-diff-rank3of8", "hta-sampled-128rank", "kineto-resnet50-num-workers-0",
           "kineto-resnet50-num-workers-4"]
GPU_RECORDED = ["gpu-host-sync/h100-host-sync", "gpu-input/w0", "gpu-input/w4"]
# rank -> (memory-bound share of the compute that fusion would merge, compute share of the step), measured
SHARES = {"hta-resnet-v100-1gpu": {"0": (0.350, 0.965)}, "kineto-resnet50-num-workers-0": {"worker0": (0.320, 0.588)},
          "kineto-resnet50-num-workers-4": {"worker0": (0.321, 0.697)}, "hta-trace-diff-rank3of8": {"3": (0.400, 0.605)},
          "hta-sampled-128rank": {"0": (0.198, 0.171), "1": (0.154, 0.220)},
          "gpu-host-sync/h100-host-sync": {"gpu_host-sync": (0.231, 0.630)}, "gpu-input/w0": {"vm_442": (0.600, 0.110)},
          "gpu-input/w4": {"vm_442": (0.600, 0.499)}}


def _doc(folder):
    files = sorted(p for p in folder.rglob("*") if p.is_file() and any(t in p.name for t in TRACE))
    assert files, folder
    doc, _ = analyze_job(files)
    return doc


def _check(name, doc):
    mixes = 0
    for label, rank in doc["ranks"].items():
        account = rank.get("account")
        if not account or account["perspective"] != "device":
            continue
        mix = account["gpu"]["kernel_mix"]
        compute = account["slices_ms"]["compute"]
        assert sum(mix["classes_ms"].values()) == pytest.approx(compute, rel=1e-9), label
        assert 0 <= mix["fusable_ms"] <= mix["unfused_memory_bound_ms"] <= mix["memory_bound_ms"] <= compute
        if label in SHARES.get(name, {}):
            unfused, busy = SHARES[name][label]
            assert mix["unfused_memory_bound_ms"] / compute == pytest.approx(unfused, abs=0.005)
            assert compute / account["step_ms"] == pytest.approx(busy, abs=0.005)
        mixes += 1
    assert mixes
    made = RuleOutputs(folder=RAW)
    made.rules, made.timeline, made.traces = {}, None, doc
    assert "memory-bound-kernels" not in [f.cause for f in diagnose(made).findings]


@pytest.mark.parametrize("name", GPU_RAW)
def test_real_gpu_traces_mix_adds_up_and_no_fusion_finding(name):
    _check(name, _doc(need(RAW / name)))


@pytest.mark.parametrize("name", GPU_RECORDED)
def test_our_gpu_recordings_mix_adds_up_and_no_fusion_finding(name):
    _check(name, _doc(RECORDINGS / name))


@pytest.mark.parametrize("name", ["jax-tf/jax-cpu", "jax-tf/tf-cpu"])
def test_jax_and_tensorflow_have_no_kernel_mix_and_no_fusion_finding(name):
    doc = _doc(RECORDINGS / name)
    assert all(not (r.get("account") or {}).get("gpu") for r in doc["ranks"].values())
    made = RuleOutputs(folder=RECORDINGS)
    made.rules, made.timeline, made.traces = {}, None, doc
    assert "memory-bound-kernels" not in [f.cause for f in diagnose(made).findings]
