"""A TPU profile names each op of its ``XLA Ops`` line by its HLO text (``%name = shape opcode(operands), …``):
the reader and the analysis judge an op by its opcode, never by its operands' names. Shapes and names as a TPU
v6e inference profile writes them (xprof's test data), numbers of our own. And a bare ``broadcast`` in a kernel's
name is no collective: Eigen's ``TensorBroadcastingOp`` (TensorFlow on GPU), XLA's broadcast fusions."""

from __future__ import annotations

import pytest

from reportgen.readers.hlo_names import hlo_op
from reportgen.readers.trace_model import KERNEL, MEMCPY
from reportgen.readers.xspace_trace import read_xspace
from reportgen.trace_analysis import analyze_job, find_traces
from reportgen.trace_analysis.classify import is_communication_kernel
from tests.support.xspace_writer import int_field, len_field, plane, space

MS = 10**9  # ps
START_NS = 1_741_722_099_000_000_000
SHAPE = "f32[5,1024,1024,256]{3,2,1,0:T(8,128)}"
HOST_SHAPE = "f32[5,1024,1024,256]{3,2,1,0:T(8,128)S(5)}"
OPS = {
    1: f"%copy-start.1 = ({HOST_SHAPE}, {SHAPE}, u32[]{{:S(2)}}) copy-start({HOST_SHAPE} %broadcast.2)",
    2: f"%broadcast_add_fusion.1 = {SHAPE} fusion({SHAPE} %copy-done.1), kind=kLoop, calls=%fused_computation",
    3: f"%copy-done.1 = {SHAPE} copy-done(({HOST_SHAPE}, {SHAPE}, u32[]{{:S(2)}}) %copy-start.1)",
    4: f"%all-reduce = {SHAPE} all-reduce({SHAPE} %bitcast), channel_id=1, replica_groups={{{{0,1,2,3}}}}",
    5: f"%all-gather-fusion.3 = {SHAPE} fusion({SHAPE} %all-reduce), kind=kOutput, calls=%fused_computation.2",
}


def _tpu_space() -> bytes:
    step = len_field(4, int_field(1, 1) + int_field(4, 1))  # step_num = 1
    host = plane("/host:CPU", [("main/1", 0, [(1, 0, 20 * MS, step)])], {1: "train"}, {1: "step_num"})
    ops = [(1, 1 * MS, MS // 100, b""), (2, 2 * MS, 2 * MS, b""), (3, 5 * MS, 6 * MS, b""),
           (4, 12 * MS, 3 * MS, b""), (5, 16 * MS, MS, b"")]
    modules = [(9, 1 * MS, 16 * MS, b"")]
    tpu = plane("/device:TPU:0", [("XLA Modules", 0, modules), ("XLA Ops", 0, ops)], {**OPS, 9: "jit_f(1)"})
    env = plane("Task Environment", [], {}, {1: "profile_start_time"},
                plane_stats=len_field(6, int_field(1, 1) + int_field(3, START_NS)))
    return space(env, host, tpu)


def test_hlo_text_gives_the_instruction_and_its_opcode_not_an_operand():
    assert [hlo_op(OPS[i]) for i in sorted(OPS)] == [
        ("copy-start.1", "copy-start"), ("broadcast_add_fusion.1", "fusion"), ("copy-done.1", "copy-done"),
        ("all-reduce", "all-reduce"), ("all-gather-fusion.3", "fusion")]
    assert hlo_op("void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<…>, int>(…)") is None
    assert hlo_op("%tuple.1 = () tuple()") == ("tuple.1", "tuple")


@pytest.mark.parametrize("name, communicates", [
    (OPS[1], False), (OPS[2], False), (OPS[3], False), (OPS[4], True), (OPS[5], True),
    ("%all-reduce-start.2 = f32[8]{0} all-reduce-start(f32[8]{0} %p)", True),
    ("%fusion.7 = f32[8]{0} fusion(f32[8]{0} %all-gather-done), kind=kLoop", False),
    ("void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<Eigen::TensorMap<"
     "Eigen::Tensor<Eigen::half, 2, 1, int>, 16>, Eigen::TensorBroadcastingOp<Eigen::array<int, 2ul> const>>>", False),
    ("loop_broadcast_fusion", False), ("broadcast_multiply_fusion_2", False),
    ("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", True),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", True), ("all-gather-start.1", True),
    ("collective-broadcast.3", True), ("ampere_sgemm_128x64_nn", False),
])
def test_a_collective_is_named_so_a_broadcast_is_not(name, communicates):
    assert is_communication_kernel(name) is communicates


def test_xla_copies_are_copies_and_the_mix_splits_compute_collectives_and_copies(tmp_path):
    path = tmp_path / "tpu_host.xplane.pb"
    path.write_bytes(_tpu_space())
    trace = read_xspace(path)
    by_name = {trace.names[n]: int(c) for n, c in zip(trace.name, trace.cat) if trace.names[n] in OPS.values()}
    assert by_name == {OPS[1]: MEMCPY, OPS[2]: KERNEL, OPS[3]: MEMCPY, OPS[4]: KERNEL, OPS[5]: KERNEL}
    doc, problems = analyze_job(find_traces(tmp_path))
    rank = doc["ranks"]["tpu_host"]
    assert problems.total == 0 and rank["devices"] == ["/device:TPU:0"]
    mix = rank["gpu_mix_ms"]
    assert mix["memcpy"] == pytest.approx(6.01)  # copy-done's wait for the copy, and copy-start
    assert mix["kernels (communication)"] == pytest.approx(4.0)  # the all-reduce and the all-gather fusion
    assert mix["kernels (compute)"] == pytest.approx(2.0)  # the broadcast fusion only
    assert rank["kernels"]["count"] == 3 and rank["kernels"]["total_ms"] == pytest.approx(6.0)  # XLA Modules not read


def test_tensorflow_broadcasting_kernels_on_a_gpu_are_compute(tmp_path):
    eigen = ("void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<Eigen::TensorMap<"
             "Eigen::Tensor<Eigen::half, 2, 1, int>, 16>, Eigen::TensorBroadcastingOp<Eigen::array<int, 2ul> const>>>")
    step = len_field(4, int_field(1, 1) + int_field(4, 0))
    host = plane("/host:CPU", [("python3", 0, [(1, 0, 10 * MS, step)])], {1: "train"}, {1: "step_num"})
    gpu = plane("/device:GPU:4", [("Stream #134(Compute)", 0, [(1, 1 * MS, 3 * MS, b""), (2, 5 * MS, MS, b"")])],
                {1: eigen, 2: "ncclKernel_AllReduce_RING_LL_Sum_half(ncclWorkElem)"})
    (tmp_path / "worker.xplane.pb").write_bytes(space(host, gpu))
    doc, _ = analyze_job(find_traces(tmp_path))
    mix = doc["ranks"]["worker"]["gpu_mix_ms"]
    assert mix["kernels (compute)"] == pytest.approx(3.0) and mix["kernels (communication)"] == pytest.approx(1.0)


def test_rocm_copies_are_copies(tmp_path):
    """JAX on an MI300 writes its device-to-device copies as ``CopyDeviceToDevice`` on ``Stream #N(MemcpyOther)``
    lines (TraceLens's test data); they were counted as compute kernels."""
    gpu = plane("/device:GPU:0", [("Stream #8(MemcpyOther)", 0, [(1, 1 * MS, MS // 4, b""), (1, 3 * MS, MS // 4, b"")]),
                                  ("Stream #1(Kernel)", 0, [(2, 2 * MS, 3 * MS, b"")])],
                {1: "CopyDeviceToDevice", 2: "input_transpose_fusion"})
    path = tmp_path / "mi300.xplane.pb"
    path.write_bytes(space(gpu))
    trace = read_xspace(path)
    assert [(trace.names[n], int(c)) for n, c in zip(trace.name, trace.cat)] == [
        ("CopyDeviceToDevice", MEMCPY), ("input_transpose_fusion", KERNEL), ("CopyDeviceToDevice", MEMCPY)]
    mix = analyze_job(find_traces(tmp_path))[0]["ranks"]["mi300"]["gpu_mix_ms"]
    assert mix["memcpy"] == pytest.approx(0.5) and mix["kernels (compute)"] == pytest.approx(3.0)


def test_a_trace_without_a_step_annotation_says_how_to_mark_one(tmp_path):
    """An inference loop or a benchmark (xprof's tpu_inference_2, TraceLens's MI300 runs) marks no step: the
    step-times question was answered "no framework profiler or trace" beside the trace it read."""
    from reportgen.diagnosis import diagnose
    from reportgen.rule_outputs import RuleOutputs

    host = plane("/host:CPU", [("main/1", 0, [(1, 0, 20 * MS, b"")])], {1: "PjitFunction(f)"})
    tpu = plane("/device:TPU:0", [("XLA Ops", 0, [(2, 2 * MS, 2 * MS, b"")])], {2: OPS[2]})
    (tmp_path / "loop.xplane.pb").write_bytes(space(host, tpu))
    made = RuleOutputs(folder=tmp_path)
    made.traces = analyze_job(find_traces(tmp_path))[0]
    diagnosis = diagnose(made)
    answer = {a.question: a for a in diagnosis.answers}["step-times"]
    assert diagnosis.status == "insufficient-data" and answer.judged is False
    assert answer.how.startswith("the traces mark no training step (") and "StepTraceAnnotation" in answer.how
