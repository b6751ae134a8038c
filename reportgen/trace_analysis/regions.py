"""Time in named CPU-side regions without double counting: data loading and collectives.

With ``with_stack=True`` (Python frames) or nested ``record_function`` ranges, one region shows up
as several events nested in each other (``enumerate(DataLoader)#...__next__`` around
``dataloader.py(...): __next__`` around ``_next_data`` ...). Summing their durations counts the
same time two or three times. Here a region's time is the length of the union of its intervals
per thread (the outermost interval wins), summed over threads.

* **Data loading**: events whose name mentions ``DataLoader`` (the profiler's
  ``enumerate(DataLoader)#<iterator>.__next__`` and Python frames in ``dataloader.py``), and the
  input-pipeline waits of the XSpace formats (``reportgen.readers.xspace_trace``): TensorFlow's
  ``IteratorGetNext`` and JAX's Python-tracer ``$builtins next``. The
  iterator class tells whether workers load the data: ``_SingleProcessDataLoaderIter`` loads in
  the training process (``num_workers=0``), ``_MultiProcessingDataLoaderIter`` uses workers.
  **Step share**: data-loading time inside ``ProfilerStep#N`` intervals / total step time.
* **Collectives**: communication kernels on the GPU (NCCL) when there are any, else the CPU-side
  collective ranges (``gloo:all_reduce``, ``nccl:all_reduce``, ``c10d::...``; a format's reader may name
  its own, ``TraceColumns.cpu_collectives``: XLA's ``broadcast`` is no collective): union over all
  threads/streams of the rank, i.e. the wall time during which the rank had a collective in flight.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from reportgen.intervals import merged
from reportgen.readers import trace_model as k
from reportgen.trace_analysis.classify import is_communication_kernel
from reportgen.trace_analysis.columns import ends_of, with_names

DATALOADER = re.compile(r"dataloader|IteratorGetNext|^\$builtins next$", re.I)
_ITERATOR = re.compile(r"DataLoader\)#(\w+)\.__next__")
CPU_COLLECTIVE = re.compile(
    r"^(gloo|nccl|mpi|ucc|c10d|record_param_comms)\b|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|"
    r"broadcast|barrier", re.I)
ITERATOR_WORKERS = {"_SingleProcessDataLoaderIter": False, "_MultiProcessingDataLoaderIter": True}


def length(starts: np.ndarray, ends: np.ndarray) -> float:
    s, e = merged(starts, ends)
    return float((e - s).sum())


def overlap(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """Length of (union of a) ∩ (union of b): |A| + |B| - |A ∪ B|."""
    both = (np.r_[a[0], b[0]], np.r_[a[1], b[1]])
    return max(length(*a) + length(*b) - length(*both), 0.0)


def step_intervals(steps: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([s["start_us"] for s in steps], dtype=np.float64),
            np.array([s["start_us"] + s["dur_us"] for s in steps], dtype=np.float64))


def _ids(trace: k.TraceColumns, pattern: re.Pattern) -> np.ndarray:
    return np.fromiter((i for i, n in enumerate(trace.names) if pattern.search(n)), dtype=np.int32)


def cpu_side(trace: k.TraceColumns) -> np.ndarray:
    return ~trace.rows(*k.GPU_CATEGORIES, k.GPU_ANNOTATION)


def per_thread(trace: k.TraceColumns, mask: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The union of the masked intervals, per thread."""
    out = {}
    tids = trace.tid[mask] if trace.tid.size == trace.cat.size else np.zeros(int(mask.sum()), np.int64)
    starts, ends = trace.start_us[mask], ends_of(trace, mask)
    for tid in np.unique(tids):
        pick = tids == tid
        out[int(tid)] = merged(starts[pick], ends[pick])
    return out


def dataloader(trace: k.TraceColumns, steps: list[dict]) -> dict:
    """Data-loading time (outermost intervals per thread) and its share of the profiled steps."""
    mask = cpu_side(trace) & with_names(trace, _ids(trace, DATALOADER))
    threads = per_thread(trace, mask)
    total = sum(float((e - s).sum()) for s, e in threads.values())
    step_iv = step_intervals(steps)
    step_total = float(sum(s["dur_us"] for s in steps))
    in_steps = sum(overlap(iv, step_iv) for iv in threads.values()) if steps else 0.0
    iterators = Counter()
    for n in np.unique(trace.name[mask]):
        match = _ITERATOR.search(trace.names[int(n)])
        if match:
            iterators[match.group(1)] += int((trace.name[mask] == n).sum())
    iterator = iterators.most_common(1)[0][0] if iterators else None
    return {
        "count": int(sum(s.size for s, _ in threads.values())),
        "events": int(mask.sum()),
        "total_ms": total / 1000.0,
        "in_steps_ms": in_steps / 1000.0,
        # No DataLoader event: unknown (older torch, or data fed another way), not "0 % loading".
        "step_share": min(in_steps / step_total, 1.0) if step_total > 0 and threads else None,
        "per_step_ms": in_steps / 1000.0 / len(steps) if steps and threads else None,
        "iterator": iterator,
        "workers": ITERATOR_WORKERS.get(iterator) if iterator else None,
    }


def collectives(trace: k.TraceColumns, steps: list[dict]) -> dict:
    """Wall time with a collective in flight: GPU communication kernels, else CPU-side collectives."""
    kernel_rows = trace.rows(k.KERNEL)
    gpu_ids = _ids_where(trace, is_communication_kernel)
    gpu = kernel_rows & with_names(trace, gpu_ids)
    if gpu.any():
        mask, source = gpu, "GPU communication kernels"
    else:
        pattern = getattr(trace, "cpu_collectives", None) or CPU_COLLECTIVE
        mask, source = cpu_side(trace) & with_names(trace, _ids(trace, pattern)), "CPU-side collectives"
    if not mask.any():
        return {"wait_ms": 0.0, "count": 0, "source": None, "names": [], "step_share": None, "per_step_ms": None}
    iv = merged(trace.start_us[mask], ends_of(trace, mask))
    wait = float((iv[1] - iv[0]).sum())
    step_total = float(sum(s["dur_us"] for s in steps))
    step_iv = step_intervals(steps)
    in_steps = overlap(iv, step_iv) if steps else 0.0
    names = Counter(trace.names[int(n)] for n in trace.name[mask])
    return {
        "wait_ms": wait / 1000.0,
        "in_steps_ms": in_steps / 1000.0,
        "count": int(mask.sum()),
        "source": source,
        "names": [n for n, _ in names.most_common(3)],
        "step_share": min(in_steps / step_total, 1.0) if step_total > 0 else None,
        "per_step_ms": in_steps / 1000.0 / len(steps) if steps else None,
    }


def _ids_where(trace: k.TraceColumns, predicate) -> np.ndarray:
    return np.fromiter((i for i, n in enumerate(trace.names) if predicate(n)), dtype=np.int32)
