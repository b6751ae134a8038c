"""Memory over the profiled steps, per device, from the allocator's events (Kineto ``[memory]``,
``profile_memory=True``): what the trace says about a leak and about running out.

Definitions (also in docs/beyond-sagemaker.md, "Memory"):

* **Allocated / reserved**: the allocator's ``Total Allocated`` / ``Total Reserved`` after each event (torch ≥ 1.10;
  the CPU allocator reserves nothing). A trace of older torch writes only each event's bytes: allocated is then
  their running sum from the start of each file, *relative* (``absolute`` false), and has no reserved.
* **Peak**: the largest allocated (reserved) value, when (ms into the rank's trace, as the steps' ``start_ms``)
  and in which step.
* **Per-step growth**: allocated at the end of each profiled step (the last event inside it), compared between
  consecutive steps (over a gap of unprofiled steps, divided by the steps between them; a relative series only
  within one file). ``growing``: at least ``MIN_PAIRS`` such pairs, at least ``RISING`` of them rising, a median
  rise above zero and ``LEAK_MIN_BYTES`` gained in all; ``plateau`` otherwise; ``unknown`` with too few pairs.
* **Allocating operator**: the innermost CPU operator around the event on its thread, above the allocator's own
  operators (``aten::empty``...), which say nothing of why memory was taken.
* **At the peak**: the blocks live at the peak (allocations not yet freed, paired by address) by allocating
  operator; without addresses (torch before 1.10), the bytes each operator allocated from the start of the
  peak's step to the peak (``at_peak_basis`` says which). **Kept**: blocks allocated
  inside a profiled step other than the last and never freed before the trace ends, by operator (a leak's owner;
  the last step's blocks, gradients say, may be freed by the next step, which was not traced).
"""

from __future__ import annotations

import numpy as np

from reportgen.readers import trace_model as k
from reportgen.trace_analysis.columns import ends_of

MIN_PAIRS = 3  # consecutive profiled steps compared, for a verdict on growth
RISING = 0.75  # share of the compared steps whose end is above the one before, for "growing"
LEAK_MIN_BYTES = 1 << 20  # a rise smaller than this over the profiled steps is noise (a cached scalar, a buffer)
TOP = 5  # operators listed at the peak and among what was kept
MAX_STEPS = 1000  # steps listed per device (the verdict uses them all)
_ALLOCATOR_OPS = ("aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty",
                  "aten::new_empty_strided", "aten::resize_", "aten::to", "aten::_to_copy")
DEVICE_TYPES = {0: "cpu", 1: "cuda"}  # torch's DeviceType numbers Kineto writes


def device_name(device_type: int, device_id: int) -> str:
    """``cpu``, ``cuda:0``; another device type by torch's number (``type 12:0``)."""
    kind = DEVICE_TYPES.get(device_type, f"type {device_type}")
    return kind if device_id < 0 else f"{kind}:{device_id}"


def allocating_operators(trace: k.TraceColumns) -> np.ndarray:
    """Per memory event, the name index of the operator that allocated (or freed) it, -1 when none encloses it
    (see the module docstring)."""
    mem = trace.memory
    owners = np.full(len(mem), -1, np.int64)
    if not len(mem):
        return owners
    allocator = np.zeros(len(trace.names) + 1, bool)
    for i, name in enumerate(trace.names):
        allocator[i] = name.startswith(_ALLOCATOR_OPS) or name.startswith("ProfilerStep#")
    ops = trace.rows(k.CPU_OP)
    for tid in np.unique(mem.tid):
        on_thread = np.flatnonzero(ops & (trace.tid == tid))
        if not on_thread.size:
            continue
        starts, ends, names = trace.start_us[on_thread], ends_of(trace, on_thread), trace.name[on_thread]
        parents = _parents(starts, ends).tolist()
        rows = np.flatnonzero(mem.tid == tid)
        times = mem.time_us[rows]
        latest = np.searchsorted(starts, times, side="right") - 1
        # the walk up reads Python lists: a numpy scalar per step was most of the memory analysis' time
        ends_l, names_l, allocator_l = ends.tolist(), names.tolist(), allocator.tolist()
        for row, t, op in zip(rows.tolist(), times.tolist(), latest.tolist()):
            while op >= 0 and (ends_l[op] < t or allocator_l[names_l[op]]):
                op = parents[op]
            owners[row] = names_l[op] if op >= 0 else -1
    return owners


def _parents(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each operator's enclosing operator on its thread (-1 for an outermost one); ``starts`` sorted."""
    parents = [-1] * starts.size
    stack: list[int] = []
    ends_l = ends.tolist()
    for i, end in enumerate(ends_l):
        while stack and ends_l[stack[-1]] < end:  # ended before, or overlapping without nesting (a damaged trace)
            stack.pop()
        parents[i] = stack[-1] if stack else -1
        stack.append(i)
    return np.array(parents, np.int64)


def _running(mem: k.MemoryEvents) -> tuple[np.ndarray, bool]:
    """Allocated after each event: the allocator's total where every event has one, else each file's running sum
    of the bytes (relative to its start)."""
    if np.isfinite(mem.allocated).all():
        return mem.allocated, True
    running = np.zeros(len(mem))
    for cycle in np.unique(mem.cycle):
        rows = mem.cycle == cycle
        running[rows] = np.cumsum(mem.nbytes[rows])
    return running, False


def _by_operator(trace: k.TraceColumns, nbytes: dict[int, float], blocks: dict[int, int]) -> list:
    rows = sorted(nbytes.items(), key=lambda kv: -kv[1])[:TOP]
    return [{"operator": trace.names[o] if o >= 0 else None, "bytes": float(b), "blocks": blocks.get(o, 0)}
            for o, b in rows if b > 0]


def _live(mem: k.MemoryEvents, owners: np.ndarray, upto: int) -> dict[int, tuple[float, int, int]]:
    """Blocks allocated at or before row ``upto`` and not freed by then: address -> (bytes, owner, row)."""
    live: dict[int, tuple[float, int, int]] = {}
    for row, (addr, moved, owner) in enumerate(zip(mem.addr[:upto + 1].tolist(), mem.nbytes[:upto + 1].tolist(),
                                                   owners[:upto + 1].tolist())):
        if moved > 0:
            live[addr] = (moved, owner, row)
        elif moved < 0:
            live.pop(addr, None)
    return live


def _holders(trace: k.TraceColumns, mem: k.MemoryEvents, owners: np.ndarray, upto: int,
             in_steps: np.ndarray | None = None) -> list:
    """The operators holding the most memory at row ``upto``: the live blocks, paired by address, by owner.
    ``in_steps``: only blocks allocated at rows marked there."""
    nbytes: dict[int, float] = {}
    blocks: dict[int, int] = {}
    for moved, owner, row in _live(mem, owners, upto).values():
        if in_steps is None or in_steps[row]:
            nbytes[owner] = nbytes.get(owner, 0.0) + moved
            blocks[owner] = blocks.get(owner, 0) + 1
    return _by_operator(trace, nbytes, blocks)


def _allocators(trace: k.TraceColumns, mem: k.MemoryEvents, owners: np.ndarray, lo: int, hi: int) -> list:
    """The operators that allocated the most bytes in rows ``lo``..``hi`` (a trace without addresses: what is
    live cannot be told, what was taken can)."""
    nbytes: dict[int, float] = {}
    blocks: dict[int, int] = {}
    for owner, moved in zip(owners[lo:hi + 1].tolist(), mem.nbytes[lo:hi + 1].tolist()):
        if moved > 0:
            nbytes[owner] = nbytes.get(owner, 0.0) + moved
            blocks[owner] = blocks.get(owner, 0) + 1
    return _by_operator(trace, nbytes, blocks)


def _growth(ends: list[dict], absolute: bool) -> dict:
    """The per-step growth verdict from the steps' end values (see the module docstring)."""
    pairs = [(b["allocated_end_bytes"] - a["allocated_end_bytes"]) / (b["step"] - a["step"])
             for a, b in zip(ends, ends[1:])
             if b["step"] > a["step"] and (absolute or a["cycle"] == b["cycle"])]
    if len(pairs) < MIN_PAIRS:
        return {"verdict": "unknown", "pairs": len(pairs), "per_step_bytes": None, "rising_share": None,
                "total_bytes": None}
    rising = sum(1 for d in pairs if d > 0) / len(pairs)
    median = float(np.median(pairs))
    first, last = ends[0], ends[-1]
    total = (last["allocated_end_bytes"] - first["allocated_end_bytes"]) if absolute else float(sum(pairs))
    growing = rising >= RISING and median > 0 and total >= LEAK_MIN_BYTES
    return {"verdict": "growing" if growing else "plateau", "pairs": len(pairs), "per_step_bytes": median,
            "rising_share": rising, "total_bytes": float(total)}


def _device(trace: k.TraceColumns, mem: k.MemoryEvents, owners: np.ndarray, steps: list[dict],
            origin: float, device_type: int, device_id: int) -> dict:
    allocated, absolute = _running(mem)
    reserved = mem.reserved if absolute and np.isfinite(mem.reserved).all() and (mem.reserved > 0).any() else None
    times = mem.time_us

    def step_at(t: float):
        return next((s["step"] for s in steps if s["start_us"] <= t <= s["start_us"] + s["dur_us"]), None)

    def peak_of(series: np.ndarray) -> dict:
        row = int(np.argmax(series))
        return {"peak_bytes": float(series[row]), "peak_ms": (float(times[row]) - origin) / 1000.0,
                "peak_step": step_at(float(times[row])), "first_bytes": float(series[0]),
                "last_bytes": float(series[-1])}

    ends, in_steps = [], np.zeros(len(mem), bool)
    for s in steps[:-1]:  # the last step's blocks may be freed by the next one, which was not traced
        lo = np.searchsorted(times, s["start_us"], side="left")
        hi = np.searchsorted(times, s["start_us"] + s["dur_us"], side="right")
        in_steps[lo:hi] = True
    for s in steps:
        lo = np.searchsorted(times, s["start_us"], side="left")
        hi = np.searchsorted(times, s["start_us"] + s["dur_us"], side="right")
        if hi <= lo:
            continue  # no memory event inside the step
        ends.append({"step": s["step"], "allocated_end_bytes": float(allocated[hi - 1]),
                     "allocated_max_bytes": float(allocated[lo:hi].max()),
                     "reserved_end_bytes": float(reserved[hi - 1]) if reserved is not None else None,
                     "cycle": int(mem.cycle[hi - 1])})
    peak = int(np.argmax(allocated))
    addresses = bool((mem.addr >= 0).all())
    if addresses:
        at_peak = _holders(trace, mem, owners, peak)
    else:  # from the start of the peak's step (or of its file) to the peak
        step = next((s for s in steps if s["start_us"] <= times[peak] <= s["start_us"] + s["dur_us"]), None)
        lo = (int(np.searchsorted(times, step["start_us"])) if step is not None
              else int(np.flatnonzero(mem.cycle == mem.cycle[peak])[0]))
        at_peak = _allocators(trace, mem, owners, lo, peak)
    capacity = trace.device_memory.get(device_id) if device_type == 1 else None
    return {
        "device": device_name(device_type, device_id), "device_type": device_type, "device_id": device_id,
        "events": len(mem), "absolute": absolute,
        "allocations": int((mem.nbytes > 0).sum()), "allocated_bytes_total": float(mem.nbytes[mem.nbytes > 0].sum()),
        "allocated": peak_of(allocated),
        "reserved": peak_of(reserved) if reserved is not None else None,
        "capacity_bytes": capacity,
        "steps": ends[:MAX_STEPS],
        "growth": _growth(ends, absolute),
        "addresses": addresses,  # whether allocations and frees pair by address (torch >= 1.10)
        "at_peak_basis": "live blocks" if addresses else "allocated in the step up to the peak",
        "at_peak": at_peak,
        "kept": _holders(trace, mem, owners, len(mem) - 1, in_steps) if ends and addresses else [],
    }


def memory_analysis(trace: k.TraceColumns, steps: list[dict]) -> dict | None:
    """kineto.json's ``memory`` of one rank (``steps``: ``analysis.steps_of``), None when the trace holds no
    memory events (recorded without ``profile_memory=True``)."""
    mem = trace.memory
    if not len(mem):
        return None
    origin = float(trace.start_us.min()) if trace.start_us.size else float(mem.time_us[0])
    owners = allocating_operators(trace)
    keys = sorted({(int(t), int(d)) for t, d in zip(mem.device_type.tolist(), mem.device_id.tolist())})
    devices = []
    for device_type, device_id in keys:
        rows = np.flatnonzero((mem.device_type == device_type) & (mem.device_id == device_id))
        devices.append(_device(trace, mem.take(rows), owners[rows], steps, origin, device_type, device_id))
    return {"events": len(mem), "devices": devices}
