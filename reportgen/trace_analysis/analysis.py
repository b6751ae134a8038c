"""Per-rank analysis of Kineto traces and the comparison of ranks (one job = all rank files).

Definitions (also in docs/beyond-sagemaker.md):

* **Rank**: the files of one process (torch writes one per profiling cycle), merged
  (``reportgen.trace_analysis.ranks``).
* **Trace span**: first start to last end over every complete event, summed over the rank's
  profiling cycles (the unprofiled time between cycles never counts).
* **GPU active**: length of the union of all GPU activity intervals (kernels, memcpy, memset, sync)
  on any stream of the rank; **GPU idle** = span - active. Idle within the GPU's active window and
  its split into host wait / kernel wait / other: ``reportgen.trace_analysis.gpu_idle``.
* **Kernel time**: sum of kernel durations (overlapping streams are counted twice, as in Kineto's
  own kernel view); a kernel's launches = its number of kernel events.
* **CPU operators**: ``cpu_op`` events (``Operator`` in 2021 traces) other than ``ProfilerStep#N``,
  ranked by total *inclusive* time (a parent's time includes its children's).
* **Steps**: ``ProfilerStep#N`` annotations on the CPU side, cut at the profiler's own span; without any,
  between consecutive optimizer steps (``reportgen.trace_analysis.step_marks``).
* **Data loading** and **collectives**: outermost intervals per thread, never summed nested events
  (``reportgen.trace_analysis.regions``).
* **Straggler**: ``reportgen.trace_analysis.straggler`` (collective wait first, step times otherwise).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from reportgen.readers import trace_model as k
from reportgen.trace_analysis.columns import with_names
from reportgen.trace_analysis import regions
from reportgen.trace_analysis.account import step_account
from reportgen.trace_analysis.classify import PRECISIONS, is_communication_kernel, kernel_precision, memory_op_kind
from reportgen.trace_analysis.gpu_analyses import gpu_analyses, kernel_distribution
from reportgen.trace_analysis.flops import flops_analysis
from reportgen.trace_analysis.gpu_idle import gpu_idle
from reportgen.trace_analysis.memory import memory_analysis
from reportgen.trace_analysis.step_marks import PROFILER_SPAN, STEP, profiled_steps
from reportgen.trace_analysis.straggler import find_straggler

TOP_KERNELS = 15
TOP_OPS = 15
_STEP = STEP  # the step annotations (step_marks), left out of the operators


def union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length covered by the union of [start, end) intervals (floats)."""
    return regions.length(starts, ends)


def _by_name(trace: k.TraceColumns, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(name index, total µs, count) per distinct name among the rows in ``mask``, largest total first."""
    idx = trace.name[mask]
    if idx.size == 0:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64)
    if idx.min() >= 0:  # name ids as they are (no sort of 150,000 ids): the same sums, added in the same order
        counts = np.bincount(idx)
        uniq = np.nonzero(counts)[0]
        totals, counts = np.bincount(idx, weights=trace.dur_us[mask])[uniq], counts[uniq]
    else:
        uniq, inverse = np.unique(idx, return_inverse=True)
        totals = np.bincount(inverse, weights=trace.dur_us[mask])
        counts = np.bincount(inverse)
    order = np.lexsort((uniq, -totals))  # by total, ties by first-seen name
    return uniq[order], totals[order], counts[order]


def _stats(values: np.ndarray) -> dict:
    if values.size == 0:
        return {}
    p99, p95, p50 = np.percentile(values, [99, 95, 50])
    return {"mean": float(values.mean()), "max": float(values.max()), "p99": float(p99), "p95": float(p95),
            "p50": float(p50), "min": float(values.min()), "std": float(values.std())}


def steps_of(trace: k.TraceColumns) -> list[dict]:
    """The rank's profiled steps in time order (``step_marks.profiled_steps``: ProfilerStep#N, else between
    optimizer steps)."""
    return profiled_steps(trace)[0]


def unread_events(trace: k.TraceColumns) -> str | None:
    """A Data-quality note on the complete events of categories no analysis reads (an accelerator other than
    CUDA / ROCm: MTIA's ``mtia_ccp_events`` and ``mtia_runtime``), the most frequent names first; None when there
    are none. Kineto's own span of a profiling cycle is read (``step_marks``), not counted."""
    rows = (trace.cat == k.OTHER) & ~with_names(trace, np.fromiter(
        (i for i, n in enumerate(trace.names) if PROFILER_SPAN.match(n)), dtype=np.int32))
    if not rows.any():
        return None
    names, counts = np.unique(trace.name[rows], return_counts=True)
    top = sorted(zip(counts.tolist(), (trace.names[int(n)] for n in names)), key=lambda x: (-x[0], x[1]))[:3]
    return (f"{int(rows.sum()):,} events of categories reportgen does not analyse (an accelerator or runtime other "
            f"than CUDA / ROCm?), e.g. {', '.join(f'{name[:60]} x{count:,}' for count, name in top)}: left out of "
            "every figure, their device time too")


def analyze_trace(trace: k.TraceColumns) -> dict:
    """Everything the report shows about one rank, in ms unless a key says otherwise."""
    ends = trace.end_us
    span_start = float(trace.start_us.min()) if trace.start_us.size else 0.0
    span_end = float(ends.max()) if ends.size else 0.0
    cycles = list(getattr(trace, "cycles", None) or ([(span_start, span_end)] if ends.size else []))
    span = float(sum(hi - lo for lo, hi in cycles))
    gpu = trace.rows(*k.GPU_CATEGORIES)
    active = union_length(trace.start_us[gpu], ends[gpu])
    kernels = trace.rows(k.KERNEL)

    # Kernels: top by total time, with launches; communication vs compute; precision.
    names, totals, counts = _by_name(trace, kernels)
    kernel_total = float(trace.dur_us[kernels].sum())
    top = [{"name": trace.names[n], "total_ms": t / 1000.0, "launches": int(c), "mean_us": t / c,
            "pct": 100.0 * t / kernel_total if kernel_total else 0.0, **spread}
           for n, t, c, spread in zip(names[:TOP_KERNELS], totals[:TOP_KERNELS], counts[:TOP_KERNELS],
                                      kernel_distribution(trace, names[:TOP_KERNELS]))]
    comm = 0.0
    precision = defaultdict(float)
    for n, t in zip(names, totals):
        label = trace.names[n]
        if is_communication_kernel(label):
            comm += t
        else:
            precision[kernel_precision(label)] += t
    if comm:
        precision["communication (NCCL)"] = comm

    def total(cat):
        return float(trace.dur_us[trace.rows(cat)].sum()) / 1000.0

    mix = {"kernels (compute)": (kernel_total - comm) / 1000.0, "kernels (communication)": comm / 1000.0,
           "memcpy": total(k.MEMCPY), "memset": total(k.MEMSET), "sync": total(k.SYNC)}

    # Memory operations by kind.
    mem_rows = trace.rows(k.MEMCPY, k.MEMSET)
    memory = defaultdict(lambda: {"count": 0, "total_ms": 0.0, "bytes": 0.0})
    for n, c, d, b in zip(trace.name[mem_rows], trace.cat[mem_rows], trace.dur_us[mem_rows], trace.nbytes[mem_rows]):
        entry = memory[memory_op_kind(trace.names[n], c == k.MEMSET)]
        entry["count"] += 1
        entry["total_ms"] += d / 1000.0
        entry["bytes"] += b
    memory_ops = [{"kind": kind, **v} for kind, v in sorted(memory.items(), key=lambda kv: -kv[1]["total_ms"])]

    # CPU operators (inclusive), excluding the step annotations.
    step_names = np.fromiter((i for i, n in enumerate(trace.names) if _STEP.match(n)), dtype=np.int32)
    ops = trace.rows(k.CPU_OP) & ~with_names(trace, step_names)
    onames, ototals, ocounts = _by_name(trace, ops)
    top_ops = [{"name": trace.names[n], "total_ms": t / 1000.0, "calls": int(c), "mean_us": t / c}
               for n, t, c in zip(onames[:TOP_OPS], ototals[:TOP_OPS], ocounts[:TOP_OPS])]

    steps, steps_from = profiled_steps(trace)
    unread = unread_events(trace)
    data_notes = [*getattr(trace, "data_notes", ()), *([steps_from] if steps_from else []), *([unread] if unread else [])]
    step_ms = np.array([s["dur_us"] / 1000.0 for s in steps])
    hist_counts, hist_edges = (np.histogram(step_ms, bins=min(20, max(1, len(step_ms)))) if len(step_ms)
                               else (np.zeros(0), np.zeros(0)))
    idle = gpu_idle(trace, cycles)
    memory = memory_analysis(trace, steps)
    flops = flops_analysis(trace, steps, {p: precision[p] / 1000.0 for p in PRECISIONS}, bool(gpu.any()))
    return {
        "file": trace.path.name,
        "files": list(getattr(trace, "files", None) or [trace.path.name]),
        "cycles": len(cycles),
        "workers": list(getattr(trace, "workers", None) or []),
        "rank": trace.rank,
        "world_size": trace.world_size,
        "backend": trace.backend,
        "devices": trace.devices,
        "gpu_ids": sorted(int(d) for d in np.unique(trace.device[gpu]) if d >= 0),
        "time_unit": trace.time_unit,
        "complete": trace.complete,
        "events": int(trace.cat.size),
        "start_us": span_start,
        "end_us": span_end,
        "span_ms": span / 1000.0,
        "gpu": {"active_ms": active / 1000.0, "idle_ms": max(span - active, 0.0) / 1000.0,
                "active_pct": 100.0 * active / span if span else 0.0, "has_gpu_activity": bool(gpu.any()),
                **{key: idle[key] for key in ("window_ms", "window_idle_ms", "window_idle_share",
                                              "window_idle_split_ms", "kernel_wait_threshold_us") if key in idle}},
        "gpu_mix_ms": mix,
        "kernels": {"total_ms": kernel_total / 1000.0, "count": int(kernels.sum()), "distinct": int(names.size),
                    "top": top},
        "precision_ms": {p: precision[p] / 1000.0 for p in (*PRECISIONS, "communication (NCCL)") if precision.get(p)},
        "memory_ops": memory_ops,
        "cpu_ops": {"count": int(ops.sum()), "distinct": int(onames.size), "top": top_ops},
        "steps": [{"step": s["step"], "start_ms": (s["start_us"] - span_start) / 1000.0, "dur_ms": s["dur_us"] / 1000.0}
                  for s in steps],
        "step_stats_ms": _stats(step_ms),
        "step_hist": {"counts": [int(c) for c in hist_counts], "edges": [float(e) for e in hist_edges]},
        "dataloader": regions.dataloader(trace, steps),
        "collectives": regions.collectives(trace, steps),
        "gpu_analysis": gpu_analyses(trace, steps) if gpu.any() else None,
        "account": step_account(trace, steps),
        **({"data_notes": data_notes} if data_notes else {}),  # steps cut or not annotated: Data quality says so
        **({"memory": memory} if memory is not None else {}),  # only with memory events: other outputs unchanged
        **({"flops": flops} if flops is not None else {}),  # only with FLOP counts
    }


def totals_by_name(trace: k.TraceColumns) -> dict[str, dict[str, tuple[float, int]]]:
    """Every distinct kernel name and CPU-operator name of the rank (not only its top) with its total µs
    and count: what an exact job-wide top-k needs (``reportgen.trace_analysis.job``). Same rows as
    :func:`analyze_trace` counts (CPU operators without the ``ProfilerStep#N`` annotations)."""
    step_names = np.fromiter((i for i, n in enumerate(trace.names) if _STEP.match(n)), dtype=np.int32)
    out = {}
    for key, mask in (("kernels", trace.rows(k.KERNEL)),
                      ("cpu_ops", trace.rows(k.CPU_OP) & ~with_names(trace, step_names))):
        names, totals, counts = _by_name(trace, mask)
        out[key] = {trace.names[n]: (float(t), int(c)) for n, t, c in zip(names, totals, counts)}
    return out


def compare_ranks(ranks: dict[str, dict]) -> dict:
    """Ranks side by side: who holds the others back, how it was told, and by how much."""
    return find_straggler(ranks)
