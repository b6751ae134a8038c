"""TensorBoard's overview (the PyTorch Profiler TensorBoard plugin, torch-tb-profiler 0.4.3, run once in a
throwaway venv on the fixture it shipped as a sample: ``RunProfileData.parse`` + ``RunGenerator``) against
reportgen's exclusive step breakdown and tensor-core share, on kineto-resnet50-num-workers-4's first file.

Definitions that differ, on purpose (docs/beyond-sagemaker.md):

* TensorBoard stretches each step to the end of the GPU work it launched (its steps are the union of the
  ``ProfilerStep#N`` CPU range and its kernels' GPU range); reportgen's steps are the ``ProfilerStep#N`` ranges
  the whole report uses, so a kernel still running after its step's CPU range counts in the next step (or
  outside the last). Per step the kernel and runtime times therefore differ, and TensorBoard's mean step is
  1.4 ms (1.0 %) longer; memcpy, memset, DataLoader, CPU exec and other agree on average;
* TensorBoard's "Communication" is CPU-side collective time only (NCCL kernels count as "Kernel");
  reportgen's is NCCL kernel time with no compute beside it plus CPU-side collectives (none on this trace);
* tensor cores: TensorBoard takes the kernel time launched by tensor-core-eligible *operators* (aten::conv,
  aten::mm, ...: 67.8 %), reportgen the time of fp32 GEMM/convolution *kernels* by name (66.6 %): the
  batch-norm and elementwise kernels of a convolution op count for TensorBoard, not here.
"""

from __future__ import annotations

import pytest

from reportgen.trace_analysis.job import analyze_traces
from tests.support.paths import RAW, need

# TensorBoard's per-step table (µs): step -> Kernel, Memcpy, Memset, Runtime, DataLoader, CPU Exec, Other
TB_STEPS = {5: (99778, 3606, 98, 41028, 4341, 27460, 5995), 6: (99208, 2948, 98, 3406, 0, 16404, 4119),
            7: (99114, 2949, 98, 3417, 6, 19521, 2076), 8: (99021, 2975, 97, 3544, 0, 15464, 1978),
            9: (98791, 3596, 97, 8275, 1370, 43905, 7427), 10: (98956, 2885, 98, 3714, 1400, 13235, 3910)}
TB_AVERAGE_STEP_US = 141068
TB_TC_ELIGIBLE = 0.6780798429231358  # "Kernels with 68% time are launched by Tensor Cores eligible operators"
OURS = ("kernel", "memcpy", "memset", "runtime", "dataloader", "cpu_exec", "other")

pytestmark = pytest.mark.fixtures


@pytest.fixture(scope="module")
def rank():
    path = need(RAW / "kineto-resnet50-num-workers-4") / "worker0.1623212756351.pt.trace.json.gz"
    doc, _ = analyze_traces([path])
    return next(iter(doc["ranks"].values()))


def _mean_us(values) -> float:
    return sum(values) / len(values)


def test_same_steps_and_the_categories_that_agree(rank):
    steps = rank["gpu_analysis"]["step_breakdown"]["steps"]
    assert [s["step"] for s in steps] == list(TB_STEPS)
    for i, key in enumerate(OURS):
        ours = _mean_us([s[key] * 1000 for s in steps])
        tb = _mean_us([row[i] for row in TB_STEPS.values()])
        if key in ("memcpy", "dataloader", "cpu_exec", "other"):
            assert ours == pytest.approx(tb, rel=1e-3), key
        elif key == "memset":  # TensorBoard rounds each step to whole µs: 97-98 µs a step
            assert ours == pytest.approx(tb, abs=1.0)
        else:  # kernel, runtime: TensorBoard's steps reach to the end of their GPU work (module docstring)
            assert ours <= tb and ours == pytest.approx(tb, rel=0.02), key


def test_tensorboard_steps_are_longer_by_the_gpu_work_past_their_cpu_range(rank):
    steps = rank["gpu_analysis"]["step_breakdown"]["steps"]
    ours = _mean_us([sum(s[k] for k in OURS) * 1000 for s in steps])
    assert ours == pytest.approx(rank["step_stats_ms"]["mean"] * 1000, rel=1e-9)  # exclusive: the step once
    assert TB_AVERAGE_STEP_US - ours == pytest.approx(1376, abs=2)  # 1.0 %


def test_tensor_core_eligible_share_next_to_tensorboards(rank):
    tc = rank["gpu_analysis"]["tensor_cores"]
    assert tc["eligible_share"] == pytest.approx(0.666, abs=0.001)
    assert abs(tc["eligible_share"] - TB_TC_ELIGIBLE) < 0.02
