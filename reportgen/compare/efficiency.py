"""Compute efficiency and peak memory, A against B (``report.efficiency``: each run's own report's numbers).

Achieved TFLOP/s and MFU say whether a change made the hardware do more useful work per second, which a step
time alone cannot (a step can get faster by doing less); the memory peaks say what a change costs in memory (a
larger batch, activation checkpointing turned off) and whether it leaks. Both need traces recorded with FLOP
counts or memory events: where one run lacks them, the page says how to get them instead of a number.
"""

from __future__ import annotations

from reportgen.compare.common import signed
from reportgen.report.efficiency import RunEfficiency
from reportgen.report.model import Table, Text
from reportgen.report.trace_flops import HOW

MIB = float(1 << 20)


def _pct_change(a: float | None, b: float | None) -> str | None:
    return None if a is None or b is None or a == 0 else signed((b - a) / a * 100.0, 1)


def _mib(value: float | None) -> float | None:
    return None if value is None else value / MIB


def efficiency_blocks(ea: RunEfficiency, eb: RunEfficiency) -> tuple[list, dict]:
    """The table of both runs' TFLOP/s, MFU and memory peaks with the change, and the data for compare.json
    (``efficiency``: ``a``, ``b``; empty when neither run's traces have FLOP counts or memory events)."""
    if not (ea.known or eb.known):
        return [], {}
    rows = []

    def row(title: str, va: float | None, vb: float | None, points: bool = False) -> None:
        if va is None and vb is None:
            return
        d = None if va is None or vb is None else vb - va
        rows.append([title, va, vb, signed(d, 2 if not points else 1), None if points else _pct_change(va, vb)])

    rates = [v for v in (ea.achieved_tflops, eb.achieved_tflops) if v is not None]
    giga = bool(rates) and max(rates) < 1  # a CPU's rate in GFLOP/s, where TFLOP/s would print 0.00
    scale = 1000.0 if giga else 1.0
    row(f"Achieved {'G' if giga else 'T'}FLOP/s per rank", *(None if v is None else v * scale
                                                             for v in (ea.achieved_tflops, eb.achieved_tflops)))
    row("MFU (%)", None if ea.mfu is None else ea.mfu * 100, None if eb.mfu is None else eb.mfu * 100, True)
    same_kind = ea.memory_device == eb.memory_device or None in (ea.memory_device, eb.memory_device)
    kind = ea.memory_device or eb.memory_device
    if same_kind:
        row(f"{kind} peak allocated (MiB)", _mib(ea.peak_allocated_bytes), _mib(eb.peak_allocated_bytes))
        row(f"{kind} peak reserved (MiB)", _mib(ea.peak_reserved_bytes), _mib(eb.peak_reserved_bytes))
        row(f"{kind} memory growth per step (MiB)", _mib(ea.growth_per_step_bytes), _mib(eb.growth_per_step_bytes))
    blocks: list = [Text(
        "Use of the hardware, from the PyTorch profiler traces: achieved FLOP/s in the profiled steps (FLOPs "
        "counted by torch or from matrix multiplications' shapes: a floor), MFU against the GPU's dense peak, and "
        "the allocator's peaks (profile_memory=True), the largest of any rank. A step that got faster at the same "
        "FLOP/s does less work; a higher MFU uses more of the GPU.")]
    if rows:
        blocks.append(Table("efficiency-compare", ["Hardware use", "A", "B", "Δ (B − A)", "Δ (%)"], rows,
                            ["text", "num2", "num2", "text", "text"], row_header=True,
                            caption="Per rank; MFU's Δ in points; growth only where a device's memory grows every "
                                    "step."))
    for label, e, other in (("A", ea, eb), ("B", eb, ea)):
        if e.achieved_tflops is None and other.achieved_tflops is not None:
            blocks.append(Text(f"{label}'s traces have no FLOP counts, so its TFLOP/s cannot be compared: {HOW}.",
                               tone="note"))
        if e.peak_allocated_bytes is None and other.peak_allocated_bytes is not None:
            blocks.append(Text(f"{label}'s traces have no memory events, so its memory cannot be compared: record "
                               "with torch.profiler.profile(profile_memory=True).", tone="note"))
    if not same_kind:
        blocks.append(Text(f"Memory not compared: A's peaks are of its {ea.memory_device}, B's of its "
                           f"{eb.memory_device}.", tone="note"))
    return blocks, {"a": ea.to_data(), "b": eb.to_data()}
