"""The critical path of one profiler step, summarised the way Holistic Trace Analysis (HTA 0.5's
``critical_path_analysis`` + ``CPGraph.summary``) does: which share of it is CPU-bound, GPU compute-bound, GPU
communication-bound, kernel-to-kernel overhead, kernel launch overhead. Our own construction of HTA's idea.

The step's events become a graph of instants (each event's start and end) whose edges carry the time that one
thing must take before the next can happen; the critical path is the heaviest path through it, so a wait that
something else explains (a thread blocked in a synchronisation, the gap between two top-level operators, the
GPU waiting on the host) weighs nothing and the path follows what was being waited for:

* **CPU**: on each thread, the ``cpu_op`` and CUDA runtime/driver calls nested as they ran; an edge from each
  start/end to the next one on the thread weighs the time between them (CPU-bound), except inside a blocking
  call (``cuda*Synchronize``, synchronous ``cudaMemcpy``: 0); consecutive top-level operators are linked with 0;
* **GPU**: each kernel, memcpy or memset launched by one of the step's calls weighs its duration (communication-
  bound for NCCL kernels, else compute-bound); on its stream it follows the previous operation (an edge of the
  gap: kernel-kernel overhead) unless it was launched only after that one had ended, then it follows its launch
  call's start (an edge of launch call start to operation start: launch overhead);
* **GPU to CPU**: a blocking call's end follows, with 0, the end of the last GPU operation that ended before it.

The step: the rank's median-length ``ProfilerStep#N`` (the first one left out when there are three or more:
it often misses events, as HTA's notes say). What differs from HTA: HTA links a synchronisation to the stream
it names through the ``cuda_sync`` events (torch >= 2.1) and follows ``cudaStreamWaitEvent`` between streams,
and tests the launch case on its queue-length counter; here a blocking call waits for every stream and the
launch case is the host-wait test of ``reportgen.trace_analysis.gpu_idle``.
"""

from __future__ import annotations

import numpy as np

from reportgen.readers import trace_model as k
from reportgen.trace_analysis.classify import is_communication_kernel
from reportgen.trace_analysis.columns import ends_of

CATEGORIES = ("cpu_bound", "gpu_compute_bound", "gpu_communication_bound", "gpu_kernel_kernel_overhead",
              "gpu_kernel_launch_overhead")
_CPU, _COMPUTE, _COMM, _KK, _LAUNCH, _NONE = range(6)
MAX_EVENTS = 200_000  # a step with more events is not walked (the summary says so)


def pick_step(steps: list[dict]) -> dict | None:
    """The median-length step, the first left out when there are three or more."""
    pool = sorted(steps, key=lambda s: s["start_us"])
    pool = pool[1:] if len(pool) >= 3 else pool
    if not pool:
        return None
    return sorted(pool, key=lambda s: (s["dur_us"], s["start_us"]))[(len(pool) - 1) // 2]


def _stream_busy_until(trace: k.TraceColumns, rows: np.ndarray) -> np.ndarray:
    """For each GPU operation in ``rows``: the latest end of the operations that started before it on its stream,
    over the whole trace (-inf: none)."""
    out = np.full(rows.size, -np.inf)
    activity = trace.rows(k.KERNEL, k.MEMCPY, k.MEMSET)
    for stream in np.unique(trace.tid[rows]).tolist():
        all_rows = np.nonzero(activity & (trace.tid == stream))[0]  # sorted by start, as the trace is
        run_end = np.maximum.accumulate(ends_of(trace, all_rows))
        mine = trace.tid[rows] == stream
        at = np.searchsorted(all_rows, rows[mine]) - 1  # the operation just before, in start order
        out[mine] = np.where(at >= 0, run_end[np.maximum(at, 0)], -np.inf)
    return out


class _Graph:
    """Instants and the weighted, categorised edges between them."""

    def __init__(self):
        self.ts: list[float] = []
        self.edges: list[tuple[int, int, float, int]] = []

    def node(self, ts: float) -> int:
        self.ts.append(float(ts))
        return len(self.ts) - 1

    def edge(self, a: int, b: int, weight: float, cat: int) -> None:
        self.edges.append((a, b, max(float(weight), 0.0), cat))

    def heaviest(self) -> tuple[float, np.ndarray]:
        """Weight of the heaviest path and the time on it per category, walking the instants in a topological
        order (Kahn's); an edge that runs back in time (bad input) is ignored, and so is whatever a cycle of
        equal instants would hold, so the walk always ends."""
        n_nodes = len(self.ts)
        out: list[list[tuple[int, float, int]]] = [[] for _ in range(n_nodes)]
        indegree = [0] * n_nodes
        for a, b, w, c in self.edges:
            if self.ts[b] >= self.ts[a]:
                out[a].append((b, w, c))
                indegree[b] += 1
        dist = [0.0] * n_nodes
        back: list[tuple[int, int, float] | None] = [None] * n_nodes
        ready = [n for n in range(n_nodes) if not indegree[n]]
        while ready:
            n = ready.pop()
            d = dist[n]
            for b, w, c in out[n]:
                if d + w > dist[b] or back[b] is None and d + w >= dist[b]:
                    dist[b], back[b] = d + w, (n, c, w)
                indegree[b] -= 1
                if not indegree[b]:
                    ready.append(b)
        by = np.zeros(len(CATEGORIES))
        if not dist:
            return 0.0, by
        n = int(np.argmax(dist))
        total = dist[n]
        while back[n] is not None:
            n, c, w = back[n]
            if c < len(CATEGORIES):
                by[c] += w
        return total, by


def critical_path(trace: k.TraceColumns, steps: list[dict], sync_names: np.ndarray,
                  cycles: list[tuple[float, float]]) -> dict | None:
    """The summary of the module docstring for the picked step (ms and shares of the path); None without steps
    or GPU work in the step. ``sync_names``: name ids of the blocking calls; ``cycles``: the rank's profiling
    cycles (GPU work launched in the step is looked for until its cycle's end: correlation ids restart in each
    file)."""
    step = pick_step(steps)
    if step is None:
        return None
    lo, hi = step["start_us"], step["start_us"] + step["dur_us"]
    ends = trace.end_us  # a property: a new array at each use
    until = max((c_hi for c_lo, c_hi in cycles if c_lo <= lo <= c_hi), default=float(ends.max()))
    blocking_ids = set(np.asarray(sync_names).tolist())
    i0, i1 = int(np.searchsorted(trace.start_us, lo, "left")), int(np.searchsorted(trace.start_us, hi, "right"))
    cat = trace.cat[i0:i1]
    cpu = np.isin(cat, (k.CPU_OP, k.RUNTIME, k.DRIVER))
    has_corr = trace.corr.size == trace.cat.size
    if not cpu.any() or not has_corr:
        return None
    if i1 - i0 > MAX_EVENTS:
        return {"step": step["step"], "step_ms": step["dur_us"] / 1000.0, "skipped": f"over {MAX_EVENTS} events"}
    g = _Graph()
    launch_start: dict[int, int] = {}  # correlation id -> start node of its runtime call
    blocking_ends: list[tuple[float, int]] = []
    tids = trace.tid[i0:i1]
    rows = np.nonzero(cpu)[0] + i0
    for tid in np.unique(tids[cpu]).tolist():
        mine = rows[trace.tid[rows] == tid]
        mine = mine[np.lexsort((-trace.dur_us[mine], trace.start_us[mine]))]  # parents before their children
        stack: list[tuple[int, float, bool]] = []  # (end node, end time, blocking)
        last: int | None = None
        last_top: int | None = None

        def leave(now: float) -> None:
            """Close the calls that ended by ``now``, innermost first."""
            nonlocal last, last_top
            while stack and stack[-1][1] <= now:
                end, end_t, blocking = stack.pop()
                if last is not None:
                    g.edge(last, end, 0.0 if blocking else end_t - g.ts[last], _CPU)
                if stack:
                    last = end
                else:
                    last, last_top = None, end

        # the rows' columns as Python numbers, once (a numpy scalar read per event and column cost more)
        for s, e, name, cat_i, corr in zip(trace.start_us[mine].tolist(), ends[mine].tolist(),
                                           trace.name[mine].tolist(), trace.cat[mine].tolist(),
                                           trace.corr[mine].tolist()):
            leave(s)
            a = g.node(s)
            b = g.node(e)
            if not stack and last_top is not None:
                g.edge(last_top, a, 0.0, _NONE)
            if last is not None:
                g.edge(last, a, s - g.ts[last], _CPU)
            last = a
            blocking = name in blocking_ids
            if cat_i != k.CPU_OP and corr >= 0:
                launch_start[corr] = a
            if blocking:
                blocking_ends.append((e, b))
            stack.append((b, e, blocking))
        leave(np.inf)
    # the GPU work launched by the step's calls (it may run past the step's end)
    j0, j1 = i0, int(np.searchsorted(trace.start_us, until, "right"))
    activity = np.isin(trace.cat[j0:j1], (k.KERNEL, k.MEMCPY, k.MEMSET)) & np.isin(
        trace.corr[j0:j1], np.fromiter(launch_start, np.int64, len(launch_start)))
    gpu = np.nonzero(activity)[0] + j0
    gpu = gpu[np.argsort(trace.start_us[gpu], kind="stable")]
    comm_names = {i for i, n in enumerate(trace.names) if is_communication_kernel(n)}
    busy_until = _stream_busy_until(trace, gpu)
    last_on: dict[int, tuple[int, float]] = {}
    gpu_ends: list[tuple[float, int]] = []
    for s, e, name, corr, stream, before in zip(trace.start_us[gpu].tolist(), ends[gpu].tolist(),
                                                trace.name[gpu].tolist(), trace.corr[gpu].tolist(),
                                                trace.tid[gpu].tolist(), busy_until.tolist()):
        a, b = g.node(s), g.node(e)
        g.edge(a, b, e - s, _COMM if name in comm_names else _COMPUTE)
        launch = launch_start[corr]
        prev = last_on.get(stream)
        if g.ts[launch] > before:  # the stream had nothing left to run when the launch began
            g.edge(launch, a, s - g.ts[launch], _LAUNCH)
        elif prev is not None:  # else it waited for the previous operation (one launched before the step: none)
            g.edge(prev[0], a, s - prev[1], _KK)
        last_on[stream] = (b, e)
        gpu_ends.append((e, b))
    if not gpu_ends:
        return None
    gpu_ends.sort()
    end_times = np.array([t for t, _ in gpu_ends])
    for t, node in blocking_ends:
        j = int(np.searchsorted(end_times, t, "right")) - 1
        if j >= 0:
            g.edge(gpu_ends[j][1], node, 0.0, _NONE)
    total, by = g.heaviest()
    return {"step": step["step"], "step_ms": step["dur_us"] / 1000.0, "path_ms": total / 1000.0,
            "by_ms": {c: float(v) / 1000.0 for c, v in zip(CATEGORIES, by)},
            "shares": {c: float(v) / total if total else None for c, v in zip(CATEGORIES, by)}}
