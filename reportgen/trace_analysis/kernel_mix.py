"""What the GPU computes in the steps: the step-time account's ``compute`` slice split by kernel class.

The account says how much of each step the GPU spent in compute kernels, not what they were; a GPU busy 90 % of the
step in memory-bound elementwise and reduction kernels looks as healthy as one busy in GEMMs, although fusing those
kernels (torch.compile, a fused or foreach optimizer) would give much of their time back. Here each compute kernel
gets a class (``classify.KERNEL_CLASSES``): by its name, else by the operator that launched it (matched through the
correlation id of its launch call: the innermost ``cpu_op`` around that call); a kernel launched under torch's
``Optimizer.step#…`` range is ``optimizer`` whatever it is called. The classes' time is exclusive: level by level
in ``KERNEL_CLASSES``' order, each class's time is what the union of it and the classes before covers in the steps
minus what those before covered (the account's own construction), so the classes add up to the ``compute`` slice
exactly, whatever streams overlap.

For the fusion finding (``reportgen.diagnosis.gpu_causes``): the top memory-bound kernels (their time, calls per
step, launching operators), the optimizer's launches, the casts/copies, layout transposes and norms among them, and
an estimate of what fusion gives back: in each step, each run of memory-bound kernels one after another on a stream
(a chain: nothing math-bound between them) fused into one kernel keeps one pass over the data, its longest kernel's
time; the rest of the chain's time is the estimate (``fusable_ms``), never more than the memory-bound time.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from reportgen.intervals import covered, merged
from reportgen.readers import trace_model as k
from reportgen.trace_analysis.classify import (CAST_KERNEL, CAST_OPERATOR, KERNEL_CLASSES, LAYOUT_KERNEL,
                                               MEMORY_BOUND, MULTI_TENSOR, NORM_KERNEL, kernel_class)
from reportgen.trace_analysis.event_order import nesting_order
from reportgen.trace_analysis.columns import ends_of, with_names

OPTIMIZER_STEP = re.compile(r"^Optimizer\.step#(.+?)(\.step)?$")
TOP = 5  # memory-bound kernels listed
TOP_OPERATORS = 3  # launching operators listed per kernel
NESTING = 64  # enclosing operators looked at, innermost first


def launch_rows(trace: k.TraceColumns, rows: np.ndarray) -> np.ndarray:
    """For each row of ``rows`` (indices of GPU activities), the row of the runtime/driver call that launched it
    (matched by correlation id), -1 where the trace has none."""
    out = np.full(rows.size, -1)
    if trace.corr.size != trace.cat.size or not rows.size:
        return out
    calls = np.nonzero(trace.rows(k.RUNTIME, k.DRIVER) & (trace.corr >= 0))[0]
    if not calls.size:
        return out
    ids = trace.corr[calls]
    order = np.argsort(ids, kind="stable")
    ids, calls = ids[order], calls[order]
    want = trace.corr[rows]
    at = np.clip(np.searchsorted(ids, want), 0, ids.size - 1)
    found = (ids[at] == want) & (want >= 0)
    out[found] = calls[at[found]]
    return out


def _innermost_operator(trace: k.TraceColumns, calls: np.ndarray) -> np.ndarray:
    """For each launch-call row (-1: none), the name id of the innermost ``cpu_op`` around it on its thread (-1:
    none): the latest-starting operator that started before the call and ends after it, among the ``NESTING``
    latest (vectorised: one pass per nesting level)."""
    out = np.full(calls.size, -1)
    have = calls >= 0
    if not have.any() or trace.tid.size != trace.cat.size:
        return out
    ops = np.nonzero(trace.rows(k.CPU_OP) & ~with_names(trace, _ids(trace, lambda n: n.startswith("ProfilerStep#"))))[0]
    if not ops.size:
        return out
    ends = trace.end_us
    ops = ops[nesting_order(trace.tid[ops], trace.start_us[ops], trace.dur_us[ops])]
    key_tid, key_start, key_end = trace.tid[ops], trace.start_us[ops], ends[ops]
    rows = calls[have]
    c_tid, c_start, c_end = trace.tid[rows], trace.start_us[rows], ends[rows]
    # position of the last operator (in thread, start order) that starts at or before the call on its thread
    tids = np.unique(key_tid)
    first = np.searchsorted(key_tid, tids, "left")
    last = np.searchsorted(key_tid, tids, "right")
    slot = np.searchsorted(tids, c_tid)
    slot = np.clip(slot, 0, max(tids.size - 1, 0))
    on_thread = tids[slot] == c_tid
    lo_of = np.where(on_thread, first[slot], 0)
    pos = np.full(rows.size, -1)
    for i_tid, tid in enumerate(tids.tolist()):
        mine = np.nonzero(on_thread & (c_tid == tid))[0]
        if mine.size:
            pos[mine] = first[i_tid] + np.searchsorted(key_start[first[i_tid]:last[i_tid]], c_start[mine], "right") - 1
    found = np.full(rows.size, -1)
    open_ = np.nonzero(on_thread & (pos >= lo_of))[0]  # the calls still looking, one nesting level further each pass
    for step in range(NESTING):
        at = pos[open_] - step
        inside = at >= lo_of[open_]
        open_, at = open_[inside], at[inside]
        if not open_.size:
            break
        hit = key_end[at] >= c_end[open_]
        found[open_[hit]] = ops[at[hit]]
        open_ = open_[~hit]
    result = np.where(found >= 0, trace.name[np.maximum(found, 0)], -1)
    out[have] = result
    return out


def _ids(trace: k.TraceColumns, predicate) -> np.ndarray:
    return np.fromiter((i for i, n in enumerate(trace.names) if predicate(n)), dtype=np.int32)


def kernel_mix(trace: k.TraceColumns, compute: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> dict:
    """The kernel mix of a device-perspective rank's steps (``compute``: the compute-kernel rows; ``lo``/``hi``:
    the steps' windows, µs). ms unless a key says otherwise."""
    rows = np.nonzero(compute)[0]
    calls = launch_rows(trace, rows)
    operator = _innermost_operator(trace, calls)
    cpu = ~trace.rows(*k.GPU_CATEGORIES, k.GPU_ANNOTATION)
    opt_rows = np.nonzero(cpu & with_names(trace, _ids(trace, lambda n: bool(OPTIMIZER_STEP.match(n)))))[0]
    optimizer_names = Counter()
    under = np.zeros(rows.size, bool)
    if opt_rows.size:
        opt_iv = merged(trace.start_us[opt_rows], ends_of(trace, opt_rows))
        have = calls >= 0
        at = trace.start_us[np.maximum(calls, 0)]
        j = np.searchsorted(opt_iv[0], at, side="right") - 1
        under = have & (j >= 0) & (at < opt_iv[1][np.maximum(j, 0)])
        for n in trace.name[opt_rows]:
            found = OPTIMIZER_STEP.match(trace.names[int(n)])
            if found:
                optimizer_names[found.group(1)] += 1
    # one class per distinct (kernel name, operator) pair; integer codes into KERNEL_CLASSES
    names = trace.name[rows]
    code = np.full(rows.size, KERNEL_CLASSES.index("other"), np.int8)
    if rows.size:
        pairs, inverse = distinct_pairs(names, operator)
        codes = np.array([KERNEL_CLASSES.index(kernel_class(trace.names[int(n)], trace.names[int(op)] if op >= 0
                                                            else None)) for n, op in pairs], np.int8)
        code = codes[inverse]
    code[under] = KERNEL_CLASSES.index("optimizer")

    # exclusive time per class inside the steps: nested unions, the account's construction
    order = np.argsort(lo)
    s_lo, s_hi = lo[order], hi[order]
    classes_ms: dict[str, float] = {}
    union: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0))
    done = 0.0
    multi = _flag(trace, trace.name[rows], MULTI_TENSOR.search)
    is_opt = code == KERNEL_CLASSES.index("optimizer")
    levels = [(name, code == i) for i, name in enumerate(KERNEL_CLASSES)]
    at = KERNEL_CLASSES.index("optimizer")  # the optimizer in two levels, its multi-tensor (foreach / fused)
    levels[at:at + 1] = [("optimizer", is_opt & multi),  # kernels first: the rest is per tensor
                         ("optimizer per tensor", is_opt & ~multi)]
    for name, part in levels:
        pick = rows[part]
        if pick.size:
            union = merged(np.r_[union[0], trace.start_us[pick]], np.r_[union[1], ends_of(trace, pick)])
        now = max(float(covered(union, s_lo, s_hi).sum()), done)
        classes_ms[name] = classes_ms.get(name, 0.0) + (now - done) / 1000.0
        done = now
    per_tensor_ms = classes_ms.pop("optimizer per tensor")
    classes_ms["optimizer"] += per_tensor_ms

    # the kernels that start in a step: per-kernel figures (sums of durations, not exclusive)
    start = trace.start_us[rows]
    step_of = np.searchsorted(s_lo, start, side="right") - 1
    in_step = (step_of >= 0) & (start < s_hi[np.maximum(step_of, 0)])
    n_steps = max(int(lo.size), 1)
    memory = np.isin(code, [KERNEL_CLASSES.index(c) for c in MEMORY_BOUND]) & in_step
    dur = trace.dur_us[rows]
    compute_ms = sum(classes_ms.values())
    top_rows = []
    if memory.any():  # per kernel name: summed durations, calls, class (the name's most time) and operators
        uniq, inverse = np.unique(names[memory], return_inverse=True)
        totals = np.bincount(inverse, weights=dur[memory])
        counts = np.bincount(inverse)
        code_m, operator_m = code[memory], operator[memory]
        for i in np.lexsort((uniq, -totals))[:TOP].tolist():
            mine = inverse == i
            ops: Counter[str] = Counter()  # counted per distinct operator id, not per kernel (~13,000 a name)
            for o, n in zip(*(part.tolist() for part in np.unique(operator_m[mine], return_counts=True))):
                ops[trace.names[o] if o >= 0 else "(no operator)"] += n
            top_rows.append({"name": trace.names[int(uniq[i])], "class": KERNEL_CLASSES[commonest(code_m[mine])],
                             "ms": float(totals[i]) / 1000.0,
                             "share_of_compute": float(totals[i]) / 1000.0 / compute_ms if compute_ms > 0 else None,
                             "calls_per_step": int(counts[i]) / n_steps,
                             "operators": [op for op, _ in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))
                                           [:TOP_OPERATORS]]})

    def total(mask: np.ndarray) -> float:
        return float(dur[mask].sum()) / 1000.0 if mask.size else 0.0

    is_layout = _flag(trace, names, LAYOUT_KERNEL.search)
    is_cast = (_flag(trace, names, CAST_KERNEL.search) | _flag(trace, operator, CAST_OPERATOR.match)) & ~is_layout
    is_norm = _flag(trace, names, NORM_KERNEL.search)
    opt = is_opt & in_step
    conv = (code == KERNEL_CLASSES.index("convolution")) & in_step
    return {
        "classes_ms": classes_ms,
        "memory_bound_ms": sum(classes_ms[c] for c in MEMORY_BOUND),
        # elementwise + reduction + the optimizer's per-tensor kernels: what fusing would merge
        "unfused_memory_bound_ms": classes_ms["elementwise"] + classes_ms["reduction"] + per_tensor_ms,
        "top_memory_bound": top_rows,
        "fusable_ms": _fusable(trace, rows, memory & ~(is_opt & multi), is_opt & ~multi, step_of) / 1000.0,
        "casts_ms": total(memory & is_cast),
        "layout_ms": total(memory & is_layout),
        "norms_ms": total(memory & is_norm),
        "convolution_kernels_ms": total(conv),
        "optimizer": {"names": [name for name, _ in optimizer_names.most_common()],
                      "kernels_per_step": int(opt.sum()) / n_steps,
                      "per_tensor_kernels_per_step": int((opt & ~multi).sum()) / n_steps,
                      "ms": total(opt),
                      "multi_tensor_ms": total(opt & multi)},
    }


def commonest(values: np.ndarray) -> int:
    """The value found most often, the first found among equals: ``Counter(values).most_common(1)``'s."""
    uniq, first, counts = np.unique(values, return_index=True, return_counts=True)
    best = counts == counts.max()
    return int(uniq[best][np.argmin(first[best])])


def distinct_pairs(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (first, second) pairs of two integer columns (``first`` >= 0, ``second`` >= -1) in sorted
    order, as ``np.unique(np.c_[first, second], axis=0, return_inverse=True)`` gives them, and each row's pair:
    through one int64 key per row (a row-wise unique sorts the rows as records: ~20 ms over 40,000 kernels)."""
    first, second = first.astype(np.int64), second.astype(np.int64)
    width = int(second.max()) + 2 if second.size else 1
    keys, inverse = np.unique(first * width + (second + 1), return_inverse=True)
    return np.c_[keys // width, keys % width - 1], inverse.ravel()


def _flag(trace: k.TraceColumns, name_ids: np.ndarray, test) -> np.ndarray:
    """``test`` on the name of each id (-1: no name, False), once per distinct name (those present found by a
    count over the names, not a sort of the ids: ~2 ms a call over 41,000 kernels)."""
    if not name_ids.size:
        return np.zeros(0, bool)
    named = name_ids >= 0
    present = np.nonzero(np.bincount(name_ids[named], minlength=len(trace.names)))[0]
    flag = np.zeros(len(trace.names), bool)
    flag[present] = [bool(test(trace.names[int(n)])) for n in present]
    return named & flag[np.where(named, name_ids, 0)]


def _fusable(trace: k.TraceColumns, rows: np.ndarray, unfused: np.ndarray, per_tensor: np.ndarray,
             step_of: np.ndarray) -> float:
    """µs fusion would give back, estimated: in each step, each chain (unfused memory-bound kernels one after
    another on a stream, nothing else between them) kept as one pass over its data — its longest kernel; a chain
    of the optimizer's per-tensor kernels (``per_tensor``) keeps one pass per tensor: the total of its costliest
    kernel name (a fused optimizer still reads and writes every tensor's state once)."""
    if not rows.size or not unfused.any():
        return 0.0
    stream = trace.tid[rows] if trace.tid.size == trace.cat.size else np.zeros(rows.size, np.int64)
    order = np.lexsort((trace.start_us[rows], step_of, stream))
    mem, opt, dur = unfused[order], per_tensor[order], trace.dur_us[rows][order]
    name = trace.name[rows][order]
    key_stream, key_step = stream[order], step_of[order]
    new = np.r_[True, (key_stream[1:] != key_stream[:-1]) | (key_step[1:] != key_step[:-1]) | ~mem[:-1]
                | (opt[1:] != opt[:-1])]
    chain = np.cumsum(new | ~mem)  # a chain id per run; a math-bound kernel is a run of its own
    ids, inverse = np.unique(chain[mem], return_inverse=True)
    sums = np.bincount(inverse, weights=dur[mem])
    kept = np.zeros(ids.size)
    np.maximum.at(kept, inverse, dur[mem])
    in_opt = opt[mem]
    if in_opt.any():  # per chain and kernel name, the names' totals; the chain keeps its largest
        pairs, pair_of = distinct_pairs(inverse[in_opt], name[mem][in_opt])
        totals = np.bincount(pair_of, weights=dur[mem][in_opt])
        by_chain = np.zeros(ids.size)
        np.maximum.at(by_chain, pairs[:, 0], totals)
        chains = np.unique(pairs[:, 0])
        kept[chains] = by_chain[chains]
    return float((sums - kept).sum())
