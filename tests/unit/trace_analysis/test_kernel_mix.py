"""The kernel mix of the step-time account's compute slice (reportgen.trace_analysis.kernel_mix): kernel classes by
name and by launching operator, exclusive time that adds up to the slice, the optimizer's kernels, and the fusion
estimate, on hand-made traces whose every microsecond is known and on the project's planted synthetic sets."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

import pytest

from reportgen.report.model import Table
from reportgen.report.sections.gpu_kernels_operators import gpu_analysis_blocks
from reportgen.trace_analysis import analyze_job, find_traces
from reportgen.trace_analysis.classify import kernel_class
from reportgen.trace_analysis.job import analyze_traces
from reportgen.trace_ranks import KERNEL_CLASSES, KernelMix, TraceRank
from testdata.kineto_synthetic import KinetoSet, write_set

# kernel names as torch, cuBLAS, cuDNN, CUTLASS, fbgemm, XLA and inductor write them (from the traces we hold)
NAMES = {
    "volta_sgemm_64x64_nt": "gemm",
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NTT": "gemm",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1>(cutlass_80_tensorop_s1688gemm_64x64_32x4_"
    "nn_align1::Params)": "gemm",
    "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16": "convolution",
    "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int)": "convolution",
    "cudnn_infer_volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1": "convolution",
    "void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>(int)": "convolution",
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
    "cutlass::bfloat16_t> >(pytorch_flash::Flash_fwd_params)": "attention",
    "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float>::Params)": "attention",
    "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, float>(int, int*)": "optimizer",
    "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float)": "reduction",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float> > >()":
        "reduction",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float)": "reduction",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int)": "elementwise",
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)>()":
        "elementwise",
    "void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true>(cudnn::nchw2nhwc_params_t)":
        "elementwise",
    "void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float, int>(float const*)": "elementwise",
    # fbgemm's embedding backward applies Adagrad in place: an embedding kernel, not the optimizer's math
    "void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1<float, float>()": "other",
    "void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int, int>::Policy800>(int*)": "other",
    "fusion.12": "fused", "loop_add_fusion": "fused", "input_reduce_fusion_3": "fused",
    "triton_poi_fused_add_relu_0": "fused", "triton_red_fused_native_layer_norm_1": "fused",
    "convert_fp32_to_bf16_kernel": "elementwise",  # "convert" is no convolution
    # ROCm: Tensile's GEMMs, MIOpen's implicit-GEMM convolutions
    "Cijk_Ailk_Bljk_SB_MT128x128x16_MI32x32x2x1_SN_1LDSB0_APM1_ABV0": "gemm",
    "igemm_fwd_gtcx_nchw_fp32_bx0_ex1_bt128x128x16_wt32x32x2_ws1x1_wr2x2_ta1x1x4x1_1x8x1x32": "convolution",
    # XLA on ROCm (JAX on an MI300): its fusions carry the kernel descriptor's ".kd"; a convert fusion is no cast
    "loop_convert_fusion.kd": "fused", "input_transpose_fusion_1.kd": "fused", "gemm_fusion_dot.kd": "gemm",
}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_kernel_class_by_name(name):
    assert kernel_class(name) == NAMES[name]


def test_a_name_that_says_nothing_is_classed_by_its_launching_operator():
    assert kernel_class("void kernel_123<int>(int)", "aten::addmm") == "gemm"
    assert kernel_class("void kernel_123<int>(int)", "aten::native_batch_norm") == "reduction"
    assert kernel_class("void kernel_123<int>(int)", "aten::mul_") == "elementwise"
    assert kernel_class("void kernel_123<int>(int)", "fbgemm::jagged_to_padded") == "other"
    assert kernel_class("void kernel_123<int>(int)") == "other"


def _cpu(name, ts, dur, cat="cpu_op", tid=1, corr=None):
    args = {} if corr is None else {"correlation": corr}
    return {"ph": "X", "cat": cat, "name": name, "pid": 100, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _kernel(name, ts, dur, stream=7, corr=None):
    args = {"device": 0, "stream": stream, **({} if corr is None else {"correlation": corr})}
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur, "args": args}


def _launch(op, ts, corr, tid=1):
    """An operator [ts, ts+10) and the cudaLaunchKernel inside it."""
    return [_cpu(op, ts, 10, tid=tid), _cpu("cudaLaunchKernel", ts + 2, 5, cat="cuda_runtime", tid=tid, corr=corr)]


def _mix(tmp_path, events, rank=None):
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    doc, _ = analyze_traces([path])
    if rank is not None:
        rank.append(doc["ranks"]["0"])
    account = doc["ranks"]["0"]["account"]
    return account, account["gpu"]["kernel_mix"]


ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)"
MUL = "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float> >(int)"
LERP = "void at::native::vectorized_elementwise_kernel<4, at::native::LerpFunctor<float> >(int)"


def _events():
    return [
        _cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        *_launch("aten::addmm", 10, 1), _kernel("volta_sgemm_128x64_nn", 100, 200, corr=1),  # 100-300
        *_launch("aten::add", 20, 2), _kernel(ADD, 250, 100, stream=8, corr=2),  # 250-350: 50 µs its own
        *_launch("aten::native_layer_norm", 30, 3), _kernel("void my_kernel<float>(int)", 400, 40, corr=3),
        *_launch("aten::mul", 40, 4), _kernel(MUL, 440, 60, corr=4),  # a chain: layer norm then mul (440-500)
        _cpu("Optimizer.step#SGD.step", 600, 100, cat="user_annotation"),
        *_launch("aten::lerp_", 610, 5), _kernel(LERP, 700, 30, corr=5),
        *_launch("aten::mul_", 630, 6), _kernel(MUL, 730, 20, corr=6),
        *_launch("aten::lerp_", 650, 7), _kernel(LERP, 750, 30, corr=7),
        *_launch("aten::mul_", 670, 8), _kernel(MUL, 780, 20, corr=8),
    ]


def test_the_page_shows_the_mix_and_the_memory_bound_kernels(tmp_path):
    ranks: list = []
    _mix(tmp_path, _events(), ranks)
    blocks = gpu_analysis_blocks("0", TraceRank.of("0", ranks[0]))
    mix = next(b for b in blocks if isinstance(b, Table) and b.id == "kineto-kernel-mix-0")
    assert [row[0] for row in mix.rows] == ["GEMM (matrix multiply)", "Optimizer (kernels under Optimizer.step)",
                                            "Reductions and norms", "Elementwise (casts, copies included)",
                                            "Compute (all classes)"]
    assert [row[1] for row in mix.rows] == pytest.approx([0.2, 0.1, 0.04, 0.11, 0.45])
    assert sum(row[3] for row in mix.rows[:-1]) == pytest.approx(100.0)
    assert "about 0.08 ms per step" in mix.caption
    top = next(b for b in blocks if isinstance(b, Table) and b.id == "kineto-memory-bound-kernels-0")
    assert top.rows[0][1:] == ["elementwise", pytest.approx(100 * 0.1 / 0.45), 1.0, "aten::add"]
    # an older kineto.json (no kernel_mix) or an odd one: no table, no error
    old = {**ranks[0], "account": {**ranks[0]["account"], "gpu": {**ranks[0]["account"]["gpu"], "kernel_mix": 3}}}
    assert not [b for b in gpu_analysis_blocks("0", TraceRank.of("0", old)) if isinstance(b, Table)
                and b.id.startswith("kineto-kernel-mix")]


def test_classes_are_exclusive_and_add_up_to_the_compute_slice(tmp_path):
    """A GEMM on one stream overlapping an elementwise kernel on another: the overlap is the GEMM's (the first
    class), the classes add up to the union, the compute slice; a nameless kernel is classed by its operator; kernels
    launched under Optimizer.step are the optimizer's, and per tensor they are one pass per tensor."""
    account, mix = _mix(tmp_path, _events())
    assert account["perspective"] == "device"
    assert mix["classes_ms"] == pytest.approx({"gemm": 0.2, "convolution": 0.0, "attention": 0.0, "optimizer": 0.1,
                                               "fused": 0.0, "reduction": 0.04, "elementwise": 0.11, "other": 0.0})
    assert list(mix["classes_ms"]) == list(KERNEL_CLASSES)
    assert sum(mix["classes_ms"].values()) == pytest.approx(account["slices_ms"]["compute"]) == pytest.approx(0.45)
    assert mix["memory_bound_ms"] == pytest.approx(0.25) == mix["unfused_memory_bound_ms"]
    assert mix["optimizer"].pop("names") == ["SGD"]
    assert mix["optimizer"] == pytest.approx({"kernels_per_step": 4.0, "per_tensor_kernels_per_step": 4.0, "ms": 0.1,
                                              "multi_tensor_ms": 0.0})
    # the add (alone between the GEMM and the next chain) keeps its pass; layer norm + mul keep the mul's 60 µs;
    # the optimizer's chain keeps one pass per tensor, its costliest name's total (lerp_: 60 of 100 µs)
    assert mix["fusable_ms"] == pytest.approx(0.04 + 0.04)
    top = {t["name"]: t for t in mix["top_memory_bound"]}
    assert top[ADD]["operators"] == ["aten::add"] and top[ADD]["calls_per_step"] == 1.0
    assert top[ADD]["share_of_compute"] == pytest.approx(0.1 / 0.45)
    assert top["void my_kernel<float>(int)"]["class"] == "reduction"
    assert top[MUL]["operators"] == ["aten::mul_", "aten::mul"] and top[MUL]["ms"] == pytest.approx(0.1)


def test_a_view_of_an_odd_mix_never_fails():
    assert KernelMix.of(None) is None and KernelMix.of([1]) is None
    odd = KernelMix.of({"classes_ms": {"gemm": "x", "elementwise": -3, "other": 2.0}, "top_memory_bound": [1, {}],
                        "optimizer": "no", "fusable_ms": float("nan")})
    assert odd is not None and odd.compute_ms == 2.0 and odd.optimizer_names == () and len(odd.top) == 2


@functools.lru_cache(maxsize=None)
def _planted(cause: str | None) -> str:
    with tempfile.TemporaryDirectory() as folder:
        write_set(KinetoSet(ranks=1, mb=2.5, seed=3, cycles=1, straggler=None, cause=cause), Path(folder))
        doc, _ = analyze_job(find_traces(Path(folder)))
    return json.dumps(doc["ranks"]["0"]["account"])


@pytest.mark.parametrize("cause", [None, "memory-bound-kernels", "kernel-launch-bound", "no-mixed-precision",
                                   "communication-bound"])
def test_the_mix_adds_up_on_the_planted_sets(cause):
    account = json.loads(_planted(cause))
    mix = account["gpu"]["kernel_mix"]
    assert sum(mix["classes_ms"].values()) == pytest.approx(account["slices_ms"]["compute"], rel=1e-9)
    assert all(v >= 0 for v in mix["classes_ms"].values())
    assert 0 <= mix["fusable_ms"] <= mix["unfused_memory_bound_ms"] <= mix["memory_bound_ms"]


def test_the_planted_unfused_model_is_memory_bound_and_its_estimate_is_what_removing_the_chains_saves():
    healthy, planted = json.loads(_planted(None)), json.loads(_planted("memory-bound-kernels"))
    mix, fused = planted["gpu"]["kernel_mix"], healthy["gpu"]["kernel_mix"]
    compute = planted["slices_ms"]["compute"]
    assert mix["unfused_memory_bound_ms"] / compute > 0.5 > 0.1 > fused["unfused_memory_bound_ms"] / \
        healthy["slices_ms"]["compute"]
    # AdamW per tensor: 24 layers x 12 parameters x 5 kernels a step; the healthy job's fused AdamW: 3 kernels
    assert mix["optimizer"]["per_tensor_kernels_per_step"] == 24 * 12 * 5 and mix["optimizer"]["names"] == ["AdamW"]
    assert fused["optimizer"]["kernels_per_step"] == 3 and fused["optimizer"]["multi_tensor_ms"] == \
        pytest.approx(fused["optimizer"]["ms"])
    # the estimate against the step time the unfused kernels add (the same model without them, AdamW fused): fusion
    # keeps one pass of each chain, so it saves less than that, and most of it
    per_step = mix["fusable_ms"] / planted["steps"]
    added = planted["step_ms"] / planted["steps"] - healthy["step_ms"] / healthy["steps"]
    assert 0.75 * added < per_step < added
    assert mix["casts_ms"] > 0 and mix["layout_ms"] == 0 and mix["convolution_kernels_ms"] == 0
