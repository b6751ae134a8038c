"""GPU idle time two ways, and the in-window idle split the way Holistic Trace Analysis (HTA) splits it.

* **Over the trace**: the profiled span (first to last event of each profiling cycle, CPU and GPU)
  minus the time any GPU activity ran. It includes CPU-only stretches (start-up, data loading
  before the first kernel) and is what a reader of the whole trace sees.
* **In the GPU's active window**: from the first to the last GPU activity of each cycle (kernels,
  memory copies and memsets), minus the time any of them ran. This is HTA's temporal breakdown
  ("idle time") and TensorBoard's GPU idle; compare it with those tools.

The in-window idle time is split into the categories HTA defines, on the union of the GPU's
activity over all streams (HTA classifies each stream separately; on a one-stream trace both are
the same):

* **host wait**: the next kernel was launched (its ``cudaLaunchKernel`` or other runtime call,
  matched by correlation id, started) only after the GPU had gone idle: the CPU did not enqueue
  work fast enough;
* **kernel wait**: a gap shorter than ``KERNEL_WAIT_US`` (HTA's default 30 µs) between kernels
  that were already queued: launch overhead between back-to-back kernels;
* **other**: the rest (waiting on events, synchronisation, a launch whose runtime call is unknown).

**Per stream** (:func:`idle_per_stream`, HTA's ``get_idle_time_breakdown``): the same three categories on each
CUDA stream alone, the gap being the time between one operation's end and the next one's start on that stream.
A stream idle while another one works is idle here, so the sums exceed the union's idle time: what it tells is
which stream waits for what (a communication stream waiting on the host is normal, a compute stream is not).
"""

from __future__ import annotations

import numpy as np

from reportgen.readers import trace_model as k
from reportgen.trace_analysis.columns import ends_of

KERNEL_WAIT_US = 30.0
_ACTIVITY = (k.KERNEL, k.MEMCPY, k.MEMSET)


def _launch_starts(trace: k.TraceColumns, lo: float, hi: float, corr: np.ndarray) -> np.ndarray:
    """For each correlation id in ``corr``: the start of the CPU runtime/driver call with that id within
    [lo, hi] (NaN when none)."""
    out = np.full(corr.size, np.nan)
    if trace.corr.size != trace.cat.size or not corr.size:
        return out
    i0, i1 = _slice(trace, lo, hi)
    rows = trace.rows(k.RUNTIME, k.DRIVER)[i0:i1] & (trace.corr[i0:i1] >= 0)
    ids, starts = trace.corr[i0:i1][rows], trace.start_us[i0:i1][rows]
    if not ids.size:
        return out
    order = np.argsort(ids, kind="stable")
    ids, starts = ids[order], starts[order]
    at = np.clip(np.searchsorted(ids, corr), 0, ids.size - 1)
    found = (ids[at] == corr) & (corr >= 0)
    out[found] = starts[at[found]]
    return out


def _slice(trace: k.TraceColumns, lo: float, hi: float) -> tuple[int, int]:
    """Rows starting within [lo, hi] (rows are sorted by start)."""
    return (int(np.searchsorted(trace.start_us, lo, "left")), int(np.searchsorted(trace.start_us, hi, "right")))


def idle_gaps(trace: k.TraceColumns, lo: float, hi: float) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
    """The in-window idle gaps of one profiling cycle [lo, hi] by category (``host_wait``, ``kernel_wait``,
    ``other``: the module docstring), each as (starts, ends) in time order, with ``idle`` all of them and
    ``window`` the cycle's active window as one interval; None without GPU activity. The step-time account clips them to the steps."""
    i0, i1 = _slice(trace, lo, hi)
    rows = trace.rows(*_ACTIVITY)[i0:i1]
    if not rows.any():
        return None
    starts, ends = trace.start_us[i0:i1][rows], ends_of(trace, slice(i0, i1))[rows]
    corr = trace.corr[i0:i1][rows] if trace.corr.size == trace.cat.size else np.full(starts.size, -1)
    order = np.argsort(starts, kind="stable")
    starts, ends, corr = starts[order], ends[order], corr[order]
    run_end = np.maximum.accumulate(ends)
    gaps = np.nonzero(starts[1:] > run_end[:-1])[0] + 1  # rows that start after an idle gap
    gap_start, gap_end = run_end[gaps - 1], starts[gaps]
    gap = gap_end - gap_start
    launched = _launch_starts(trace, lo, hi, corr[gaps])
    host = launched > gap_start  # NaN (launch unknown) compares False, as in HTA
    kernel = ~host & (gap < KERNEL_WAIT_US)
    return {"window": (starts[:1], run_end[-1:]), "idle": (gap_start, gap_end), "host_wait": (gap_start[host], gap_end[host]),
            "kernel_wait": (gap_start[kernel], gap_end[kernel]),
            "other": (gap_start[~host & ~kernel], gap_end[~host & ~kernel])}


def gpu_idle(trace: k.TraceColumns, cycles: list[tuple[float, float]]) -> dict:
    """Both idle figures (ms and shares) and the in-window split; summed over profiling cycles."""
    span = window = active = 0.0
    split = {"host_wait": 0.0, "kernel_wait": 0.0, "other": 0.0}
    for lo, hi in cycles:
        span += hi - lo
        gaps = idle_gaps(trace, lo, hi)
        if gaps is None:
            continue
        width = float(gaps["window"][1][0] - gaps["window"][0][0])
        window += width
        idle_here = float((gaps["idle"][1] - gaps["idle"][0]).sum())
        active += width - idle_here
        for key in split:
            split[key] += float((gaps[key][1] - gaps[key][0]).sum())
    if window <= 0:
        return {"has_gpu_activity": False, "span_ms": span / 1000.0}
    in_window_idle = window - active
    return {
        "has_gpu_activity": True,
        "span_ms": span / 1000.0,
        "active_ms": active / 1000.0,
        "trace_idle_ms": max(span - active, 0.0) / 1000.0,
        "trace_idle_share": max(span - active, 0.0) / span if span else None,
        "window_ms": window / 1000.0,
        "window_idle_ms": in_window_idle / 1000.0,
        "window_idle_share": in_window_idle / window,
        "window_idle_split_ms": {key: value / 1000.0 for key, value in split.items()},
        "kernel_wait_threshold_us": KERNEL_WAIT_US,
    }


def idle_per_stream(trace: k.TraceColumns, cycles: list[tuple[float, float]]) -> dict[str, dict]:
    """Idle time per CUDA stream (module docstring), ms, streams in first-activity order; each gap of a
    profiling cycle, from an operation's end (the latest end so far on the stream: an overlap there is no
    negative idle) to the next one's start; a cycle's first operation has no gap."""
    activity = trace.rows(*_ACTIVITY)
    sums: dict[int, np.ndarray] = {}  # stream -> [host, kernel, other, busy, operations]
    for lo, hi in cycles:
        i0, i1 = _slice(trace, lo, hi)
        rows = activity[i0:i1]
        if not rows.any():
            continue
        starts, ends = trace.start_us[i0:i1][rows], ends_of(trace, slice(i0, i1))[rows]
        stream = trace.tid[i0:i1][rows] if trace.tid.size == trace.cat.size else np.zeros(starts.size, np.int64)
        corr = trace.corr[i0:i1][rows] if trace.corr.size == trace.cat.size else np.full(starts.size, -1)
        launched = _launch_starts(trace, lo, hi, corr)
        for s in dict.fromkeys(stream.tolist()):
            pick = stream == s
            order = np.argsort(starts[pick], kind="stable")
            st, en, la = starts[pick][order], ends[pick][order], launched[pick][order]
            prev_end = np.maximum.accumulate(en)[:-1]
            gap = np.maximum(st[1:] - prev_end, 0.0)
            host = la[1:] > prev_end  # NaN (launch unknown) compares False, as in HTA
            kernel = ~host & (gap < KERNEL_WAIT_US)
            acc = sums.setdefault(int(s), np.zeros(5))
            acc += (gap[host].sum(), gap[kernel].sum(), gap[~host & ~kernel].sum(), (en - st).sum(), st.size)
    return {str(s): {"host_wait_ms": v[0] / 1000.0, "kernel_wait_ms": v[1] / 1000.0, "other_ms": v[2] / 1000.0,
                     "idle_ms": float(v[:3].sum()) / 1000.0, "busy_ms": v[3] / 1000.0, "operations": int(v[4])}
            for s, v in sums.items()}
