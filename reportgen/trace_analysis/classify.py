"""Name-based classification of GPU activities: precision of a kernel, kind of a memory copy.

Kernel names often say their data type: cuBLAS/cuDNN/CUTLASS encode it in the kernel family
(``volta_fp16_s884gemm_fp16``, ``ampere_bf16_s16816gemm``, ``cutlass_80_tensorop_s1688gemm`` = TF32,
``volta_sgemm`` = FP32, ``i8816gemm`` = INT8) and PyTorch's templated kernels in their template
arguments (``<c10::Half>``, ``<c10::BFloat16>``, ``<float>``, ``<double>``). The first matching
rule wins, most specific first (but an FP32 type named before ``double`` wins: the doubles of a fused
optimizer kernel are its scalar arguments); a name that says nothing is ``unknown``. This is a heuristic: an
elementwise kernel templated on ``float`` may be part of a mixed-precision model.
"""

from __future__ import annotations

import re

from reportgen.readers.hlo_names import hlo_op

PRECISIONS = ("fp8", "bf16", "fp16", "tf32", "int8", "fp64", "fp32", "unknown")
_RULES = (
    ("fp8", re.compile(r"fp8|e4m3|e5m2|float8", re.I)),
    ("bf16", re.compile(r"bf16|bfloat16", re.I)),
    ("fp16", re.compile(r"fp16|half|(?<![a-z])f16|h884|h1688|h16816|hgemm|hmma|_h\d{3,5}", re.I)),
    ("tf32", re.compile(r"tf32|tensorop_s1688|tensorop_s16816|_s1688gemm|_s16816gemm", re.I)),
    ("int8", re.compile(r"int8|imma|i8816|i8832|(?<![a-z0-9])i8(?![0-9])|(?<![a-z])s8(?![0-9])", re.I)),
    ("fp64", re.compile(r"double|dgemm|fp64|(?<![a-z])f64", re.I)),
    ("fp32", re.compile(r"float|sgemm|fp32|(?<![a-z])f32|scudnn|_s\d{3,5}gemm|(?<![a-z])s884", re.I)),
)


def kernel_precision(name: str) -> str:
    for precision, pattern in _RULES:
        found = pattern.search(name)
        if found:
            if precision == "fp64":
                # a templated kernel's data type comes first; ``double`` after it is a scalar argument
                # (``FusedAdamMathFunctor<float, 4, ...>, double*, double, ...``: lr and betas, an fp32 kernel)
                fp32 = _RULES[-1][1].search(name)
                if fp32 is not None and fp32.start() < found.start():
                    return "fp32"
            return precision
    return "unknown"


# A bare ``broadcast`` is no collective: Eigen's ``TensorBroadcastingOp`` kernels (TensorFlow on GPU) and XLA's
# ``loop_broadcast_fusion`` / ``broadcast_add_fusion`` compute; NCCL's broadcast is named ``nccl…Broadcast…``.
_COMMUNICATION = re.compile(r"nccl|all[-_]?reduce|all[-_]?gather|reduce[-_]?scatter|all[-_]?to[-_]?all|"
                            r"collective[-_]?(broadcast|permute)|sendrecv", re.I)
# XLA's collective ops by their opcode (a TPU profile names an op by its HLO text: ``readers.hlo_names``)
_HLO_COLLECTIVE = re.compile(r"^(all-reduce|all-gather|reduce-scatter|all-to-all|ragged-all-to-all|"
                             r"collective-permute|collective-broadcast)(-start|-done)?$")


def is_communication_kernel(name: str) -> bool:
    """NCCL (and similar collective) kernels, XLA's collective ops: time on the device spent communicating."""
    op = hlo_op(name)
    if op is None:
        return bool(_COMMUNICATION.search(name))
    instruction, opcode = op
    return bool(_HLO_COLLECTIVE.match(opcode)) or (opcode == "fusion" and _COMMUNICATION.match(instruction) is not None)


_COPY_KIND = re.compile(r"\b(HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD|AtoH|HtoA|AtoA)\b")


def memory_op_kind(name: str, is_memset: bool) -> str:
    """``Memcpy HtoD (Pageable -> Device)`` -> ``HtoD``; memsets are ``Memset``."""
    if is_memset:
        return "Memset"
    match = _COPY_KIND.search(name)
    return match.group(1) if match else "Memcpy (other)"


# What a compute kernel does, by its name (``kernel_class``): the kernel mix of the step-time account's compute
# slice (``reportgen.trace_analysis.kernel_mix``). Math-bound classes first: a cuDNN convolution's name may say
# ``gemm`` (``implicit_gemm``), an attention kernel's ``gemm`` too. ``fused``: kernels a compiler generated
# from several operations (XLA's ``fusion``, inductor's ``triton_``), already fused. ``elementwise`` holds dtype
# casts and copies done as kernels (and layout transposes); ``reduction`` the norms, softmax and losses.
KERNEL_CLASSES = ("gemm", "convolution", "attention", "optimizer", "fused", "reduction", "elementwise", "other")
MEMORY_BOUND = ("optimizer", "reduction", "elementwise")  # memory-bound classes: their time is moving data
_CLASS_RULES = (
    ("attention", re.compile(r"fmha|flash|attention|(?<![a-z])mha|sdpa|cudnn_generated_fort_native_sdpa", re.I)),
    ("convolution", re.compile(r"conv(?!ert)|fprop|dgrad|wgrad|winograd|scudnn|hcudnn|implicit_gemm|"
                               r"implicit_convolve|precomputed_convolve|igemm_(fwd|bwd|wrw)", re.I)),
    # ROCm's GEMMs (rocBLAS / hipBLASLt, Tensile's ``Cijk_…`` kernels) beside NVIDIA's
    ("gemm", re.compile(r"gemm|gemv|matmul|xmma|nvjet|cutlass|splitKreduce|cublas|s884|h884|s1688|h1688|"
                        r"s16816|h16816|^Cijk_", re.I)),
    # an optimizer's own math (torch's foreach / fused kernels, apex's): not fbgemm's embedding backward that
    # applies Adagrad in place (``split_embedding_backward_..._adagrad_...``), an embedding kernel
    ("optimizer", re.compile(r"(Adam|SGD|Lamb|Adagrad|RMSprop)\w*Functor|FusedOptimizer|_fused_(adam|sgd)", re.I)),
    ("fused", re.compile(r"^triton_|^\w*fusion([._]\d+)*(\.kd)?$", re.I)),  # .kd: ROCm's kernel descriptor
    ("reduction", re.compile(r"reduce|norm|_bn_|bn_fw|bn_bw|welford|softmax|nll_loss|cross_entropy|"
                             r"argmax|argmin|topk|cumsum|batch_norm|moments", re.I)),
    ("elementwise", re.compile(r"elementwise|Functor|pointwise|copy|cast|convert|fill|relu|gelu|silu|sigmoid|tanh|"
                               r"dropout|where|clamp|threshold|CatArray|transpose|nchwToNhwc|nhwcToNchw|"
                               r"permute|index|scatter|gather|pool|upsample", re.I)),
)
# The launching operator says what a kernel whose name says nothing does (``void kernel<...>`` of a library)
_OPERATOR_RULES = (
    ("attention", re.compile(r"attention|sdpa", re.I)),
    ("convolution", re.compile(r"conv(?!ert)", re.I)),
    ("gemm", re.compile(r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|addmv|mv|dot|einsum)$")),
    ("reduction", re.compile(r"norm|softmax|^aten::(sum|mean|max|min|amax|amin|prod|std|var|argmax|argmin|"
                             r"nll_loss\w*|cross_entropy\w*|cumsum|topk|sort)")),
    ("elementwise", re.compile(r"^aten::")),
)


def kernel_class(name: str, operator: str | None = None) -> str:
    """The class of a compute kernel (one of ``KERNEL_CLASSES`` but ``optimizer`` unless its name is an optimizer's
    math): by its name, else by the operator that launched it, else ``other``."""
    for cls, pattern in _CLASS_RULES:
        if pattern.search(name):
            return cls
    if operator:
        for cls, pattern in _OPERATOR_RULES:
            if pattern.search(operator):
                return cls
    return "other"


# dtype casts and copies (``aten::to`` / ``aten::copy_``, ``bfloat16_copy_kernel``) and layout transposes
# (cuDNN's ``nchwToNhwc``): the evidence that picks a fix for the elementwise time
CAST_KERNEL = re.compile(r"copy_kernel|_copy_|(bfloat16|half|float)_copy|cast|convert", re.I)
CAST_OPERATOR = re.compile(r"^aten::(to|_to_copy|copy_|type_as|contiguous|clone)$")
LAYOUT_KERNEL = re.compile(r"nchwToNhwc|nhwcToNchw|nchw2nhwc|nhwc2nchw", re.I)
NORM_KERNEL = re.compile(r"norm|_bn_|bn_fw|bn_bw|welford", re.I)
MULTI_TENSOR = re.compile(r"multi_tensor_apply|TensorListMetadata|FusedOptimizer|_fused_", re.I)
