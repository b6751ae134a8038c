"""A rank's achieved FLOP/s and MFU (kineto.json's ``flops``, read through ``trace_ranks.TraceFlops``), as the
PyTorch profiler section says it, or how to get the counts when the trace has none."""

from __future__ import annotations

from reportgen.report.model import Text
from reportgen.trace_ranks import TraceRank

HOW = ("record the trace with torch.profiler.profile(record_shapes=True) (matrix multiplications are counted from "
       "their shapes) or with_flops=True")


def flops_blocks(label: str, rank: TraceRank) -> list:
    """One sentence: achieved TFLOP/s and MFU, or how to record FLOP counts (a rank with steps only)."""
    flops = rank.flops
    if flops is None:
        return [Text(f"Rank {label}: no FLOP counts in the trace, so no achieved FLOP/s or MFU: {HOW}.", tone="note")] \
            if rank.step_list else []
    text = (f"Rank {label}: {(flops.achieved_tflops or 0):.4g} TFLOP/s achieved in the profiled steps "
            f"({(flops.per_step or 0) / 1e9:.4g} GFLOP per step on {(flops.operators or 0):g} operators with a count: "
            "matrix multiplications from their shapes and torch's own flops; attention, convolutions and elementwise "
            "work only where torch counts them, so a floor)")
    if flops.mfu is not None:
        text += (f"; MFU {flops.mfu * 100:.1f} % of the {flops.device}'s {flops.peak_tflops:g} {flops.dtype} TFLOP/s "
                 f"(dense peak, {flops.peak_source})")
    elif flops.device:
        text += f"; no MFU: {flops.device} has no {flops.dtype} peak in the table"
    return [Text(text + ".")]


def glance_item(ranks: list[TraceRank]) -> tuple[str, str] | None:
    """At a glance's "Compute" line: the ranks' mean achieved TFLOP/s, and MFU where every rank has one."""
    flops = [r.flops for r in ranks if r.flops is not None and r.flops.achieved_tflops is not None]
    if not flops:
        return None
    achieved = sum(f.achieved_tflops for f in flops) / len(flops)
    text = f"{achieved:.3g} TFLOP/s per rank achieved"
    if all(f.mfu is not None for f in flops):
        text += f", MFU {100 * sum(f.mfu for f in flops) / len(flops):.1f} % ({flops[0].dtype} peak)"
    return "Compute", text
