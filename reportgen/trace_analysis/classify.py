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


_COMMUNICATION = re.compile(r"nccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|sendrecv", re.I)


def is_communication_kernel(name: str) -> bool:
    """NCCL (and similar collective) kernels: time on the GPU spent communicating, not computing."""
    return bool(_COMMUNICATION.search(name))


_COPY_KIND = re.compile(r"\b(HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD|AtoH|HtoA|AtoA)\b")


def memory_op_kind(name: str, is_memset: bool) -> str:
    """``Memcpy HtoD (Pageable -> Device)`` -> ``HtoD``; memsets are ``Memset``."""
    if is_memset:
        return "Memset"
    match = _COPY_KIND.search(name)
    return match.group(1) if match else "Memcpy (other)"
