"""The most frequent CUDA kernel sequences per operator (HTA 0.5's ``get_frequent_cuda_kernel_sequences``), our own
construction of HTA's definition:

an operator instance's sequence is its name followed by the GPU operations (kernels, memcpy, memset) that the
runtime calls nested in it launched (matched by correlation id), in the order they started on the GPU; equal
sequences are counted, with the GPU time of their operations and the CPU time of their operators. HTA asks for one
operator name and takes its shallowest instances; the report takes every top-level ``cpu_op`` of each thread (not
nested in another one), so each launch is counted once, under the outermost operator that caused it
(``roots``: any other choice of instances, as HTA's in ``tests/integration/trace_analysis/test_hta_kernel_patterns.py``). Sequences of
fewer than ``MIN_LENGTH`` operations are left out (HTA's ``min_pattern_len``).
"""

from __future__ import annotations

import numpy as np

from reportgen.readers import trace_model as k
from reportgen.trace_analysis.columns import with_names
from reportgen.trace_analysis.event_order import nesting_order

MIN_LENGTH = 3
TOP = 10
SHOWN_KERNELS = 12  # names kept per sequence in the output (``length`` says how many it has)


def top_level_ops(trace: k.TraceColumns, exclude: np.ndarray) -> np.ndarray:
    """Row indices of the ``cpu_op`` events not nested in another one on their thread (``exclude``: name ids
    that are no operator, e.g. the ``ProfilerStep#N`` annotations of old traces)."""
    ops = np.nonzero(trace.rows(k.CPU_OP) & ~with_names(trace, exclude))[0]
    if not ops.size:
        return ops
    ends = trace.end_us
    ops = ops[nesting_order(trace.tid[ops], trace.start_us[ops], trace.dur_us[ops])]
    tid, start, end = trace.tid[ops], trace.start_us[ops], ends[ops]
    top = np.ones(ops.size, bool)
    new_thread = np.r_[True, tid[1:] != tid[:-1]]
    for a, b in zip(np.nonzero(new_thread)[0], np.r_[np.nonzero(new_thread)[0][1:], ops.size]):
        run_end = np.maximum.accumulate(end[a:b])
        top[a + 1:b] = start[a + 1:b] >= run_end[:-1]
    return ops[top]


def kernel_patterns(trace: k.TraceColumns, roots: np.ndarray, top: int = TOP) -> list[dict]:
    """The ``top`` most frequent sequences (count, then GPU time) under the operator instances ``roots`` (row
    indices); each {operator, kernels (the first ``SHOWN_KERNELS`` names), length, count, gpu_ms, cpu_ms}."""
    if not roots.size or trace.corr.size != trace.cat.size:
        return []
    ends = trace.end_us
    roots = roots[np.lexsort((trace.start_us[roots], trace.tid[roots]))]
    r_tid, r_start, r_end = trace.tid[roots], trace.start_us[roots], ends[roots]
    calls = np.nonzero(trace.rows(k.RUNTIME, k.DRIVER) & (trace.corr >= 0))[0]
    # each launch call -> the root around it on its thread (roots of one thread do not overlap each other
    # when they are top-level; for other choices the latest one that started before the call)
    owner = np.full(calls.size, -1)
    for t in np.unique(r_tid).tolist():
        mine = np.nonzero(r_tid == t)[0]
        on_thread = np.nonzero(trace.tid[calls] == t)[0]
        at = np.searchsorted(r_start[mine], trace.start_us[calls][on_thread], "right") - 1
        ok = at >= 0
        inside = np.zeros(on_thread.size, bool)
        inside[ok] = ends[calls][on_thread[ok]] <= r_end[mine][at[ok]]
        owner[on_thread[inside]] = mine[at[inside]]
    called = owner >= 0
    corr_ids, corr_owner = trace.corr[calls][called], owner[called]
    order = np.argsort(corr_ids, kind="stable")
    corr_ids, corr_owner = corr_ids[order], corr_owner[order]
    gpu = np.nonzero(trace.rows(k.KERNEL, k.MEMCPY, k.MEMSET) & (trace.corr >= 0))[0]
    if not corr_ids.size or not gpu.size:
        return []
    at = np.clip(np.searchsorted(corr_ids, trace.corr[gpu]), 0, corr_ids.size - 1)
    found = corr_ids[at] == trace.corr[gpu]
    gpu, gpu_owner = gpu[found], corr_owner[at[found]]
    order = np.lexsort((trace.start_us[gpu], gpu_owner))
    gpu, gpu_owner = gpu[order], gpu_owner[order]
    cut = np.nonzero(np.r_[True, gpu_owner[1:] != gpu_owner[:-1], True])[0]
    names, durs = trace.name[gpu].tolist(), trace.dur_us[gpu].tolist()
    counts: dict[tuple, list] = {}
    for a, b in zip(cut[:-1].tolist(), cut[1:].tolist()):
        if b - a < MIN_LENGTH:
            continue
        root = int(roots[gpu_owner[a]])
        key = (int(trace.name[root]), tuple(names[a:b]))
        entry = counts.setdefault(key, [0, 0.0, 0.0])
        entry[0] += 1
        entry[1] += sum(durs[a:b])
        entry[2] += float(trace.dur_us[root])
    best = sorted(counts.items(), key=lambda kv: (-kv[1][0], -kv[1][1]))[:top]
    return [{"operator": trace.names[op], "kernels": [trace.names[n] for n in seq[:SHOWN_KERNELS]],
             "length": len(seq), "count": c, "gpu_ms": g / 1000.0, "cpu_ms": t / 1000.0}
            for (op, seq), (c, g, t) in best]
