"""``torch.cuda.memory._dump_snapshot()`` files (the pickle people attach to out-of-memory reports), read safely and
summarised per device: what the caching allocator reserved, what was allocated in it, what sat reserved but
unallocated (fragmentation), the largest live blocks with the frames that allocated them, and the out-of-memory
events of the allocator's trace.

A snapshot is untrusted input and a pickle can run code when loaded: the unpickler here builds only pickle's own
types (dict, list, tuple, str, bytes, int, float, bool, None) and refuses any reference to a class or function
(``find_class``) or a persistent id, which is how a pickle would call code. The file is bounded in size
(``MAX_BYTES``). Every refusal or damage is one :class:`~reportgen.errors.InputError` line.
"""

from __future__ import annotations

import io
import math
import pickle
from pathlib import Path

from reportgen.errors import InputError

MAX_BYTES = 1 << 30  # a snapshot larger than this is refused (a real one of a 80 GB GPU is tens of MB)
TOP_BLOCKS = 10
_INTERNAL_FRAMES = ("torch/", "torch\\", "<frozen", "site-packages/torch")


class Refused(pickle.UnpicklingError):
    """The pickle asked for a class, a function or a persistent object: loading it would run code."""


class _Restricted(pickle.Unpickler):
    """An unpickler that calls nothing: no class or function is ever looked up."""

    def find_class(self, module, name):
        raise Refused(f"it refers to {module}.{name}, which would run code")

    def persistent_load(self, pid):
        raise Refused("it refers to a persistent object, which would run code")


def load_snapshot(path: Path) -> dict:
    """The snapshot's dict (``segments``, ``device_traces``), or InputError with why it was refused."""
    path = Path(path)
    try:
        if not path.is_file():
            raise InputError(f"{path}: not a memory snapshot file")
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise InputError(f"{path}: memory snapshot of {size / 2**20:.0f} MiB refused (the limit is "
                             f"{MAX_BYTES / 2**20:.0f} MiB)")
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"{path}: cannot read the memory snapshot ({err.strerror or err})") from None
    try:
        snapshot = _Restricted(io.BytesIO(data)).load()
    except Refused as err:
        raise InputError(f"{path}: memory snapshot refused: {err}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError, MemoryError, OverflowError,
            RecursionError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: not a readable memory snapshot (damaged or cut pickle: {type(err).__name__})") \
            from None
    if isinstance(snapshot, list):  # torch.cuda.memory_snapshot() pickled by hand: the segments alone
        snapshot = {"segments": snapshot}
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("segments"), list):
        raise InputError(f"{path}: not a memory snapshot (no list of segments)")
    return snapshot


def _num(value) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) and 0 <= value < 2.0**63 else None


def _frame(frames) -> str | None:
    """The first frame of a block's stack outside torch itself: where the user's code allocated it."""
    listed = [f for f in frames if isinstance(f, dict)] if isinstance(frames, list) else []
    for f in listed:
        filename = str(f.get("filename", ""))
        if filename and not any(part in filename for part in _INTERNAL_FRAMES):
            return f"{filename}:{f.get('line', '?')} {f.get('name', '')}".strip()
    return None if not listed else f"{listed[0].get('filename', '?')}:{listed[0].get('line', '?')} " \
                                   f"{listed[0].get('name', '')}".strip()


def summarize(snapshot: dict) -> dict:
    """Per device: reserved, allocated, reserved but unallocated (and its share), segments, the largest free
    block, the largest live blocks with their frame; the allocator trace's out-of-memory events."""
    devices: dict[int, dict] = {}
    skipped = 0
    for seg in snapshot.get("segments", []):
        total = _num(seg.get("total_size")) if isinstance(seg, dict) else None
        if total is None:
            skipped += 1
            continue
        device = seg.get("device") if isinstance(seg.get("device"), int) else -1
        d = devices.setdefault(device, {"device": device, "segments": 0, "reserved_bytes": 0.0,
                                        "allocated_bytes": 0.0, "largest_free_bytes": 0.0, "blocks": []})
        d["segments"] += 1
        d["reserved_bytes"] += total
        blocks = seg.get("blocks") if isinstance(seg.get("blocks"), list) else []
        allocated = _num(seg.get("allocated_size"))
        live = 0.0
        for b in blocks:
            size = _num(b.get("size")) if isinstance(b, dict) else None
            if size is None:
                continue
            if b.get("state") == "active_allocated":
                live += size
                d["blocks"].append((size, _frame(b.get("frames"))))
            elif b.get("state") == "inactive":
                d["largest_free_bytes"] = max(d["largest_free_bytes"], size)
        d["allocated_bytes"] += allocated if allocated is not None else live
    out = []
    for device in sorted(devices):
        d = devices.pop(device)
        blocks = sorted(d.pop("blocks"), key=lambda b: -b[0])[:TOP_BLOCKS]
        unallocated = d["reserved_bytes"] - d["allocated_bytes"]
        out.append({**d, "unallocated_bytes": unallocated,
                    "unallocated_share": unallocated / d["reserved_bytes"] if d["reserved_bytes"] else None,
                    "largest_blocks": [{"bytes": size, "allocated_at": frame} for size, frame in blocks]})
    ooms = []
    traces = snapshot.get("device_traces")
    for device, events in enumerate(traces if isinstance(traces, list) else []):
        for e in events if isinstance(events, list) else []:
            if isinstance(e, dict) and e.get("action") == "oom":
                ooms.append({"device": device, "bytes": _num(e.get("size")), "time_us": _num(e.get("time_us")),
                             "free_bytes": _num(e.get("device_free"))})
    return {"devices": out, "out_of_memory": ooms, "segments_skipped": skipped}


def describe(summary: dict) -> list[str]:
    """The summary as lines for the terminal."""
    lines = []
    for d in summary["devices"]:
        share = d["unallocated_share"]
        lines.append(f"device {d['device']}: reserved {d['reserved_bytes'] / 2**30:.2f} GiB in {d['segments']} segments, "
                     f"allocated {d['allocated_bytes'] / 2**30:.2f} GiB, reserved but unallocated "
                     f"{d['unallocated_bytes'] / 2**30:.2f} GiB" + (f" ({share * 100:.0f} %)" if share is not None else "")
                     + f", largest free block {d['largest_free_bytes'] / 2**20:.1f} MiB")
        for b in d["largest_blocks"][:5]:
            lines.append(f"  {b['bytes'] / 2**20:10.1f} MiB  {b['allocated_at'] or '(no frames recorded)'}")
    for o in summary["out_of_memory"]:
        lines.append(f"out of memory on device {o['device']}: asked for "
                     f"{(o['bytes'] or 0) / 2**20:.1f} MiB with {(o['free_bytes'] or 0) / 2**20:.1f} MiB free")
    if summary["segments_skipped"]:
        lines.append(f"{summary['segments_skipped']} segments without a size were skipped")
    return lines or ["no segments in the snapshot"]
