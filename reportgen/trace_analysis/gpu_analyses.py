"""What Holistic Trace Analysis (HTA) and TensorBoard's profiler show about a rank's GPU, computed here,
and the evidence the GPU causes read (``reportgen.diagnosis.gpu_causes``).

All on one rank's merged trace, times in µs internally, ms (or µs where a key says so) in the output:

* **communication-computation overlap** (HTA's ``get_comm_comp_overlap``): the share of the time a
  communication (NCCL) kernel runs during which a compute kernel also runs, on the union of streams;
  ``exposed`` communication is the rest (no compute beside it): what a step waits for;
* **overlap-aware kernel-type split** (HTA's kernel breakdown with overlaps): the GPU's busy time cut into
  disjoint pieces by which kinds run at once (compute, communication, memory = memcpy + memset);
* **kernel duration distribution** per kernel name (min / p50 / max / std), in ``analysis``'s top table;
* **launch statistics** (HTA's ``get_cuda_kernel_launch_stats``, its definitions): GPU activities shorter
  than the runtime call that launched them (matched by correlation id), launch calls longer than 50 µs,
  launch delays (activity start - launch call end) longer than 100 µs;
* **per-step exclusive breakdown** (TensorBoard's overview): each instant of a step counted once, in the
  first of compute kernel, memcpy, memset, communication, CUDA runtime, DataLoader, CPU operator, other
  that covers it (TensorBoard counts NCCL kernels as "Kernel"; here they are "Communication", so the
  exposed communication shows);
* **memory copies**: bytes, time and bandwidth by direction, pageable vs pinned host memory;
* **queue length** per stream (HTA's ``get_queue_length_summary``): operations launched and not yet started; and
  over one step (the median one), as HTA's ``get_queue_length_time_series`` draws it: a chart and its numbers;
* **tensor cores**: the device's compute capability (``deviceProperties``) and the share of compute kernel
  time in fp32 GEMM/convolution kernels (eligible for tensor cores with TF32 or AMP);
* **idle per stream** (HTA's ``get_idle_time_breakdown``): ``reportgen.trace_analysis.gpu_idle.idle_per_stream``;
* **critical path** of one step, HTA's summary of it: ``reportgen.trace_analysis.critical_path``;
* **frequent CUDA kernel sequences** per top-level operator (HTA's): ``reportgen.trace_analysis.kernel_patterns``;
* **host synchronisation**: blocking runtime calls (``cuda*Synchronize``, synchronous ``cudaMemcpy``), the
  operators they run in (``aten::item``, ``aten::nonzero``...), and each in-window GPU idle gap attributed
  once: while the host was in a pageable host-to-device copy (staging it, or blocked until it landed: a
  synchronisation that waited for the copy is the copy's own), after a synchronisation (the host waited for the GPU to drain, then had
  to refill it), else host wait / kernel wait / other as ``reportgen.trace_analysis.gpu_idle`` splits it.
"""

from __future__ import annotations

import re

import numpy as np

from reportgen.readers import trace_model as k
from reportgen.trace_analysis.classify import is_communication_kernel, kernel_precision, memory_op_kind
from reportgen.trace_analysis.critical_path import critical_path, pick_step
from reportgen.trace_analysis.gpu_idle import KERNEL_WAIT_US, idle_per_stream
from reportgen.trace_analysis.kernel_mix import launch_rows
from reportgen.trace_analysis.kernel_patterns import kernel_patterns, top_level_ops
from reportgen.intervals import merged
from reportgen.trace_analysis.regions import DATALOADER
from reportgen.trace_analysis.columns import ends_of, with_names

RUNTIME_CUTOFF_US = 50.0  # HTA's runtime_cutoff: a launch call longer than this is an outlier
LAUNCH_DELAY_CUTOFF_US = 100.0  # HTA's launch_delay_cutoff
# The runtime calls that enqueue one GPU operation each: CUDA's, and ROCm's HIP names for the same calls
LAUNCH_CALLS = frozenset(("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
                          "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
                          "hipMemcpyAsync", "hipMemsetAsync"))
# A CUDA-graph replay: one call enqueues every kernel of the graph (they share its correlation id)
GRAPH_CALLS = frozenset(("cudaGraphLaunch", "hipGraphLaunch"))
QUEUE_CALLS = LAUNCH_CALLS | GRAPH_CALLS | {"cuLaunchKernel"}  # HTA's runtime launch events for the queue length
SYNC_SLACK_US = 5.0  # a blocking call that started this long after the GPU went idle did not cause the gap
SYNC_CALL = re.compile(r"^(cu(da)?|hip)(Stream|Device|Event|Ctx)Synchronize|^(cuda|hip)Memcpy(2D|3D)?$|"
                      r"^cuMemcpy[A-Za-z]*(?<!Async)$")
SYNC_OPS = re.compile(r"^aten::(item|_local_scalar_dense|nonzero|is_nonzero|equal|masked_select|unique|_unique2|"
                      r"repeat_interleave|bincount)$")
# matrix-multiply and convolution kernels by family (cuBLAS/CUTLASS GEMMs, cuDNN convolutions and their
# data/weight gradients, attention): not a library's every kernel (cuDNN's batch norm, fbgemm's embeddings)
GEMM_CONV = re.compile(r"(?<!fb)gemm|conv|xmma|wgrad|dgrad|winograd|matmul|scudnn|hcudnn|fmha|flash_|attention", re.I)
TENSOR_CORE_PRECISIONS = ("fp8", "bf16", "fp16", "tf32", "int8")
_STEP = re.compile(r"^ProfilerStep#\d+$")
_CPU_COLLECTIVE = re.compile(r"^(nccl|gloo|c10d)[:_]|^record_param_comms$", re.I)
SPLIT_KINDS = ("compute only", "communication only", "memory only", "compute + communication",
               "compute + memory", "communication + memory", "compute + communication + memory")
QUEUE_BINS = 50  # slices of the step in the queue-length chart
QUEUE_STREAMS = 4
BREAKDOWN = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other")


def _ids(trace: k.TraceColumns, predicate) -> np.ndarray:
    return np.fromiter((i for i, n in enumerate(trace.names) if predicate(n)), dtype=np.int32)


def covered_points(intervals: tuple[np.ndarray, np.ndarray], points: np.ndarray) -> np.ndarray:
    """For each point: does a (merged, disjoint, sorted) interval cover it? Points in order (the pieces' midpoints
    of ``_segments`` and the step breakdown) are not searched one by one: each interval's bounds are found among
    the points and the runs between them repeated (~1 ms against ~5 for 180,000 points in 47,000 intervals); the
    same answer: a point is covered where it is at or past an interval's start and before its end."""
    s, e = intervals
    if not s.size:
        return np.zeros(points.size, bool)
    if points.size > 1 and bool((points[1:] >= points[:-1]).all()):
        bounds = np.empty(2 * s.size, np.int64)  # where each interval's points begin and end: nondecreasing
        bounds[0::2], bounds[1::2] = np.searchsorted(points, s, "left"), np.searchsorted(points, e, "left")
        return np.repeat(np.r_[np.tile([False, True], s.size), False], np.diff(np.r_[0, bounds, points.size]))
    at = np.searchsorted(s, points, "right") - 1
    ok = at >= 0
    out = np.zeros(points.size, bool)
    out[ok] = points[ok] < e[at[ok]]
    return out


def _segments(*sets: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The elementary pieces between every boundary of ``sets``: (starts, lengths)."""
    bounds = np.unique(np.concatenate([np.r_[s, e] for s, e in sets] or [np.zeros(0)]))
    return bounds[:-1], np.diff(bounds)


def _ms(us: float) -> float:
    return float(us) / 1000.0


def _step_index(steps: list[dict], at: np.ndarray) -> np.ndarray:
    """Index of the step whose interval holds each time (-1: none)."""
    if not steps:
        return np.full(at.size, -1)
    starts = np.array([s["start_us"] for s in steps])
    ends = starts + np.array([s["dur_us"] for s in steps])
    order = np.argsort(starts)
    i = np.searchsorted(starts[order], at, "right") - 1
    out = np.full(at.size, -1)
    ok = i >= 0
    cand = order[i[ok]]
    out[ok] = np.where(at[ok] <= ends[cand], cand, -1)
    return out


def gpu_analyses(trace: k.TraceColumns, steps: list[dict]) -> dict:
    """The analyses of the module docstring for one rank (``steps``: ``analysis.steps_of``)."""
    ends = trace.end_us
    kern = trace.rows(k.KERNEL)
    comm_ids = _ids(trace, is_communication_kernel)
    comm = kern & with_names(trace, comm_ids)
    compute = kern & ~comm
    memcpy, memset = trace.rows(k.MEMCPY), trace.rows(k.MEMSET)
    memory = memcpy | memset
    iv = {name: merged(trace.start_us[m], ends[m]) for name, m in
          (("compute", compute), ("comm", comm), ("memory", memory), ("memcpy", memcpy), ("memset", memset))}
    n_steps = len(steps)
    out: dict = {"steps": n_steps}
    out["overlap"] = {**_overlap(iv, steps), **_bandwidth(trace, comm)}
    out["kernel_type_split_ms"] = _split(iv)
    activity = trace.rows(k.KERNEL, k.MEMCPY, k.MEMSET)
    launches = _launches(trace, activity)  # once: three analyses pair the GPU operations with their launches
    out["launch"] = _launch(trace, kern, n_steps, activity, launches)
    out["memcpy"] = _memcpy(trace, memcpy, iv, n_steps)
    queues = _queue_series(trace, activity, launches)
    out["queue_length"] = _queue_length(queues)
    out["tensor_cores"] = _tensor_cores(trace, compute)
    sync, gaps = _sync_and_gaps(trace, steps, activity, launches)
    out["sync"] = sync
    out["idle_gaps_ms"] = gaps
    out["step_breakdown"] = _breakdown(trace, steps, iv)
    out["idle_per_stream"] = idle_per_stream(trace, _cycles(trace))
    out["critical_path"] = critical_path(trace, steps, _ids(trace, SYNC_CALL.match), _cycles(trace))
    out["kernel_patterns"] = kernel_patterns(trace, top_level_ops(trace, _ids(trace, _STEP.match)))
    out["queue_over_step"] = _queue_over_step(queues, pick_step(steps))
    return out


def _cycles(trace: k.TraceColumns) -> list[tuple[float, float]]:
    """The rank's profiling cycles (one span when the trace does not say)."""
    cycles = getattr(trace, "cycles", None)
    if cycles:
        return list(cycles)
    return [(float(trace.start_us.min()), float(trace.end_us.max()))] if trace.start_us.size else []


def _overlap(iv: dict, steps: list[dict]) -> dict:
    comm, compute = iv["comm"], iv["compute"]
    comm_us = float((comm[1] - comm[0]).sum())
    starts, lengths = _segments(comm, compute)
    mid = starts + lengths / 2 if starts.size else starts
    in_comm, in_compute = covered_points(comm, mid), covered_points(compute, mid)
    overlapped = float(lengths[in_comm & in_compute].sum())
    exposed_pieces = in_comm & ~in_compute
    exposed = float(lengths[exposed_pieces].sum())
    step_total = float(sum(s["dur_us"] for s in steps))
    in_steps = 0.0
    if steps and exposed_pieces.any():
        step_iv = merged(np.array([s["start_us"] for s in steps]), np.array([s["start_us"] + s["dur_us"] for s in steps]))
        in_steps = float(lengths[exposed_pieces & covered_points(step_iv, mid)].sum())
    return {
        "communication_ms": _ms(comm_us),
        "overlapped_ms": _ms(overlapped),
        "exposed_ms": _ms(exposed),
        "comm_comp_overlap_pct": 100.0 * overlapped / comm_us if comm_us else None,
        "exposed_in_steps_ms": _ms(in_steps),
        "exposed_step_share": in_steps / step_total if step_total and comm_us else None,
        "exposed_per_step_ms": _ms(in_steps) / len(steps) if steps and comm_us else None,
    }


def _bandwidth(trace: k.TraceColumns, comm: np.ndarray) -> dict:
    """Bandwidth of the collectives whose kernels say their message size (torch 2.1+: ``In msg nelems``,
    ``dtype``): algorithm bandwidth = bytes / kernel time; bus bandwidth as nccl-tests defines it, all-reduce
    x 2(n-1)/n, all-gather and reduce-scatter x (n-1)/n, others x 1, with n the job's world size."""
    sized = comm & (trace.nbytes > 0)
    if not sized.any():
        return {"message_bytes": None, "algbw_gb_s": None, "busbw_gb_s": None}
    n = trace.world_size if isinstance(trace.world_size, int) and trace.world_size > 1 else None
    nbytes, time_us, bus = 0.0, 0.0, 0.0
    for name in np.unique(trace.name[sized]):
        rows = sized & (trace.name == name)
        b, t = float(trace.nbytes[rows].sum()), float(trace.dur_us[rows].sum())
        label = trace.names[int(name)].lower().replace("_", "")
        factor = (2 * (n - 1) / n if "allreduce" in label else (n - 1) / n if "allgather" in label or
                  "reducescatter" in label else 1.0) if n else None
        nbytes, time_us = nbytes + b, time_us + t
        bus = bus + b * factor if factor is not None and bus is not None else None
    return {"message_bytes": nbytes, "algbw_gb_s": nbytes / (time_us * 1e3) if time_us > 0 else None,
            "busbw_gb_s": bus / (time_us * 1e3) if bus is not None and time_us > 0 else None}


def _split(iv: dict) -> dict:
    starts, lengths = _segments(iv["compute"], iv["comm"], iv["memory"])
    if not starts.size:
        return {kind: 0.0 for kind in SPLIT_KINDS}
    mid = starts + lengths / 2
    c, n, m = (covered_points(iv[key], mid) for key in ("compute", "comm", "memory"))
    pieces = {"compute only": c & ~n & ~m, "communication only": ~c & n & ~m, "memory only": ~c & ~n & m,
              "compute + communication": c & n & ~m, "compute + memory": c & ~n & m,
              "communication + memory": ~c & n & m, "compute + communication + memory": c & n & m}
    return {kind: _ms(lengths[pieces[kind]].sum()) for kind in SPLIT_KINDS}


def kernel_distribution(trace: k.TraceColumns, name_ids: np.ndarray) -> list[dict]:
    """min / quartiles / max / std of each kernel name in ``name_ids`` (µs; ``std_us`` the population std,
    ``sample_std_us`` pandas' default ddof=1, what HTA's ``get_gpu_kernel_breakdown`` shows)."""
    kern = trace.rows(k.KERNEL)
    kernel_names, kernel_durs = trace.name[kern], trace.dur_us[kern]  # once: the same rows, in the same order
    out = []
    for n in name_ids:
        d = kernel_durs[kernel_names == n]
        if not d.size:
            out.append({})
            continue
        p25, p50, p75 = np.percentile(d, [25, 50, 75])
        out.append({"min_us": float(d.min()), "p25_us": float(p25), "p50_us": float(p50), "p75_us": float(p75),
                    "max_us": float(d.max()),
                    "std_us": float(d.std()), "sample_std_us": float(d.std(ddof=1)) if d.size > 1 else 0.0})
    return out


def _launches(trace: k.TraceColumns, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row in ``rows`` (a mask): the start, duration and name of its launching runtime/driver
    call (matched by correlation id; NaN / -1 when not in the trace)."""
    corr = trace.corr[rows] if trace.corr.size == trace.cat.size else np.full(int(rows.sum()), -1)
    starts, durs, names = np.full(corr.size, np.nan), np.full(corr.size, np.nan), np.full(corr.size, -1)
    calls = trace.rows(k.RUNTIME, k.DRIVER) & (trace.corr >= 0) if trace.corr.size == trace.cat.size else None
    if calls is None or not calls.any() or not corr.size:
        return starts, durs, names
    ids = trace.corr[calls]
    order = np.argsort(ids, kind="stable")
    ids = ids[order]
    at = np.clip(np.searchsorted(ids, corr), 0, ids.size - 1)
    found = (ids[at] == corr) & (corr >= 0)
    pick = order[at[found]]
    starts[found] = trace.start_us[calls][pick]
    durs[found] = trace.dur_us[calls][pick]
    names[found] = trace.name[calls][pick]
    return starts, durs, names


def _launch(trace: k.TraceColumns, kern: np.ndarray, n_steps: int, activity: np.ndarray,
            launches: tuple[np.ndarray, np.ndarray, np.ndarray]) -> dict:
    """HTA's launch statistics: every GPU activity (kernel, memcpy, memset) paired by correlation id with the
    ``cudaLaunchKernel(ExC)`` / ``cudaMemcpyAsync`` / ``cudaMemsetAsync`` call that enqueued it; short: the
    activity is shorter than that call (itself not over the cutoff); launch delay: from the call's end to the
    activity's start, negative clipped to 0. ROCm's HIP calls count as their CUDA names. Kernels a CUDA-graph
    replay (``cudaGraphLaunch``) enqueued are counted apart (``graph_launched``): one call launches them all, so
    neither their launch time nor their delay is one call's."""
    starts, durs, names = launches  # _launches of ``activity``, the GPU operations
    launchers = _ids(trace, LAUNCH_CALLS.__contains__)
    paired = ~np.isnan(starts) & np.isin(names, launchers)
    gd, gs = trace.dur_us[activity][paired], trace.start_us[activity][paired]
    cd = durs[paired]
    delay = np.clip(gs - (starts[paired] + cd), 0.0, None)
    graph = ~np.isnan(starts) & np.isin(names, _ids(trace, GRAPH_CALLS.__contains__))
    kd = trace.dur_us[kern]
    kernel_calls = durs[(trace.cat[activity] == k.KERNEL) & ~graph] if activity.any() else durs
    short = int(((cd <= RUNTIME_CUTOFF_US) & (gd < cd)).sum())
    return {
        "kernels": int(kern.sum()),
        "kernels_per_step": int(kern.sum()) / n_steps if n_steps else None,
        "with_launch": int(paired.sum()),
        "shorter_than_launch": short,
        "shorter_than_launch_share": short / int(paired.sum()) if paired.any() else None,
        "kernel_p50_us": float(np.median(kd)) if kd.size else None,
        "launch_p50_us": float(np.nanmedian(kernel_calls)) if np.isfinite(kernel_calls).any() else None,
        "runtime_over_cutoff": int((cd > RUNTIME_CUTOFF_US).sum()),
        "runtime_cutoff_us": RUNTIME_CUTOFF_US,
        "launch_delay_us": ({"mean": float(delay.mean()), "p50": float(np.median(delay)),
                             "p95": float(np.percentile(delay, 95)), "max": float(delay.max())} if delay.size else {}),
        "launch_delay_over_cutoff": int((delay > LAUNCH_DELAY_CUTOFF_US).sum()),
        "launch_delay_cutoff_us": LAUNCH_DELAY_CUTOFF_US,
        "graph_launched": int(graph.sum()),  # operations a CUDA-graph replay enqueued
        "graph_launched_share": int(graph.sum()) / int(activity.sum()) if activity.any() else None,
        # the one call over the cutoff, where only one is: a kernel's first launch loading its code is such a
        # one-off (warm-up, not every step's launch overhead); listed only then, so other traces' figures stay as
        # they were
        **({"one_over_cutoff_us": float(cd[cd > RUNTIME_CUTOFF_US][0])} if int((cd > RUNTIME_CUTOFF_US).sum()) == 1
           else {}),
    }


def _queue_series(trace: k.TraceColumns, activity: np.ndarray,
                  launches: tuple[np.ndarray, np.ndarray, np.ndarray]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """HTA's queue length per stream: operations launched and not yet started (+1 at the launch call's start,
    -1 at the GPU operation's start; a launch and a start at the same instant: the launch first), as its
    (time, value) at each change, in time order."""
    starts, _, names = launches  # _launches of ``activity``, the GPU operations
    ok = ~np.isnan(starts) & np.isin(names, _ids(trace, QUEUE_CALLS.__contains__))
    stream = trace.tid[activity][ok]
    launched, started = starts[ok], trace.start_us[activity][ok]
    out = {}
    for s in np.unique(stream):
        pick = stream == s
        when = np.r_[launched[pick], started[pick]]
        step = np.r_[np.ones(int(pick.sum())), -np.ones(int(pick.sum()))]
        order = np.lexsort((-step, when))
        out[int(s)] = (when[order], np.cumsum(step[order]))
    return out


def _queue_length(series: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict:
    """The queue length summarised over its values at each change as HTA's ``get_queue_length_summary`` (count,
    mean, p50, max)."""
    return {str(s): {"count": int(queue.size), "mean": float(queue.mean()), "p50": float(np.median(queue)),
                     "max": int(queue.max())} for s, (_, queue) in series.items()}


def _queue_over_step(series: dict[int, tuple[np.ndarray, np.ndarray]], step: dict | None) -> dict | None:
    """The queue length over one step (``critical_path.pick_step``'s, the median one) for the streams with the
    most changes in it (at most ``QUEUE_STREAMS``): its time-weighted mean, maximum and the share of the step with
    nothing queued, and its maximum in each of ``QUEUE_BINS`` equal slices of the step (the chart)."""
    if step is None or step["dur_us"] <= 0:
        return None
    lo, hi = step["start_us"], step["start_us"] + step["dur_us"]
    edges = np.linspace(lo, hi, QUEUE_BINS + 1)
    rows = []
    for s, (when, queue) in series.items():
        inside = (when > lo) & (when < hi)
        before = int(np.searchsorted(when, lo, "right")) - 1
        values = np.r_[queue[before] if before >= 0 else 0.0, queue[inside]]
        bounds = np.r_[lo, when[inside], hi]
        length = np.diff(bounds)
        piece_at = np.searchsorted(bounds, edges[:-1], "right") - 1
        piece_end = np.searchsorted(bounds, edges[1:], "left") - 1
        bins = [int(values[a:max(b, a) + 1].max()) for a, b in zip(piece_at.tolist(), piece_end.tolist())]
        rows.append((int(inside.sum()), str(s), {
            "changes": int(inside.sum()), "mean": float((values * length).sum() / (hi - lo)),
            "max": int(values.max()), "empty_share": float(length[values == 0].sum() / (hi - lo)),
            "bin_max": bins}))
    rows.sort(key=lambda r: -r[0])
    return {"step": step["step"], "step_ms": step["dur_us"] / 1000.0, "bin_ms": step["dur_us"] / 1000.0 / QUEUE_BINS,
            "streams": {s: row for _, s, row in rows[:QUEUE_STREAMS] if row["changes"] or row["max"]}}


def _memcpy(trace: k.TraceColumns, memcpy: np.ndarray, iv: dict, n_steps: int) -> dict:
    by: dict[str, dict] = {}
    pageable = np.zeros(trace.cat.size, bool)
    for n in np.unique(trace.name[memcpy]):
        label = trace.names[int(n)]
        rows = memcpy & (trace.name == n)
        kind = memory_op_kind(label, False)
        host = "pageable" if "pageable" in label.lower() else "pinned" if "pinned" in label.lower() else ""
        key = f"{kind} {host}".strip()
        entry = by.setdefault(key, {"kind": kind, "host_memory": host or None, "count": 0, "bytes": 0.0, "time_ms": 0.0})
        entry["count"] += int(rows.sum())
        entry["bytes"] += float(trace.nbytes[rows].sum())
        entry["time_ms"] += _ms(trace.dur_us[rows].sum())
        if host == "pageable" and kind == "HtoD":
            pageable |= rows
    for entry in by.values():
        entry["gb_per_s"] = entry["bytes"] / (entry["time_ms"] * 1e6) if entry["time_ms"] > 0 else None
    page_iv = merged(trace.start_us[pageable], ends_of(trace, pageable))
    starts, lengths = _segments(page_iv, iv["compute"])
    mid = starts + lengths / 2 if starts.size else starts
    exposed = (float(lengths[covered_points(page_iv, mid) & ~covered_points(iv["compute"], mid)].sum())
               if starts.size else 0.0)
    nbytes, time_us = float(trace.nbytes[pageable].sum()), float(trace.dur_us[pageable].sum())
    return {"by_kind": sorted(by.values(), key=lambda e: -e["time_ms"]),
            "pageable_htod": {"count": int(pageable.sum()), "bytes": nbytes, "time_ms": _ms(time_us),
                              "exposed_ms": _ms(exposed),
                              "bytes_per_step": nbytes / n_steps if n_steps else None,
                              "gb_per_s": nbytes / (time_us * 1e3) if time_us > 0 else None}}


def _tensor_cores(trace: k.TraceColumns, compute: np.ndarray) -> dict:
    majors = [c for c in getattr(trace, "compute_capability", []) or [] if c is not None]
    capability = max(majors) if majors else None
    total = float(trace.dur_us[compute].sum())
    eligible = tensor_core = 0.0
    if total:
        uniq, inverse = np.unique(trace.name[compute], return_inverse=True)
        per_name = np.bincount(inverse, weights=trace.dur_us[compute])
        for n, t in zip(uniq, per_name):
            label = trace.names[int(n)]
            if not GEMM_CONV.search(label):
                continue
            precision = kernel_precision(label)
            if precision == "fp32":
                eligible += float(t)
            elif precision in TENSOR_CORE_PRECISIONS:
                tensor_core += float(t)
    return {"compute_capability": capability,
            "has_tensor_cores": None if capability is None else capability >= 7.0,
            "compute_kernel_ms": _ms(total),
            "fp32_gemm_conv_ms": _ms(eligible),
            "tensor_core_gemm_conv_ms": _ms(tensor_core),
            "eligible_share": eligible / total if total else None}


def pageable_copies(trace: k.TraceColumns) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """The host-to-device copies from pageable memory (a mask of the trace's rows) and the host's time in them, as
    merged intervals: each copy's launching call joined with the innermost operator around it on its thread
    (``aten::copy_``, which stages the pageable memory and, for a synchronous copy, waits for it to land: torch's
    ``cudaStreamSynchronize`` after ``cudaMemcpyAsync``, or a synchronous ``cudaMemcpy``; not the operators around
    that, which may be a DataLoader's ``__next__`` whose whole wait for data would then pass for the copy's). A GPU idle gap that
    begins while the host is in such a copy is the copy's: pinned memory and ``non_blocking=True`` would have let
    the host go on (the GPU causes' precedence, docs/diagnosis.md)."""
    names = _ids(trace, lambda n: "pageable" in n.lower() and "htod" in n.lower())
    copies = trace.rows(k.MEMCPY) & with_names(trace, names)
    if not copies.any():
        return copies, (np.zeros(0), np.zeros(0))
    calls = launch_rows(trace, np.nonzero(copies)[0])
    calls = calls[calls >= 0]
    inner = [call if around is None else around for (_, around), call in zip(_enclosing_rows(trace, calls), calls)]
    spans = np.array(inner + list(calls), int)
    return copies, merged(trace.start_us[spans], ends_of(trace, spans))


def _enclosing_rows(trace: k.TraceColumns, calls: np.ndarray) -> list[tuple[int | None, int | None]]:
    """For each CPU call (row indices): the outermost and innermost ``cpu_op`` rows around it on its thread (None
    where none)."""
    ops = trace.rows(k.CPU_OP) & ~with_names(trace, _ids(trace, _STEP.match))
    out: list[tuple[int | None, int | None]] = []
    by_tid: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    same = trace.tid.size == trace.cat.size
    ends = trace.end_us  # once: each call computed it anew (~0.2 ms a time)
    for i in calls:
        t0, t1 = trace.start_us[i], ends[i]
        tid = int(trace.tid[i]) if same else 0
        if tid not in by_tid:
            pick = np.nonzero(ops & (trace.tid == tid) if same else ops)[0]
            by_tid[tid] = (trace.start_us[pick], ends[pick], pick)
        s, e, rows = by_tid[tid]
        at = int(np.searchsorted(s, t0, "right"))
        inner = outer = None
        for j in range(at - 1, max(at - 64, -1), -1):
            if e[j] >= t1:
                outer = int(rows[j])
                inner = outer if inner is None else inner
        out.append((outer, inner))
    return out


def _enclosing(trace: k.TraceColumns, rows: np.ndarray) -> list[tuple[str | None, str | None]]:
    """For each CPU call in ``rows``: (outermost, innermost) ``cpu_op`` around it on its thread."""
    def name(row: int | None) -> str | None:
        return None if row is None else trace.names[int(trace.name[row])]
    return [(name(outer), name(inner)) for outer, inner in _enclosing_rows(trace, np.nonzero(rows)[0])]


def _sync_and_gaps(trace: k.TraceColumns, steps: list[dict], activity: np.ndarray,
                   launches: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[dict, dict]:
    """Blocking calls, and each in-window idle gap attributed once (module docstring); ``launches``:
    ``_launches`` of ``activity``, the GPU operations."""
    runtime = trace.rows(k.RUNTIME, k.DRIVER)
    sync_rows = runtime & with_names(trace, _ids(trace, SYNC_CALL.match))
    positions = np.nonzero(activity)[0]  # each GPU operation's row, in the order of ``launches``
    by_end = np.argsort(ends_of(trace, sync_rows), kind="stable")
    sync_end, sync_start = ends_of(trace, sync_rows)[by_end], trace.start_us[sync_rows][by_end]
    gaps = {"after_sync": 0.0, "after_pageable_copy": 0.0, "host_wait": 0.0, "kernel_wait": 0.0, "other": 0.0}
    per_step_sync_gaps: dict[int, list[float]] = {}
    cycles = _cycles(trace)
    pageable_names = _ids(trace, lambda n: "pageable" in n.lower() and "htod" in n.lower())
    _, in_copy = pageable_copies(trace)
    for lo, hi in cycles:
        i0, i1 = int(np.searchsorted(trace.start_us, lo, "left")), int(np.searchsorted(trace.start_us, hi, "right"))
        rows = np.zeros(trace.cat.size, bool)
        rows[i0:i1] = activity[i0:i1]
        if not rows.any():
            continue
        s, e = trace.start_us[rows], ends_of(trace, rows)
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
        names = trace.name[rows][order]
        run_end = np.maximum.accumulate(e)
        # which activity set the running end (the one after which the GPU went idle)
        last = np.maximum.accumulate(np.where(e >= run_end, np.arange(s.size), 0))
        at = np.nonzero(s[1:] > run_end[:-1])[0] + 1
        if not at.size:
            continue
        g0, g1 = run_end[at - 1], s[at]
        gap = g1 - g0
        launched = launches[0][np.searchsorted(positions, i0):np.searchsorted(positions, i1)]  # rows' own
        launched = launched[order][at]
        after_sync = np.zeros(at.size, bool)
        if sync_end.size:  # a blocking call under way when the GPU went idle, returning before it resumed
            first = np.minimum(np.searchsorted(sync_end, g0, "left"), sync_end.size - 1)
            after_sync = (sync_end[first] >= g0) & (sync_end[first] <= g1) & (sync_start[first] <= g0 + SYNC_SLACK_US)
        # the GPU went idle while the host was in a pageable copy (staging it, or blocked until it landed): the
        # copy's, before any synchronisation's (a synchronisation that waited for the copy is the copy's own)
        after_copy = covered_points(in_copy, g0) | (np.isin(names[last[at - 1]], pageable_names) & after_sync)
        after_sync &= ~after_copy
        host = ~after_sync & ~after_copy & (launched > g0)
        kernel = ~after_sync & ~after_copy & ~host & (gap < KERNEL_WAIT_US)
        gaps["after_sync"] += float(gap[after_sync].sum())
        gaps["after_pageable_copy"] += float(gap[after_copy].sum())
        gaps["host_wait"] += float(gap[host].sum())
        gaps["kernel_wait"] += float(gap[kernel].sum())
        gaps["other"] += float(gap[~after_sync & ~after_copy & ~host & ~kernel].sum())
        where = _step_index(steps, g0[after_sync])
        for step, length in zip(where, gap[after_sync]):
            per_step_sync_gaps.setdefault(int(step), []).append(float(length))
    # one synchronisation per step (loss.item()) is normal: the largest gap after one, per step, is left out
    beyond_one = sum(sum(v) - max(v) for step, v in per_step_sync_gaps.items() if step >= 0)
    n_steps = len(steps)
    enclosing = _enclosing(trace, sync_rows)
    callers: dict[str, int] = {}
    for outer, inner in enclosing:
        label = outer or "(no operator: a direct CUDA call)"
        if inner and inner != outer:
            label = f"{outer} > {inner}"
        callers[label] = callers.get(label, 0) + 1
    in_steps = _step_index(steps, trace.start_us[sync_rows]) >= 0 if steps else np.zeros(int(sync_rows.sum()), bool)
    sync_ops = trace.rows(k.CPU_OP) & with_names(trace, _ids(trace, SYNC_OPS.match))
    op_counts: dict[str, int] = {}
    for n in trace.name[sync_ops]:
        op_counts[trace.names[int(n)]] = op_counts.get(trace.names[int(n)], 0) + 1
    calls: dict[str, int] = {}
    for n in trace.name[sync_rows]:
        calls[trace.names[int(n)]] = calls.get(trace.names[int(n)], 0) + 1
    sync = {
        "calls": int(sync_rows.sum()),
        "calls_in_steps": int(in_steps.sum()),
        "per_step": int(in_steps.sum()) / n_steps if n_steps else None,
        "blocked_ms": _ms(trace.dur_us[sync_rows].sum()),
        "by_call": dict(sorted(calls.items(), key=lambda kv: -kv[1])),
        "by_operator": dict(sorted(callers.items(), key=lambda kv: -kv[1])[:10]),
        "sync_operators": dict(sorted(op_counts.items(), key=lambda kv: -kv[1])),
        "idle_after_ms": _ms(gaps["after_sync"]),
        "idle_after_beyond_one_per_step_ms": _ms(beyond_one),
        "idle_after_beyond_one_per_step_per_step_ms": _ms(beyond_one) / n_steps if n_steps else None,
    }
    return sync, {key: _ms(v) for key, v in gaps.items()}


def _breakdown(trace: k.TraceColumns, steps: list[dict], iv: dict) -> dict:
    """TensorBoard's exclusive step-time breakdown per step (module docstring); ms."""
    if not steps:
        return {"categories": list(BREAKDOWN), "steps": [], "total_ms": {}}
    cpu = ~trace.rows(*k.GPU_CATEGORIES, k.GPU_ANNOTATION)
    step_ids = _ids(trace, _STEP.match)
    collective = cpu & with_names(trace, _ids(trace, _CPU_COLLECTIVE.search))
    comm_rows = (trace.start_us[collective], ends_of(trace, collective))
    sets = [iv["compute"], iv["memcpy"], iv["memset"],
            merged(np.r_[iv["comm"][0], comm_rows[0]], np.r_[iv["comm"][1], comm_rows[1]]),
            merged(trace.start_us[trace.rows(k.RUNTIME, k.DRIVER)], ends_of(trace, trace.rows(k.RUNTIME, k.DRIVER)))]
    loader = cpu & with_names(trace, _ids(trace, DATALOADER.search))
    sets.append(merged(trace.start_us[loader], ends_of(trace, loader)))
    ops = cpu & trace.rows(k.CPU_OP) & ~with_names(trace, step_ids) & ~loader
    sets.append(merged(trace.start_us[ops], ends_of(trace, ops)))
    bounds = [s for s, _ in sets] + [e for _, e in sets]
    step_s = np.array([s["start_us"] for s in steps])
    step_e = step_s + np.array([s["dur_us"] for s in steps])
    points = np.unique(np.concatenate(bounds + [step_s, step_e]))
    starts, lengths = points[:-1], np.diff(points)
    mid = starts + lengths / 2
    category = np.full(mid.size, len(BREAKDOWN) - 1)  # other
    for i in range(len(sets) - 1, -1, -1):  # the first category that covers a piece wins
        category[covered_points(sets[i], mid)] = i
    rows = []
    totals = np.zeros(len(BREAKDOWN))
    for step, lo, hi in zip(steps, step_s, step_e):
        a, b = np.searchsorted(starts, lo, "left"), np.searchsorted(starts, hi, "left")
        per = np.bincount(category[a:b], weights=lengths[a:b], minlength=len(BREAKDOWN))
        totals += per
        rows.append({"step": step["step"], **{c: _ms(v) for c, v in zip(BREAKDOWN, per)}})
    return {"categories": list(BREAKDOWN), "steps": rows[:500], "total_ms": {c: _ms(v) for c, v in zip(BREAKDOWN, totals)}}
