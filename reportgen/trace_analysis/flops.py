"""Achieved FLOP/s per rank and the model FLOPs utilisation (MFU) against the GPU's peak.

FLOPs come from the operators that carry a count (``readers.trace_model.FlopEvents``: torch's ``flops`` argument
with ``with_flops=True``, else 2·M·K·N of a matrix multiplication from its ``Input Dims`` with
``record_shapes=True``). **Achieved TFLOP/s** = the FLOPs of the operators that start inside the profiled steps ÷
the steps' summed time. **MFU** = achieved ÷ the GPU's peak dense TFLOP/s for the data type the compute kernels
mostly ran in (from their names: bf16, fp16, fp8, tf32, else fp32), from ``reportgen/data/peak_tflops.json``
(dated, cited; ``REPORTGEN_PEAK_TFLOPS`` names a file of the same layout that replaces it). A CPU rank, or a GPU
the table does not list, has no MFU. Attention, convolutions and elementwise work are only counted when torch
writes their ``flops``: the figure is a floor.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np

from reportgen.readers import trace_model as k

PEAKS = Path(__file__).resolve().parents[1] / "data" / "peak_tflops.json"
PEAKS_ENV = "REPORTGEN_PEAK_TFLOPS"
DTYPES = ("fp8", "bf16", "fp16", "tf32", "fp32")
HOW = ("record the trace with torch.profiler.profile(record_shapes=True) (matrix multiplications counted from their "
       "shapes) or with_flops=True")


def peak_table() -> tuple[list[dict], str]:
    """The rows of the peak table and where it came from (the shipped file, or the user's); a user file that
    cannot be read costs MFU, never the analysis."""
    path = Path(os.environ.get(PEAKS_ENV) or PEAKS)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], f"{path} (unreadable)"
    rows = doc.get("gpus") if isinstance(doc, dict) else None
    rows = [r for r in rows if isinstance(r, dict) and isinstance(r.get("match"), str)
            and isinstance(r.get("tflops"), dict)] if isinstance(rows, list) else []
    return rows, f"{'reportgen/data/peak_tflops.json' if path == PEAKS else path} ({doc.get('dated', 'undated')})"


def _dtype(precision_ms: dict) -> str:
    """The data type most compute kernel time ran in (kernel names), fp32 when none stands out."""
    timed = {p: precision_ms.get(p, 0.0) for p in DTYPES}
    best = max(timed, key=timed.get)
    return best if timed[best] > 0 else "fp32"


def _peak(device: str, dtype: str) -> tuple[float | None, dict | None]:
    rows, _ = peak_table()
    for row in rows:
        try:
            found = re.search(row["match"], device)
        except re.error:
            continue
        if found:
            value = row["tflops"].get(dtype)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e6
            return (float(value) if ok else None), row
    return None, None


def flops_analysis(trace: k.TraceColumns, steps: list[dict], precision_ms: dict, on_gpu: bool) -> dict | None:
    """kineto.json's ``flops`` of one rank, None when its trace counts no FLOPs."""
    flops = trace.flops
    if not len(flops) or not steps:
        return None
    starts = np.array([s["start_us"] for s in steps])
    ends = starts + np.array([s["dur_us"] for s in steps])
    at = np.searchsorted(starts, flops.time_us, side="right") - 1
    inside = (at >= 0) & (flops.time_us <= ends[np.clip(at, 0, None)])
    step_s = float(sum(s["dur_us"] for s in steps)) / 1e6
    counted = float(flops.flops[inside].sum())
    achieved = counted / step_s / 1e12 if step_s > 0 else None
    out = {"per_step": counted / len(steps), "steps": len(steps), "operators": int(inside.sum()),
           "achieved_tflops": achieved, "mfu": None, "peak_tflops": None, "dtype": None, "device": None,
           "peak_source": None}
    if on_gpu and trace.devices and achieved is not None:
        dtype = _dtype(precision_ms)
        peak, row = _peak(trace.devices[0], dtype)
        _, source = peak_table()
        out.update(dtype=dtype, device=trace.devices[0], peak_source=source if row else None,
                   peak_tflops=peak, mfu=achieved / peak if peak else None)
    return out
