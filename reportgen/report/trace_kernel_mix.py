"""What a GPU rank's compute kernels were in the profiled steps (the step-time account's kernel mix,
``account.gpu.kernel_mix``, read through ``trace_ranks.KernelMix``), as the PyTorch profiler section shows it: the
compute slice by kernel class, and the memory-bound kernels that fusion would merge (docs/diagnosis.md, "GPU kernel
mix and fusion")."""

from __future__ import annotations

from reportgen.report.model import Table
from reportgen.trace_ranks import KERNEL_CLASSES, TraceRank

CLASS_LABELS = {"gemm": "GEMM (matrix multiply)", "convolution": "Convolution", "attention": "Attention",
                "optimizer": "Optimizer (kernels under Optimizer.step)", "fused": "Already fused (XLA, Triton)",
                "reduction": "Reductions and norms", "elementwise": "Elementwise (casts, copies included)",
                "other": "Other"}


def kernel_mix_blocks(rank: TraceRank, sid: str) -> list:
    """The kernel-mix table and the top memory-bound kernels of a device-perspective rank (none otherwise)."""
    gpu = rank.account.gpu if rank.account is not None else None
    mix = gpu.kernel_mix if gpu is not None else None
    if mix is None or mix.compute_ms <= 0 or rank.account is None:
        return []
    steps = max(rank.account.steps, 1)
    rows = [[CLASS_LABELS[name], mix.classes_ms[name], mix.classes_ms[name] / steps,
             100.0 * mix.classes_ms[name] / mix.compute_ms]
            for name in KERNEL_CLASSES if mix.classes_ms.get(name, 0.0) > 0]
    rows.append(["Compute (all classes)", mix.compute_ms, mix.compute_ms / steps, 100.0])
    blocks: list = [Table(
        f"kineto-kernel-mix-{sid}", ["Kernel class", "In the profiled steps (ms)", "Per step (ms)", "Of the compute"],
        rows, ["text", "num2", "num2", "pct"],
        caption="What the GPU computed: the step-time account's compute slice by kernel class (by the kernel's "
                "name, else by the operator that launched it; a kernel launched under Optimizer.step is the "
                "optimizer's). Exclusive where streams overlap, so the classes add up to the compute slice. "
                "Reductions, elementwise kernels and the optimizer's per-tensor kernels are memory-bound: "
                f"{100.0 * mix.unfused_memory_bound_ms / mix.compute_ms:.1f} % of the compute here, which fusing "
                f"them would shorten by about {mix.fusable_ms / steps:.2f} ms per step (an estimate: each run of "
                "consecutive memory-bound kernels kept as one pass over its data).")]
    if mix.top:
        blocks.append(Table(
            f"kineto-memory-bound-kernels-{sid}", ["Memory-bound kernel", "Class", "Of the compute", "Calls per step",
                                                   "Launched by"],
            [[_short(t.name.removeprefix("void ")), t.kind,
              100.0 * (t.share_of_compute or 0.0), t.calls_per_step, ", ".join(t.operators)] for t in mix.top],
            ["text", "text", "pct", "num2", "text"],
            caption="The memory-bound kernels that took the most GPU time in the steps (their durations summed), how "
                    "many times a step they ran and the operators that launched them (matched by correlation id)."))
    return blocks


def _short(name: str, limit: int = 80) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"
