"""A rank's memory from its trace's allocator events (kineto.json's ``memory``, read through
``trace_ranks.DeviceMemory``), as the PyTorch profiler section shows it: one row per device."""

from __future__ import annotations

from reportgen.formatting import binary_bytes
from reportgen.report.model import Table
from reportgen.trace_ranks import MemoryHolder, TraceRank

MIB = float(1 << 20)
VERDICTS = {"growing": "grows every step", "plateau": "flat", "unknown": "too few steps to tell"}


def _mib(value: float | None) -> float | None:
    return value / MIB if value is not None else None


def _held(holders: tuple[MemoryHolder, ...]) -> str:
    return ", ".join(f"{h.operator or 'outside any operator'} ({binary_bytes(h.nbytes)})" for h in holders[:2])


def memory_blocks(label: str, sid: str, rank: TraceRank) -> list:
    """The rank's memory table, none when its trace has no memory events (recorded without profile_memory)."""
    devices = rank.memory
    if not devices:
        return []
    rows = [[d.device, _mib(d.allocated.peak_bytes if d.allocated else None),
             d.allocated.peak_step if d.allocated else None, _mib(d.reserved.peak_bytes if d.reserved else None),
             _mib(d.capacity_bytes), _mib(d.per_step_bytes), VERDICTS.get(d.verdict or "", d.verdict or ""),
             _held(d.at_peak)] for d in devices]
    relative = any(not d.absolute for d in devices)
    return [Table(f"kineto-allocator-{sid}", ["Device", "Peak allocated (MiB)", "Peak in step", "Peak reserved (MiB)",
                                             "Device memory (MiB)", "Growth per step (MiB)", "Over the steps",
                                             "Held most at the peak"],
                  rows, ["text", "num2", "int", "num2", "num2", "num2", "text", "text"],
                  caption=(f"Rank {label}'s memory from the allocator's events (profile_memory=True): allocated and "
                           "reserved (the caching allocator's segments) at their peaks, the GPU's memory "
                           "(deviceProperties), allocated at each profiled step's end compared step to step"
                           + ("; a trace of torch before 1.10 has no totals: counted from the trace's start"
                              if relative else "") + "."))]
