"""A run's compute efficiency and peak memory in a few numbers, from its report's PyTorch profiler section.

compare, trend and the CI outputs each show these for a run; they read them here, from the section's data as
report.json keeps it (the traces' ``flops`` and ``memory`` per rank, through ``trace_ranks``' typed views), so
the three say the same number the page says. Figures are per rank (ranks train side by side): TFLOP/s is the
mean over the ranks with FLOP counts, MFU only when every one of them has a peak, memory the largest peak of
any rank on the devices of one kind (the GPUs when the traces have any, else the CPU).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from reportgen.formatting import binary_bytes
from reportgen.section_ids import SectionId
from reportgen.trace_ranks import DeviceMemory, trace_ranks_of


@dataclass(frozen=True)
class RunEfficiency:
    """What a run's traces say about its use of the hardware (every figure None when they do not say it)."""

    flops_ranks: int = 0  # ranks whose trace counts FLOPs
    achieved_tflops: float | None = None  # per rank, mean over those ranks
    mfu: float | None = None  # 0..1, mean over those ranks; None unless every one has a peak
    dtype: str | None = None  # the peak's data type (the first rank's)
    gpu: str | None = None  # the GPU the peak is of (deviceProperties' name)
    memory_ranks: int = 0  # ranks whose trace has the allocator's memory events
    memory_device: str | None = None  # "GPU" or "CPU": the kind of device the peaks are of
    peak_allocated_bytes: float | None = None  # the largest over the ranks and their devices of that kind
    peak_reserved_bytes: float | None = None  # the caching allocator's segments (GPUs; None on the CPU)
    capacity_bytes: float | None = None  # the device's memory, where the peak is
    growth_per_step_bytes: float | None = None  # the largest per-step growth of a device judged "growing"

    @classmethod
    def of_sections(cls, sections) -> RunEfficiency:
        """From a run's section data by id (its report.json's ``sections``, or its report's)."""
        ranks = trace_ranks_of((sections or {}).get(SectionId.GPU_KERNELS_OPERATORS) if isinstance(sections, dict)
                               else None)
        flops = [f for f in (r.flops for r in ranks.values()) if f is not None and f.achieved_tflops is not None]
        devices = [r.memory for r in ranks.values()]
        memory = [d for rank in devices for d in rank]
        gpus = [d for d in memory if _is_gpu(d)]
        chosen = gpus or memory
        allocated = [d.allocated.peak_bytes for d in chosen if d.allocated and d.allocated.peak_bytes is not None]
        reserved = [d.reserved.peak_bytes for d in chosen if d.reserved and d.reserved.peak_bytes is not None]
        peaks = [(d.allocated.peak_bytes, i) for i, d in enumerate(chosen)
                 if d.allocated and d.allocated.peak_bytes is not None]
        top = chosen[max(peaks)[1]] if peaks else None
        growth = [d.per_step_bytes for d in chosen if d.verdict == "growing" and d.per_step_bytes is not None]
        return cls(
            flops_ranks=len(flops),
            achieved_tflops=sum(f.achieved_tflops for f in flops) / len(flops) if flops else None,
            mfu=sum(f.mfu for f in flops) / len(flops) if flops and all(f.mfu is not None for f in flops) else None,
            dtype=flops[0].dtype if flops else None,
            gpu=flops[0].device if flops else None,
            memory_ranks=sum(1 for rank in devices if rank),
            memory_device=("GPU" if gpus else "CPU") if chosen else None,
            peak_allocated_bytes=max(allocated) if allocated else None,
            peak_reserved_bytes=max(reserved) if reserved else None,
            capacity_bytes=top.capacity_bytes if top else None,
            growth_per_step_bytes=max(growth) if growth else None)

    @property
    def known(self) -> bool:
        return self.achieved_tflops is not None or self.peak_allocated_bytes is not None

    def to_data(self) -> dict:
        return asdict(self)

    def compute_text(self) -> str | None:
        """``312 TFLOP/s per rank, MFU 31.5 % (bf16 peak of the NVIDIA H100)``; None without FLOP counts."""
        if self.achieved_tflops is None:
            return None
        text = f"{flops_rate(self.achieved_tflops)} per rank"
        if self.mfu is not None:
            text += f", MFU {mfu_text(self.mfu)} ({self.dtype} peak{f' of the {self.gpu}' if self.gpu else ''})"
        return text

    def memory_text(self) -> str | None:
        """``GPU peak 3.2 GiB allocated, 4.0 GiB reserved of 80 GiB, grows 4 MiB a step``; None without memory
        events."""
        if self.peak_allocated_bytes is None:
            return None
        text = f"{self.memory_device} peak {binary_bytes(self.peak_allocated_bytes)} allocated"
        if self.peak_reserved_bytes is not None:
            text += f", {binary_bytes(self.peak_reserved_bytes)} reserved"
        if self.capacity_bytes:
            text += f" of {binary_bytes(self.capacity_bytes)}"
        if self.growth_per_step_bytes is not None:
            text += f", grows {binary_bytes(self.growth_per_step_bytes)} a step"
        return text


def mfu_text(mfu: float) -> str:
    """``31.5 %``; below 0.1 % with two significant digits (a ResNet whose convolutions carry no count: ``0.015 %``,
    not ``0.0 %``)."""
    return f"{mfu * 100:.1f} %" if mfu * 100 >= 0.1 or mfu == 0 else f"{mfu * 100:.2g} %"


def flops_rate(tflops: float) -> str:
    """``312 TFLOP/s``; below one TFLOP/s in GFLOP/s (a CPU's ``0.486 GFLOP/s``, not ``0.000486 TFLOP/s``)."""
    return f"{tflops:.3g} TFLOP/s" if tflops >= 1 else f"{tflops * 1000:.3g} GFLOP/s"


def _is_gpu(device: DeviceMemory) -> bool:
    return device.device_type == 1 or device.device.startswith(("cuda", "gpu", "hip"))
