"""The memory causes a trace with the allocator's events reveals (``profile_memory=True``): memory that grows
every step (a leak, with the operator that keeps it) and a GPU whose peak is close to its capacity.

Each detector reads the typed view of each rank's ``memory`` (``trace_ranks.DeviceMemory``, written by
``reportgen.trace_analysis.memory``). Neither costs time yet: both are risks in their own terms (bytes per
step, steps and time until full, the peak's share of the GPU). A plateau is never a leak: only a device whose
steps' ends rose in most of the compared steps, by at least a MiB in all, is (the analysis' ``growing``).
Thresholds are documented in docs/diagnosis.md ("Memory causes").
"""

from __future__ import annotations

from reportgen.diagnosis.causes import Finding, detector, make, pct, secs
from reportgen.diagnosis.evidence import Evidence
from reportgen.formatting import binary_bytes as size
from reportgen.section_ids import SectionId
from reportgen.trace_ranks import DeviceMemory, MemoryHolder, TraceRank

OOM_SHARE = 0.90  # a GPU's peak (reserved, else allocated) at or above this share of its capacity


def _devices(ev: Evidence):
    """(rank label, rank, device) for every device of every rank with memory events."""
    for label, rank in ev.trace_ranks.items():
        for device in rank.memory:
            yield label, rank, device


def _holders(holders: tuple[MemoryHolder, ...], n: int = 3) -> str:
    return ", ".join(f"{h.operator or 'outside any operator'} {size(h.nbytes)}"
                     + (f" ({h.blocks:g} blocks)" if h.blocks and h.blocks > 1 else "")
                     for h in holders[:n] if h.nbytes is not None)


def _peak(device: DeviceMemory) -> tuple[float | None, str]:
    """The device's peak that counts against its capacity: reserved (what the caching allocator holds from the
    driver) when the trace has it, else allocated."""
    if device.reserved is not None and device.reserved.peak_bytes is not None:
        return device.reserved.peak_bytes, "reserved"
    return (device.allocated.peak_bytes if device.allocated else None), "allocated"


@detector("memory-leak")
def memory_leak(ev: Evidence, found: dict) -> Finding | None:
    """A device whose allocated memory at the end of each profiled step keeps rising (the analysis' verdict
    ``growing``); the fastest-growing one is reported, with what it keeps and when it is full at this rate."""
    growing = [(label, rank, d) for label, rank, d in _devices(ev)
               if d.verdict == "growing" and d.per_step_bytes is not None and d.per_step_bytes > 0]
    if not growing:
        return None
    label, rank, device = max(growing, key=lambda item: item[2].per_step_bytes)
    per_step = device.per_step_bytes
    peak, kind = _peak(device)
    evidence = [f"rank {label}, {device.device}: allocated memory grows {size(per_step)} per step "
                f"(higher at {round((device.rising_share or 0) * (device.pairs or 0)):g} of {device.pairs or 0:g} "
                "step ends than at the step before; "
                f"{size(device.growth_bytes)} over the profiled steps" +
                ("" if device.absolute else ", counted from the trace's start") + ")"]
    if device.kept:
        evidence.append(f"kept across steps (allocated in a step, never freed): {_holders(device.kept)}")
    elif device.at_peak:
        evidence.append(f"the most memory at the peak: {_holders(device.at_peak)}")
    risk = {"where": f"rank {label} {device.device}", "per_step_bytes": per_step,
            "operator": device.kept[0].operator if device.kept else None}
    if device.capacity_bytes and peak is not None and device.absolute:
        steps_to_full = max(device.capacity_bytes - peak, 0.0) / per_step
        risk["steps_to_full"] = steps_to_full
        line = (f"peak {kind} {size(peak)} of the GPU's {size(device.capacity_bytes)}: full in about "
                f"{steps_to_full:,.0f} more steps at this rate")
        if rank.step_mean_ms:
            risk["time_to_full_s"] = steps_to_full * rank.step_mean_ms / 1000.0
            line += f" ({secs(risk['time_to_full_s'])} at its mean step of {rank.step_mean_ms:.0f} ms)"
        evidence.append(line)
    if len(growing) > 1:
        evidence.append(f"{len(growing)} devices grow: " + ", ".join(f"rank {lbl} {d.device} {size(d.per_step_bytes)}"
                                                                     for lbl, _, d in growing[:4]))
    owner = device.kept[0].operator if device.kept and device.kept[0].operator else None
    fix = ((f"Find why the tensors {owner} makes outlive their step" if owner else
            "Find what keeps tensors alive across steps") +
           f" ({size(per_step)} a step): losses or outputs appended to a list without .detach()/.item(), a cache or "
           "history that is never trimmed, a graph kept with retain_graph=True." +
           (" torch.cuda.memory._record_memory_history() and a snapshot after a few steps name the Python frames "
            "that allocated the kept blocks." if device.device.startswith("cuda") else ""))
    return make(ev, "memory-leak", 0.0, evidence, fix, sections=[SectionId.GPU_KERNELS_OPERATORS], metrics=risk,
                risk=risk, serious=True)


@detector("out-of-memory-risk")
def out_of_memory_risk(ev: Evidence, found: dict) -> Finding | None:
    """A GPU whose peak (reserved, else allocated) reaches OOM_SHARE of its memory (deviceProperties'
    totalGlobalMem); a peak counted from the trace's start is a lower bound and judged only when it alone is
    that high."""
    close = []
    for label, rank, device in _devices(ev):
        peak, kind = _peak(device)
        if device.capacity_bytes and peak is not None and peak / device.capacity_bytes >= OOM_SHARE:
            close.append((peak / device.capacity_bytes, label, rank, device, peak, kind))
    if not close:
        return None
    share, label, rank, device, peak, kind = max(close, key=lambda item: item[0])
    at = device.allocated
    evidence = [f"rank {label}, {device.device}: peak {kind} {size(peak)} of the GPU's {size(device.capacity_bytes)} "
                f"({pct(share)})" + ("" if device.absolute else ", at least: counted from the trace's start") +
                (f" in step {at.peak_step:g}" if at and at.peak_step is not None else "")]
    if kind == "reserved" and at and at.peak_bytes is not None:
        evidence.append(f"peak allocated {size(at.peak_bytes)}: {size(peak - at.peak_bytes)} reserved by the caching "
                        "allocator beyond the largest allocation (cached or fragmented blocks)")
    if device.at_peak:
        evidence.append(f"held at the peak ({device.at_peak_basis or 'live blocks'}): {_holders(device.at_peak)}")
    risk = {"where": f"rank {label} {device.device}", "peak_pct": 100.0 * share, "peak_bytes": peak,
            "capacity_bytes": device.capacity_bytes}
    fix = ("Lower the peak before the GPU runs out: activation checkpointing (torch.utils.checkpoint) on the largest "
           "blocks, a smaller micro-batch with gradient accumulation to keep the effective batch, "
           "optimizer.zero_grad(set_to_none=True), and PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True where reserved "
           "runs well above allocated (fragmentation).")
    return make(ev, "out-of-memory-risk", 0.0, evidence, fix, sections=[SectionId.GPU_KERNELS_OPERATORS],
                metrics=risk, risk=risk, serious=True)


def judged_from_traces(ranks: dict[str, TraceRank]) -> str | None:
    """How the memory question is judged from the traces' allocator events, None when no rank has a verdict on
    its growth (no memory events, or too few profiled steps)."""
    devices = [d for rank in ranks.values() for d in rank.memory if d.verdict in ("growing", "plateau")]
    if not devices:
        return None
    return "the allocator's events in the profiled steps (" + ", ".join(sorted({d.device for d in devices})) + ")"
