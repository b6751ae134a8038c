"""Deterministic synthetic PyTorch profiler (Kineto) trace sets: N ranks x S MB, written streaming.

What a trace looks like (modelled on torch 2.x traces: one file per rank and profiling cycle, named
``<host>_<pid>.<ns>.pt.trace.json`` as ``tensorboard_trace_handler`` names them, torch's pretty-printed
layout, ``baseTimeNanoseconds`` with relative timestamps): a data-parallel (DDP over NCCL) training of
a transformer in bf16 on 8-GPU nodes. Each ``ProfilerStep#N`` holds

* the DataLoader's ``enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__``, then the
  batch's ``Memcpy HtoD (Pinned -> Device)``;
* the forward pass (nested ``cpu_op`` chains such as ``aten::linear`` > ``aten::addmm``, each launching
  its kernel through ``cudaLaunchKernel`` with ``args.correlation`` equal to the kernel's, and the
  ``ac2g`` flow events between them) on the compute stream;
* the backward pass on the autograd thread (``autograd::engine::evaluate_function: ...Backward0``),
  gradient buckets all-reduced by ``ncclDevKernel_AllReduce_...`` kernels on a NCCL stream;
* the optimizer (``Optimizer.step#AdamW.step``, fused AdamW kernel in fp32), ``zero_grad`` memsets,
  ``loss.item()``'s ``Memcpy DtoH`` and the ``cudaStreamSynchronize`` that waits for the GPU.

Ranks run in lock-step, as synchronous training does: every step starts at the same time on every
rank (up to a few µs of clock skew) and the first gradient all-reduce ends at the same time on every
rank. The planted **straggler** loads its data more slowly (``straggler_ms`` longer in the DataLoader
each step), so the *other* ranks wait that much longer in the NCCL kernel: its step time is the same
as everyone's, its collective wait is the smallest.

Speed: a step is laid out once per rank as a %-format template; each step only fills in its times
(a monotone transform of the template's: common scale and DataLoader jitter of that step, same on all
ranks) and ids, with one C-level ``%`` per step. About 190 MB/s of JSON per process measured
on the team's 2-core VM (plain files; gzip level 1 costs more), ~50 MB of memory whatever the size
(one step's text at a time).

Determinism: everything derives from ``seed`` (numpy ``default_rng`` seeded by tuples), nothing from
the clock or the process; the same arguments give byte-identical files, whatever ``jobs`` is.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GPUS_PER_NODE = 8
COMPUTE_STREAM = 7
NCCL_STREAM = 20
BASE_TIME_NS = 1_795_000_000_000_000_000  # 2026-11-18, torch 2.x's baseTimeNanoseconds
FIRST_STEP_US = 3_600_000_000.0  # relative timestamps start an hour after the base, as torch's do
DATALOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
DEVICE = "NVIDIA H100 80GB HBM3"

# kernels (names as cuBLAS / flash-attention / PyTorch name them on H100)
GEMM_TN = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
GEMM_NN = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
GEMM_NT = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
LN_FWD = ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>"
          "(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)")
LN_BWD = ("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>"
          "(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)")
LN_BWD_GAMMA = ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>"
                "(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, c10::BFloat16*)")
FLASH_FWD = ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
             "cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, "
             "false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)")
FLASH_BWD = ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_traits<128, 64, "
             "128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<128, 64, 128, 8, "
             "cutlass::bfloat16_t> >, false, true, false, false, true, true, false>(pytorch_flash::Flash_bwd_params)")
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)")
GELU = ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
        "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::"
        "{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl("
        "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
        "const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)")
GELU_BWD = ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
            "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::"
            "{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::"
            "GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() "
            "const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)")
REDUCE = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<float, "
          "at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, "
          "float)#1}>, unsigned int, c10::BFloat16, 4> >(at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<"
          "float, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::"
          "{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4>)")
SOFTMAX = ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
           "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)")
NLL = ("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>"
       "(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)")
ADAMW = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
         "TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, "
         "(at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, double*, double*>("
         "at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::"
         "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, "
         "double, bool, double*, double*)")
NCCL_ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"

# one transformer layer: forward (cpu_op chain, kernel, µs on the GPU, input dims); backward (grad fn, kernels)
_FWD = (
    (("aten::layer_norm", "aten::native_layer_norm"), LN_FWD, 38.0, "[[8, 2048, 4096], [4096], [4096]]"),
    (("aten::linear", "aten::addmm"), GEMM_TN, 430.0, "[[12288], [16384, 4096], [4096, 12288]]"),
    (("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
      "aten::_flash_attention_forward"), FLASH_FWD, 390.0, "[[8, 32, 2048, 128], [8, 32, 2048, 128], [8, 32, 2048, 128]]"),
    (("aten::linear", "aten::addmm"), GEMM_TN, 150.0, "[[4096], [16384, 4096], [4096, 4096]]"),
    (("aten::add",), ADD, 26.0, "[[8, 2048, 4096], [8, 2048, 4096], []]"),
    (("aten::layer_norm", "aten::native_layer_norm"), LN_FWD, 38.0, "[[8, 2048, 4096], [4096], [4096]]"),
    (("aten::linear", "aten::addmm"), GEMM_TN, 560.0, "[[16384], [16384, 4096], [4096, 16384]]"),
    (("aten::gelu",), GELU, 62.0, "[[8, 2048, 16384]]"),
    (("aten::linear", "aten::addmm"), GEMM_NN, 560.0, "[[4096], [16384, 16384], [16384, 4096]]"),
    (("aten::add",), ADD, 26.0, "[[8, 2048, 4096], [8, 2048, 4096], []]"),
)
_MM_BWD = ((("aten::mm",), GEMM_NT, 1.0), (("aten::mm",), GEMM_NN, 1.0), (("aten::sum",), REDUCE, 0.06))
_BWD = (
    ("AddBackward0", ()),
    ("AddmmBackward0", tuple((ops, k, f * 560.0) for ops, k, f in _MM_BWD)),
    ("GeluBackward0", ((("aten::gelu_backward",), GELU_BWD, 92.0),)),
    ("AddmmBackward0", tuple((ops, k, f * 560.0) for ops, k, f in _MM_BWD)),
    ("NativeLayerNormBackward0", ((("aten::native_layer_norm_backward",), LN_BWD, 61.0),
                                  (("aten::native_layer_norm_backward",), LN_BWD_GAMMA, 44.0))),
    ("AddBackward0", ()),
    ("AddmmBackward0", tuple((ops, k, f * 150.0) for ops, k, f in _MM_BWD)),
    ("ScaledDotProductFlashAttentionBackward0", ((("aten::_scaled_dot_product_flash_attention_backward",
                                                   "aten::_flash_attention_backward"), FLASH_BWD, 960.0),)),
    ("AddmmBackward0", tuple((ops, k, f * 430.0) for ops, k, f in _MM_BWD)),
    ("NativeLayerNormBackward0", ((("aten::native_layer_norm_backward",), LN_BWD, 61.0),
                                  (("aten::native_layer_norm_backward",), LN_BWD_GAMMA, 44.0))),
)
# GPU causes a KinetoSet can plant (``cause=``), each the way torch writes it on a CUDA machine:
PLANTED = {
    # 21 extra ``.item()`` per step in the forward (a metric read per layer), each followed by 2 ms of Python
    # before the next launch: the GPU drains at each cudaStreamSynchronize and waits for the host to refill it
    "host-sync": "21 aten::item > cudaStreamSynchronize per step beyond loss.item(), 2 ms of host work after each",
    # a model of tiny elementwise ops (~3 µs kernels, ~15 µs of host work to launch each)
    "kernel-launch-bound": "about 1,500 kernels of 3 µs per step, each launched by ~15 µs of host work",
    # DDP's all-reduces issued only after the whole backward (no bucket overlaps compute), then the optimizer
    "communication-bound": "every gradient all-reduce after backward, none beside compute (0 % overlap)",
    # the same model in fp32 on an A100: sgemm / f32 attention kernels, elementwise kernels on float
    "no-mixed-precision": "fp32 GEMM (sgemm) and attention kernels on an A100 (computeMajor 8)",
    # the batch (77 MB) copied from pageable host memory: cudaMemcpyAsync blocks until the copy is done
    "pageable-memcpy": "a 77 MB Memcpy HtoD (Pageable -> Device) per step at 6.5 GB/s, the host blocked meanwhile",
    # an unfused model in eager mode: each layer's forward adds dtype casts, scaling, masking and a dropout as
    # separate kernels (and their backward), and AdamW runs per tensor (foreach=False): 5 kernels per parameter
    "memory-bound-kernels": "10 unfused elementwise kernels per layer forward and 10 backward, AdamW per tensor",
}
_UNFUSED_OPS = (  # forward: (operators, kernel, µs); two casts, the rest elementwise math and a dropout
    (("aten::to", "aten::_to_copy", "aten::copy_"),
     "void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)"
     "::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::bfloat16_copy_kernel_cuda("
     "at::TensorIteratorBase&)::{lambda(float)#1}, at::detail::Array<char*, 2>)", 260.0),
    (("aten::mul",), "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, "
     "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >("
     "int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::"
     "MulFunctor<float> >, at::detail::Array<char*, 3>)", 300.0),
    (("aten::add",), ADD, 300.0),
    (("aten::masked_fill",), "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
     "at::native::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::"
     "{lambda()#10}::operator()() const::{lambda(c10::BFloat16, bool)#1}> >(int, at::native::gpu_kernel_impl_nocast<"
     "at::native::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::"
     "{lambda()#10}::operator()() const::{lambda(c10::BFloat16, bool)#1}> >)", 300.0),
    (("aten::dropout", "aten::native_dropout"), "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<"
     "c10::BFloat16, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, "
     "at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, "
     "unsigned int, float, at::PhiloxCudaState)", 320.0),
    (("aten::div",), "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, "
     "c10::BFloat16, c10::BFloat16, at::native::binary_internal::DivFunctor<c10::BFloat16> >, at::detail::Array<char*, "
     "3> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::"
     "DivFunctor<c10::BFloat16> >, at::detail::Array<char*, 3>)", 300.0),
    (("aten::add",), ADD, 300.0),
    (("aten::mul",), "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, "
     "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >("
     "int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::"
     "MulFunctor<float> >, at::detail::Array<char*, 3>)", 300.0),
    (("aten::add",), ADD, 300.0),
    (("aten::to", "aten::_to_copy", "aten::copy_"),
     "void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)"
     "::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::bfloat16_copy_kernel_cuda("
     "at::TensorIteratorBase&)::{lambda(float)#1}, at::detail::Array<char*, 2>)", 260.0),
)
UNFUSED_BWD_US = 1.15  # each forward kernel's backward takes this much longer (it reads the saved input too)
# AdamW with foreach=False: per parameter, exp_avg.lerp_, exp_avg_sq.mul_().addcmul_(), the denominator, the update
_ADAMW_PER_TENSOR = tuple(
    (("aten::" + op,), f"void at::native::vectorized_elementwise_kernel<4, at::native::{functor}<float>, "
     f"at::detail::Array<char*, 3> >(int, at::native::{functor}<float>, at::detail::Array<char*, 3>)", us)
    for op, functor, us in (("lerp_", "LerpFunctor", 16.0), ("mul_", "MulFunctor", 12.0),
                            ("addcmul_", "AddcmulFunctor", 18.0), ("sqrt", "SqrtFunctor", 12.0),
                            ("addcdiv_", "AddcdivFunctor", 20.0)))
HOST_AFTER_SYNC_US = 2000.0
ITEMS_PER_STEP = 21
TINY_KERNEL = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
               "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)")
TINY_PER_LAYER = (30, 32)  # forward, backward kernels per layer (24 layers: 1,488 a step)
FP32_NAMES = {
    GEMM_TN: "ampere_sgemm_128x64_tn", GEMM_NN: "ampere_sgemm_128x128_nn", GEMM_NT: "ampere_sgemm_64x64_nt",
    FLASH_FWD: "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
               "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
    FLASH_BWD: "fmha_cutlassB_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<"
               "cutlass::arch::Sm80, float, true, false, false, 64, 64, 64, false>::Params)",
}
FP32_SLOWER = 2.6  # an fp32 GEMM / attention kernel's time against the bf16 one on the same GPU
PAGEABLE_BYTES = 77_070_336  # 128 x 3 x 224 x 224 fp16 images, plus labels: 77 MB
PAGEABLE_GB_S = 6.5
_PARAMS_PER_LAYER = 12  # AccumulateGrad calls per layer
BUCKET_NELEMS = 25_165_824  # gradient elements per all-reduce bucket (bf16: 50 MB), as torch writes on the kernel
LAYERS_PER_BUCKET = 4  # DDP gradient buckets: one all-reduce per 4 layers


@dataclass(frozen=True)
class KinetoSet:
    """What to write. ``mb`` is per rank (all its cycles together)."""

    ranks: int = 4
    mb: float = 20.0
    seed: int = 0
    cycles: int = 2
    straggler: int | None = 1  # a rank number, or None for no straggler
    straggler_ms: float = 60.0  # its extra DataLoader time per step (the others wait that long)
    layers: int = 24
    gzip: bool = False
    compact: bool = False  # one event per line instead of torch's pretty-printed layout
    cause: str | None = None  # a GPU cause planted on every rank (PLANTED); None: the healthy bf16 DDP job

    @property
    def device(self) -> tuple[str, int, int]:
        """(deviceProperties name, computeMajor, computeMinor)"""
        return ("NVIDIA A100-SXM4-80GB", 8, 0) if self.cause == "no-mixed-precision" else (DEVICE, 9, 0)

    def host_pid(self, rank: int) -> tuple[str, int]:
        rng = np.random.default_rng([self.seed, 7, rank])
        return f"node{rank // GPUS_PER_NODE:03d}", 1000 + rank * 97 + int(rng.integers(0, 90))


# ---------------------------------------------------------------------------------------------------------
# A step as a template

TS_HI, TS_LO, DUR_HI, DUR_LO, ID, STEP = range(6)


class _Template:
    """One step's events as %-format text plus the times and ids to fill in (µs from the step start)."""

    def __init__(self, compact: bool):
        self.compact = compact
        self.text: list[str] = []
        self.kinds: list[int] = []
        self.refs: list[int] = []
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.next_id = 0

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def event(self, ph: str, cat: str, name: str, pid, tid, start: float, end: float | None,
              args: list[tuple[str, object]] | None = None, flow_id: int | None = None) -> int:
        """Append one event; ``args`` values ``("id", n)`` become id fields. Returns the event's index."""
        index = len(self.starts)
        self.starts.append(start)
        self.ends.append(start if end is None else end)
        if self.compact:
            sep, ind, ind2, first, last = " ", "", "", "{", "}"
        else:  # torch's layout
            sep, ind, ind2, first, last = "\n", "    ", "      ", "  {", "\n  }"
        out = [f"{first}{sep}{ind}\"ph\": \"{ph}\","]
        if ph != "X":  # flow events: id, pid, tid, ts, cat, name
            out.append(f"{sep}{ind}\"id\": %d,")
            self._field(ID, flow_id)
            out.append(f"{sep}{ind}\"pid\": {json.dumps(pid)},{sep}{ind}\"tid\": {json.dumps(tid)},{sep}{ind}\"ts\": %d.%03d,")
            self._time(index)
            out.append(f"{sep}{ind}\"cat\": \"{cat}\",{sep}{ind}\"name\": \"{cat}\"")
            if ph == "f":
                out.append(f",{sep}{ind}\"bp\": \"e\"")
            out.append(last)
            self.text.append(_escape_fmt("".join(out)))
            return index
        out.append(f"{sep}{ind}\"cat\": \"{cat}\",{sep}{ind}\"name\": ")
        if "%STEP" in name:  # ProfilerStep#<n>
            head, tail = name.split("%STEP")
            out.append(json.dumps(head)[:-1] + "%d" + json.dumps(tail)[1:])
            self._field(STEP, 0)
        else:
            out.append(json.dumps(name))
        out.append(f",{sep}{ind}\"pid\": {json.dumps(pid)},{sep}{ind}\"tid\": {json.dumps(tid)},{sep}{ind}\"ts\": %d.%03d,"
                   f"{sep}{ind}\"dur\": %d.%03d{sep}{ind},{sep}{ind}\"args\": {{{sep}{ind2}")
        self._time(index, dur=True)
        for i, (key, value) in enumerate(args or []):
            out.append(("" if i == 0 else ", ") + f"\"{key}\": ")
            if isinstance(value, tuple) and value and value[0] == "id":
                out.append("%d")
                self._field(ID, value[1])
            else:
                out.append(value if isinstance(value, str) else json.dumps(value))
        out.append(f"{sep}{ind}}}{last}")
        self.text.append(_escape_fmt("".join(out)))
        return index

    def _field(self, kind: int, ref: int) -> None:
        self.kinds.append(kind)
        self.refs.append(ref)

    def _time(self, index: int, dur: bool = False) -> None:
        self._field(TS_HI, index)
        self._field(TS_LO, index)
        if dur:
            self._field(DUR_HI, index)
            self._field(DUR_LO, index)

    def set_end(self, index: int, end: float) -> None:
        self.ends[index] = end


class _StepBuilder:
    """Lays one step out in time: CPU threads run ahead, each stream runs its kernels in order."""

    def __init__(self, spec: KinetoSet, rank: int, wait_us: float, dataloader_us: float,
                 sync_ends: list[float] | None = None):
        self.spec, self.rank = spec, rank
        self.host, self.pid = spec.host_pid(rank)
        self.main_tid, self.bwd_tid = self.pid, self.pid + 41
        self.device = rank % GPUS_PER_NODE
        self.t = _Template(spec.compact)
        self.rng = np.random.default_rng([spec.seed, 11])  # the model's costs: the same on every rank
        self.cpu = {self.main_tid: 0.0, self.bwd_tid: 0.0}
        self.gpu = {COMPUTE_STREAM: 0.0, NCCL_STREAM: 0.0}
        self.wait_us, self.dataloader_us = wait_us, dataloader_us
        # When each gradient all-reduce ends (the last rank to arrive sets it); None: this rank is the last
        self.sync_ends = sync_ends
        self.nccl_ends: list[float] = []

    def cpu_us(self, lo: float, hi: float) -> float:
        return float(self.rng.uniform(lo, hi))

    def annotation(self, name: str, tid: int, start: float, end: float | None = None, cat="user_annotation") -> int:
        i = self.t.new_id()
        return self.t.event("X", cat, name, self.pid, tid, start, end,
                            [("External id", ("id", i)), ("Record function id", 0), ("Ev Idx", ("id", i))])

    def op_chain(self, tid: int, ops: tuple[str, ...], dims: str, launch) -> None:
        """Nested cpu_ops (outermost first); the innermost calls ``launch(op_id)``."""
        opened = []
        for name in ops:
            self.cpu[tid] += self.cpu_us(1.5, 4.0)
            i = self.t.new_id()
            index = self.t.event("X", "cpu_op", name, self.pid, tid, self.cpu[tid], None,
                                 [("External id", ("id", i)), ("Record function id", 0),
                                  ("Input type", '["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]'),
                                  ("Input Dims", dims), ("Ev Idx", ("id", i))])
            opened.append(index)
        if launch is not None:
            launch(self.t.next_id)
        for index in reversed(opened):
            self.cpu[tid] += self.cpu_us(1.0, 3.0)
            self.t.set_end(index, self.cpu[tid])

    def launch(self, tid: int, ext: int, cat: str, name: str, gpu_us: float, stream: int = COMPUTE_STREAM,
               runtime: str = "cudaLaunchKernel", nbytes: int | None = None, not_before: float = 0.0,
               until: float | None = None, blocking: bool = False, extra_args: list | None = None) -> float:
        """A runtime call on ``tid`` and the GPU activity it enqueues (flow events between them);
        ``until``: a collective that cannot end before the other ranks reach it."""
        corr = self.t.new_id()
        rt_start = self.cpu[tid]
        rt_end = rt_start + self.cpu_us(4.0, 9.0)
        cbid = {"cudaLaunchKernel": 211, "cudaMemcpyAsync": 51, "cudaMemsetAsync": 55}[runtime]
        if cat == "kernel" and self.spec.cause == "no-mixed-precision":
            fp32 = FP32_NAMES.get(name)
            name, gpu_us = (fp32, gpu_us * FP32_SLOWER) if fp32 else (name.replace("c10::BFloat16", "float"), gpu_us)
        runtime_index = self.t.event("X", "cuda_runtime", runtime, self.pid, tid, rt_start, rt_end,
                     [("External id", ("id", ext)), ("cbid", cbid), ("correlation", ("id", corr))])
        self.t.event("s", "ac2g", "", self.pid, tid, rt_start, None, flow_id=corr)
        self.cpu[tid] = rt_end
        start = max(rt_end + 3.0, self.gpu[stream], not_before)
        dur = gpu_us * float(self.rng.uniform(0.97, 1.03))
        if until is not None:
            dur = max(dur, until - start)
        args = [("External id", ("id", ext)), ("queued", 0), ("device", self.device), ("context", 1),
                ("stream", stream), ("correlation", ("id", corr))]
        if cat == "kernel":
            args += [("registers per thread", 128), ("shared memory", 98304), ("blocks per SM", 1.0),
                     ("warps per SM", 8.0), ("grid", [132, 1, 1]), ("block", [384, 1, 1]),
                     ("est. achieved occupancy %", 13)] + (extra_args or [])
        else:
            args += [("bytes", nbytes), ("memory bandwidth (GB/s)", round(nbytes / (dur * 1000.0), 3))]
        self.t.event("f", "ac2g", "", self.device, stream, start, None, flow_id=corr)
        self.t.event("X", cat, name, self.device, stream, start, start + dur, args)
        self.gpu[stream] = start + dur
        if blocking:  # a copy from pageable memory: the call returns once the copy is done
            self.t.set_end(runtime_index, start + dur + 2.0)
            self.cpu[tid] = start + dur + 2.0
        return start + dur

    def kernel_op(self, tid: int, ops: tuple[str, ...], kernel: str, gpu_us: float, dims: str = "[[]]",
                  stream: int = COMPUTE_STREAM) -> None:
        self.op_chain(tid, ops, dims, lambda ext: self.launch(tid, ext, "kernel", kernel, gpu_us, stream))

    def item_sync(self, tid: int, after_us: float = 0.0) -> None:
        """``tensor.item()``: inside ``aten::_local_scalar_dense`` the scalar is copied back and the host blocks in
        ``cudaStreamSynchronize`` until the GPU is done; then ``after_us`` of host work (Python) before anything
        else is launched."""
        def inside(ext: int) -> None:
            self.launch(tid, ext, "gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 2.0, runtime="cudaMemcpyAsync",
                        nbytes=4)
            sync_start = self.cpu[tid]
            end = max(max(self.gpu.values()), sync_start) + 4.0
            i = self.t.new_id()
            self.t.event("X", "cuda_runtime", "cudaStreamSynchronize", self.pid, tid, sync_start, end,
                         [("External id", ("id", i)), ("cbid", 131), ("correlation", ("id", i))])
            self.cpu[tid] = end + 1.0
        self.op_chain(tid, ("aten::item", "aten::_local_scalar_dense"), "[[]]", inside)
        self.cpu[tid] += after_us

    def forward_layer(self, main: int, layer: int) -> None:
        if self.spec.cause == "kernel-launch-bound":
            for _ in range(TINY_PER_LAYER[0]):
                self.kernel_op(main, ("aten::add",), TINY_KERNEL, 3.0, "[[64, 256], [64, 256], []]")
            return
        for ops, kernel, us, dims in _FWD:
            self.kernel_op(main, ops, kernel, us, dims)
        if self.spec.cause == "memory-bound-kernels":
            for ops, kernel, us in _UNFUSED_OPS:
                self.kernel_op(main, ops, kernel, us, "[[8, 2048, 4096], [8, 2048, 4096]]")
        if self.spec.cause == "host-sync" and layer < ITEMS_PER_STEP:
            self.item_sync(main, HOST_AFTER_SYNC_US)

    def build(self) -> tuple[_Template, float]:
        """The step; returns the template and the dataloader's end (where a step's jitter is added)."""
        t, main, bwd = self.t, self.main_tid, self.bwd_tid
        step = self.annotation("ProfilerStep#%STEP", main, 0.0)
        self.cpu[main] = 6.0
        dl = self.annotation(DATALOADER, main, self.cpu[main], self.cpu[main] + self.dataloader_us)
        self.cpu[main] += self.dataloader_us + 4.0
        dl_end = self.cpu[main] - 4.0
        batch = 8 * 2048 * 8  # token ids, int64
        if self.spec.cause == "pageable-memcpy":
            self.op_chain(main, ("aten::to", "aten::_to_copy", "aten::copy_"), "[[128, 3, 224, 224]]",
                          lambda ext: self.launch(main, ext, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)",
                                                  PAGEABLE_BYTES / (PAGEABLE_GB_S * 1e3), runtime="cudaMemcpyAsync",
                                                  nbytes=PAGEABLE_BYTES, blocking=True))
        else:
            self.op_chain(main, ("aten::to", "aten::_to_copy", "aten::copy_"), "[[8, 2048]]",
                          lambda ext: self.launch(main, ext, "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 9.0,
                                                  runtime="cudaMemcpyAsync", nbytes=batch))
        fwd = self.annotation("DistributedDataParallel.forward", main, self.cpu[main])
        self.cpu[main] += 3.0
        for layer in range(self.spec.layers):
            self.forward_layer(main, layer)
        self.kernel_op(main, ("aten::cross_entropy_loss", "aten::log_softmax", "aten::_log_softmax"), SOFTMAX, 210.0)
        self.kernel_op(main, ("aten::nll_loss_nd", "aten::nll_loss", "aten::nll_loss_forward"), NLL, 12.0)
        self.cpu[main] += 2.0
        t.set_end(fwd, self.cpu[main])
        # backward on the autograd thread, all-reduce per bucket on the NCCL stream
        self.cpu[bwd] = self.cpu[main] + 8.0
        late_buckets = 0
        for layer in range(self.spec.layers):
            for grad_fn, kernels in (() if self.spec.cause == "kernel-launch-bound" else _BWD):
                outer = self.annotation(f"autograd::engine::evaluate_function: {grad_fn}", bwd,
                                        self.cpu[bwd] + 1.0, cat="cpu_op")
                self.cpu[bwd] += 2.0
                inner = self.annotation(grad_fn, bwd, self.cpu[bwd] + 1.0, cat="cpu_op")
                self.cpu[bwd] += 2.0
                for ops, kernel, us in kernels:
                    self.kernel_op(bwd, ops, kernel, us)
                self.cpu[bwd] += self.cpu_us(2.0, 5.0)
                t.set_end(inner, self.cpu[bwd])
                self.cpu[bwd] += 1.0
                t.set_end(outer, self.cpu[bwd])
            if self.spec.cause == "memory-bound-kernels":
                for ops, kernel, us in reversed(_UNFUSED_OPS):
                    self.kernel_op(bwd, ops, kernel, us * UNFUSED_BWD_US)
            if self.spec.cause == "kernel-launch-bound":
                for _ in range(TINY_PER_LAYER[1]):
                    self.kernel_op(bwd, ("aten::mul",), TINY_KERNEL, 3.0, "[[64, 256], [64, 256]]")
            for _ in range(_PARAMS_PER_LAYER):
                outer = self.annotation("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", bwd,
                                        self.cpu[bwd] + 1.0, cat="cpu_op")
                self.cpu[bwd] += 2.0
                self.op_chain(bwd, ("torch::autograd::AccumulateGrad", "aten::detach", "detach"), "[[4096]]", None)
                self.cpu[bwd] += 1.0
                t.set_end(outer, self.cpu[bwd])
            bucket_ready = (layer + 1) % LAYERS_PER_BUCKET == 0 or layer + 1 == self.spec.layers
            if bucket_ready and self.spec.cause == "communication-bound":
                late_buckets += 1  # issued after the whole backward, below
            for _ in range(late_buckets if layer + 1 == self.spec.layers else 0):
                self.all_reduce(bwd, self.gpu[COMPUTE_STREAM], 19000.0)
            if bucket_ready and self.spec.cause != "communication-bound":
                self.all_reduce(bwd, self.gpu[COMPUTE_STREAM],
                                60.0 if self.spec.cause == "kernel-launch-bound" else 2600.0 * LAYERS_PER_BUCKET / 4)
        self.finish_step(main, bwd, step)
        return t, dl_end

    def all_reduce(self, bwd: int, ready: float, transfer_us: float) -> None:
        """One DDP gradient bucket all-reduced on the NCCL stream once the compute stream produced it."""
        t = self.t
        comm = self.annotation("nccl:all_reduce", bwd, self.cpu[bwd] + 1.0)
        self.cpu[bwd] += 2.0
        bucket = len(self.nccl_ends)
        transfer = transfer_us + self.wait_us
        until = None if self.sync_ends is None else self.sync_ends[bucket] + self.wait_us
        self.op_chain(bwd, ("record_param_comms",), "[[25165824]]",
                      lambda ext: self.nccl_ends.append(self.launch(
                          bwd, ext, "kernel", NCCL_ALLREDUCE, transfer, stream=NCCL_STREAM,
                          not_before=ready, until=until, extra_args=[
                              ("Collective name", "\"allreduce\""), ("In msg nelems", BUCKET_NELEMS),
                              ("Out msg nelems", BUCKET_NELEMS), ("Group size", self.spec.ranks),
                              ("dtype", "\"BFloat16\"")])))
        self.cpu[bwd] += 2.0
        t.set_end(comm, self.cpu[bwd])

    def finish_step(self, main: int, bwd: int, step: int) -> None:
        """zero_grad, the optimizer after the last all-reduce, loss.item()."""
        t = self.t
        # optimizer after the last all-reduce (DDP's finalize waits on the NCCL stream)
        self.cpu[main] = max(self.cpu[main], self.cpu[bwd]) + 5.0
        zero = self.annotation("Optimizer.zero_grad#AdamW.zero_grad", main, self.cpu[main])
        self.cpu[main] += 2.0
        for _ in range(4):
            self.op_chain(main, ("aten::zero_", "aten::fill_"), "[[67108864], []]",
                          lambda ext: self.launch(main, ext, "gpu_memset", "Memset (Device)", 22.0,
                                                  runtime="cudaMemsetAsync", nbytes=134217728))
        self.cpu[main] += 2.0
        t.set_end(zero, self.cpu[main])
        opt = self.annotation("Optimizer.step#AdamW.step", main, self.cpu[main])
        self.cpu[main] += 3.0
        comm_done = self.gpu[NCCL_STREAM]
        if self.spec.cause == "memory-bound-kernels":
            for _ in range(self.spec.layers * _PARAMS_PER_LAYER):
                for ops, kernel, us in _ADAMW_PER_TENSOR:
                    self.op_chain(main, ops, "[[4096, 4096]]",
                                  lambda ext, k=kernel, u=us: self.launch(main, ext, "kernel", k, u, not_before=comm_done))
        for _ in range(0 if self.spec.cause == "memory-bound-kernels" else 3):
            self.op_chain(main, ("aten::_fused_adamw_",), "[[], [], [], [], []]",
                          lambda ext: self.launch(main, ext, "kernel", ADAMW, 1450.0, not_before=comm_done))
        self.cpu[main] += 2.0
        t.set_end(opt, self.cpu[main])
        # loss.item(): copy the loss back and wait for the GPU
        self.op_chain(main, ("aten::item", "aten::_local_scalar_dense"), "[[]]",
                      lambda ext: self.launch(main, ext, "gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 2.0,
                                              runtime="cudaMemcpyAsync", nbytes=4))
        sync_start = self.cpu[main]
        gpu_done = max(self.gpu.values())
        i = t.new_id()
        t.event("X", "cuda_runtime", "cudaStreamSynchronize", self.pid, main, sync_start, gpu_done + 4.0,
                [("External id", ("id", i)), ("cbid", 131), ("correlation", ("id", i))])
        self.cpu[main] = gpu_done + 10.0
        t.set_end(step, self.cpu[main])


@dataclass
class _Layout:
    """A rank's compiled step: one %-format string and index arrays to fill it per step."""

    fmt: str
    starts: np.ndarray
    ends: np.ndarray
    index: dict[int, np.ndarray]  # kind -> positions of its fields
    refs: dict[int, np.ndarray]
    ids_per_step: int
    dataloader_end: float
    step_end: float
    bytes_per_step: int
    nccl_ends: list[float]


@functools.lru_cache(maxsize=4)
def _compile(spec: KinetoSet, rank: int) -> _Layout:
    # Every rank waits a little in each all-reduce (ring latency, jitter); with a straggler, the others
    # wait for it: their all-reduces end when the straggler's do (its own layout gives those ends).
    wait = float(np.random.default_rng([spec.seed, 13, rank]).uniform(20.0, 120.0))
    straggling = spec.straggler is not None and rank == spec.straggler
    dataloader = 4200.0 + (spec.straggler_ms * 1000.0 if straggling else 0.0)
    sync_ends = None
    if spec.straggler is not None and not straggling:
        sync_ends = _compile(spec, spec.straggler).nccl_ends
    builder = _StepBuilder(spec, rank, wait, dataloader, sync_ends)
    template, dl_end = builder.build()
    fmt = ",\n".join(template.text) + ",\n"
    kinds, refs = np.asarray(template.kinds), np.asarray(template.refs, dtype=np.int64)
    index = {k: np.nonzero(kinds == k)[0] for k in range(6)}
    layout = _Layout(fmt=fmt, starts=np.asarray(template.starts), ends=np.asarray(template.ends), index=index,
                     refs={k: refs[index[k]] for k in range(6)}, ids_per_step=template.next_id + 1,
                     dataloader_end=dl_end, step_end=float(np.max(template.ends)), bytes_per_step=0,
                     nccl_ends=builder.nccl_ends)
    layout.bytes_per_step = len(_fill(layout, 0, 10**12, 1.0, 0.0, 10**6))
    return layout


def _escape_fmt(event: str) -> str:
    """Keep our placeholders (%d, %d.%03d), escape any other '%' (e.g. 'occupancy %')."""
    return event.replace("%", "%%").replace("%%d", "%d").replace("%%03d", "%03d")


def _fill(layout: _Layout, step: int, t0_ns: int, scale: float, extra_us: float, id_base: int) -> str:
    """One step's text: the template's times through t -> t*scale + extra*(t >= dataloader end)."""
    def warp(t):
        return t0_ns + np.rint((t * scale + extra_us * (t >= layout.dataloader_end)) * 1000.0).astype(np.int64)
    s, e = warp(layout.starts), warp(layout.ends)
    d = e - s
    values = np.empty(sum(len(v) for v in layout.index.values()), dtype=np.int64)
    ix, rf = layout.index, layout.refs
    values[ix[TS_HI]], values[ix[TS_LO]] = np.divmod(s[rf[TS_HI]], 1000)
    values[ix[DUR_HI]], values[ix[DUR_LO]] = np.divmod(d[rf[DUR_HI]], 1000)
    values[ix[ID]] = rf[ID] + id_base
    values[ix[STEP]] = step
    return layout.fmt % tuple(values.tolist())


# ---------------------------------------------------------------------------------------------------------
# Files


def _header(spec: KinetoSet, rank: int) -> str:
    name, major, minor = spec.device
    props = [{"id": i, "name": name, "totalGlobalMem": 85028224000, "computeMajor": major, "computeMinor": minor,
              "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
              "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132} for i in range(GPUS_PER_NODE)]
    host, _ = spec.host_pid(rank)
    info = {"backend": "nccl", "rank": rank, "world_size": spec.ranks, "pg_count": 1}
    return ("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    "
            + ",\n    ".join(json.dumps(p) for p in props) + "\n  ],\n"
            + f"  \"record_shapes\": 1,\n  \"distributedInfo\": {json.dumps(info)},\n"
            + f"  \"host_name\": \"{host}\",\n  \"displayTimeUnit\": \"ms\",\n"
            + f"  \"baseTimeNanoseconds\": {BASE_TIME_NS},\n  \"traceEvents\": [\n")


def _metadata(spec: KinetoSet, rank: int, ts_ns: int) -> str:
    host, pid = spec.host_pid(rank)
    device = rank % GPUS_PER_NODE
    ts = f"{ts_ns // 1000}.{ts_ns % 1000:03d}"
    rows = [("process_name", pid, 0, {"name": "python3"}), ("process_labels", pid, 0, {"labels": "CPU"}),
            ("thread_name", pid, pid, {"name": "thread %d (python3)" % pid}),
            ("thread_name", pid, pid + 41, {"name": "thread %d (pt_autograd_%d)" % (pid + 41, device)}),
            ("process_name", device, 0, {"name": "python3"}), ("process_labels", device, 0, {"labels": f"GPU {device}"}),
            ("thread_name", device, COMPUTE_STREAM, {"name": f"stream {COMPUTE_STREAM}"}),
            ("thread_name", device, NCCL_STREAM, {"name": f"stream {NCCL_STREAM}"})]
    return "".join(json.dumps({"ph": "M", "name": n, "ts": 0, "pid": p, "tid": t, "args": a}).replace('"ts": 0', f'"ts": {ts}')
                   + ",\n" for n, p, t, a in rows)


def _step_jitter(spec: KinetoSet, step: int) -> tuple[float, float]:
    """(scale, extra DataLoader µs) of one step: the same on every rank (they run in lock-step)."""
    rng = np.random.default_rng([spec.seed, 17, step])
    scale = float(np.clip(rng.normal(1.0, 0.015), 0.95, 1.05))
    extra = float(rng.exponential(400.0))
    if rng.random() < 0.04:  # an occasional slow batch on every rank
        extra += float(rng.uniform(20_000.0, 40_000.0))
    return scale, extra


def plan(spec: KinetoSet, layout: _Layout | None = None) -> dict:
    """How many steps the set gets: enough for ``mb`` per rank; split evenly over the cycles."""
    layout = layout or _compile(spec, 0)
    per_cycle = max(1, round(spec.mb * 1e6 / layout.bytes_per_step / spec.cycles))
    return {"steps_per_cycle": per_cycle, "bytes_per_step": layout.bytes_per_step,
            "nominal_step_us": _nominal_step(spec)}


def _nominal_step(spec: KinetoSet) -> float:
    """A step's length before jitter, the same for every rank (the slowest template plus slack)."""
    lengths = [_compile(spec, r).step_end for r in sorted({0, spec.straggler or 0})]
    return max(lengths) + 400.0


def step_numbers(spec: KinetoSet, steps_per_cycle: int) -> list[list[int]]:
    """ProfilerStep numbers of each cycle, as ``schedule(wait=1, warmup=1, active=k, repeat=cycles)``."""
    return [[2 + c * (steps_per_cycle + 2) + i for i in range(steps_per_cycle)] for c in range(spec.cycles)]


def write_rank(spec: KinetoSet, rank: int, out: Path, steps_per_cycle: int, nominal_step_us: float) -> list[Path]:
    """All cycles of one rank; returns the files written."""
    layout = _compile(spec, rank)
    host, pid = spec.host_pid(rank)
    skew_ns = int(np.random.default_rng([spec.seed, 19, rank]).integers(-15_000, 15_000))
    period = nominal_step_us + 150.0  # between ProfilerStep annotations
    paths = []
    numbers = step_numbers(spec, steps_per_cycle)
    # step start times: cumulative over every step, profiled or not (the same on every rank)
    starts = {}
    t = FIRST_STEP_US
    for n in range(numbers[-1][-1] + 1):
        scale, extra = _step_jitter(spec, n)
        starts[n] = (t, scale, extra)
        t += period * scale + extra
    for cycle in numbers:
        first_us, _, _ = starts[cycle[0]]
        last_us, scale, extra = starts[cycle[-1]]
        end_us = last_us + nominal_step_us * scale + extra
        ns_name = BASE_TIME_NS + int(end_us * 1000) + 2_000_000
        path = out / f"{host}_{pid}.{ns_name}.pt.trace.json{'.gz' if spec.gzip else ''}"
        tmp = path.with_name(path.name + ".part")
        raw = open(tmp, "wb")
        stream = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=1, mtime=0) if spec.gzip else raw
        try:
            stream.write(_header(spec, rank).encode())
            stream.write(_metadata(spec, rank, int((first_us - 200.0) * 1000)).encode())
            for n in cycle:
                t_us, scale, extra = starts[n]
                text = _fill(layout, n, int(t_us * 1000) + skew_ns, scale, extra, 1000 + n * layout.ids_per_step)
                stream.write(text.encode())
            span_start, span_end = int((first_us - 200.0) * 1000), int((end_us + 100.0) * 1000)
            stream.write((
                f"  {{\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler (0)\", \"pid\": \"Spans\", "
                f"\"tid\": \"PyTorch Profiler\", \"ts\": {span_start // 1000}.{span_start % 1000:03d}, "
                f"\"dur\": {(span_end - span_start) // 1000}.{(span_end - span_start) % 1000:03d}, "
                f"\"args\": {{\"Op count\": 0}}}},\n"
                f"  {{\"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", \"tid\": \"\", "
                f"\"ts\": {span_end // 1000}.{span_end % 1000:03d}}}\n"
                f"  ],\"traceName\": \"traces/{path.name}\" }}\n").encode())
        finally:
            if stream is not raw:
                stream.close()
            raw.close()
        os.replace(tmp, path)
        paths.append(path)
    return paths


def write_set(spec: KinetoSet, out: Path, jobs: int = 1) -> dict:
    """Every rank's files into ``out`` (created); ``jobs`` processes write ranks in parallel."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    info = plan(spec)
    args = [(spec, r, out, info["steps_per_cycle"], info["nominal_step_us"]) for r in range(spec.ranks)]
    if jobs > 1:
        from multiprocessing import get_context
        with get_context("spawn").Pool(jobs) as pool:
            files = pool.starmap(write_rank, args)
    else:
        files = [write_rank(*a) for a in args]
    return {**info, "files": [p for group in files for p in group],
            "steps": step_numbers(spec, info["steps_per_cycle"])}
