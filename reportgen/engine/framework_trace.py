"""SageMaker's framework events as the one trace model, one training process at a time.

The step-time account (``trace_analysis.account``) reads ``TraceColumns``; this turns smdebug's framework events
(``*pythontimeline.json``, ``*model_timeline.json``, SMDataParallel / Horovod timelines, TF profiler traces) into
them, per node id (smdebug's node id names one training process: ``algo-1-27``), so the same account runs on a
SageMaker job as on PyTorch or JAX/TF traces. The mapping, by smdebug's phase (its Chrome-trace "process"):

* ``Step:ModeKeys.TRAIN`` — the steps (``ProfilerStep#``, the model's name for a step; their numbers in ``NodeTrace.steps``); each step also
  takes the data loading just before it (``DataLoaderIter::GetNext`` between the previous step's end and its
  start: smdebug records the fetch of a step's batch outside the step, torch's ``ProfilerStep`` holds it);
* ``Step:ModeKeys.EVAL`` / ``PREDICT`` / ``GLOBAL`` — annotations: evaluation between the training steps is
  time between steps, not a step;
* ``Forward`` / ``Backward…`` passes, their sub-modules, ``cpu_functions`` (detailed profiling) and the
  DataLoader's iterator calls — operators of the training thread;
* SMDataParallel, Horovod and TF profiler events — operators of another thread (collectives overlapping the
  backward pass count only where the training thread has nothing to do);
* ``DataLoaderWorker`` — left out: another process's loading, which overlaps the step; in TensorFlow's
  ``DataIterator`` phase only ``IteratorGetNext`` is the step's wait, the rest (``dataset::GetNext``) tf.data's own
  work on its threads (not an operator of the step);
* ``gpu_functions-dev:N`` (detailed profiling of a few steps) — GPU annotations the account does not read:
  kernels in some steps only would make every other step look like an idle GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reportgen.readers import trace_model as k

TRAIN_STEP = "Step:ModeKeys.TRAIN"
STEP_PREFIX = "ProfilerStep#"
FORWARD_BACKWARD = re.compile(r"^(Forward|Backward)")
LOADER_CALLS = re.compile(r"^(DataLoaderIter|DataIterator)")  # the training thread's wait for the next batch
WORKER = "DataLoaderWorker"
TF_DATA = "DataIterator"  # smdebug's TensorFlow input pipeline: the step's wait (IteratorGetNext) and tf.data's work
TF_WAIT = re.compile(r"IteratorGetNext")
OTHER_THREAD_TYPES = ("SMDataParallelMetrics", "", "TFProfilerMetrics")  # SMDataParallel, Horovod, TF profiler
MAIN, OTHER_THREAD = 0, 1
WORKERS_LEFT_OUT = "left out of the step-time account: DataLoader worker processes' events (they overlap the step)"


@dataclass
class NodeTrace:
    """One training process's framework events as trace columns, and its training steps (µs)."""

    node: str
    columns: k.TraceColumns
    steps: list[dict] = field(default_factory=list)  # {"step", "start_us", "dur_us"}, by start
    workers_left_out: int = 0  # DataLoader worker events not in the columns


def _category(phase: str, file_type: str, name: str) -> tuple[int, int] | None:
    """(category, thread) of a phase's events; None: not in the columns."""
    if phase == WORKER:
        return None
    if phase == TF_DATA and not TF_WAIT.search(name):  # tf.data's own work (its threads prefetch): not the step's
        return k.OTHER, OTHER_THREAD
    if phase.startswith("gpu_functions"):
        return k.GPU_ANNOTATION, MAIN
    if phase.startswith("Step:"):
        return k.USER_ANNOTATION, MAIN
    if file_type in OTHER_THREAD_TYPES:
        return k.CPU_OP, OTHER_THREAD
    if phase == "Unknown":
        return k.OTHER, MAIN
    return k.CPU_OP, MAIN


def node_traces(events, key_rows) -> list[NodeTrace]:
    """``events`` (``framework_events.NodeEvents``) and the key rows (``FrameworkEvents.rows``: the steps with
    their numbers) -> one ``NodeTrace`` per node that ran training steps, in the nodes' order."""
    out: list[NodeTrace] = []
    if not len(events.start_us) or key_rows is None or not len(key_rows):
        return out
    steps_of = _train_steps(key_rows)
    n_groups = len(events.triples)
    cat = np.full(n_groups, -1, np.int16)
    tid = np.zeros(n_groups, np.int64)
    for g, (phase, file_type, name) in enumerate(events.triples):
        mapped = _category(str(phase), str(file_type), str(name))
        if mapped is not None:
            cat[g], tid[g] = mapped
    workers = np.array([str(p) == WORKER for p, _, _ in events.triples] + [False], bool)
    for code, node in enumerate(events.nodes):
        steps = steps_of.get(str(node))
        if not steps:
            continue
        mine = events.node == code
        group = events.group[mine]
        keep = cat[group] >= 0
        start = events.start_us[mine][keep]
        end = events.end_us[mine][keep]
        group = group[keep]
        order = np.lexsort((-(end - start), start))  # by start, the enclosing event first
        start, end, group = start[order], end[order], group[order]
        names, name_of = _names(events.triples, group)
        columns = k.TraceColumns(path=Path(str(node)), label=str(node), rank=None, names=names,
                                 cat=cat[group].astype(np.int8), name=name_of,
                                 start_us=start.astype(np.float64), dur_us=(end - start).astype(np.float64),
                                 device=np.full(start.size, -1, np.int32), nbytes=np.zeros(start.size),
                                 tid=tid[group], corr=np.full(start.size, -1, np.int64),
                                 events_in_file=int(start.size))
        out.append(NodeTrace(str(node), columns, _with_loading(columns, steps),
                             int(workers[events.group[mine]].sum())))
    return out


def _names(triples: list, group: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Interned names of the events' groups; a training step is ``ProfilerStep#`` (the model's name for a step;
    the steps' numbers travel with ``NodeTrace.steps``: one name for all keeps the names few)."""
    names: list[str] = []
    ids: dict[str, int] = {}
    lookup = np.zeros(len(triples) + 1, np.int32)
    for g in np.unique(group):
        phase, _, text = triples[int(g)]
        text = STEP_PREFIX if str(phase) == TRAIN_STEP else str(text)
        lookup[g] = ids.setdefault(text, len(ids))
        if lookup[g] == len(names):
            names.append(text)
    return names, lookup[group]


def _train_steps(rows) -> dict[str, list[dict]]:
    """node -> its training steps ({"step", "start_us", "dur_us"}, by start) from the key rows."""
    train = rows[rows["name"].astype(str) == TRAIN_STEP]
    nodes = train["node_id"].astype(str).to_numpy()
    start, dur = train["start_us"].to_numpy(np.int64), train["dur_us"].to_numpy(np.int64)
    number = train["step_num"].astype(str).to_numpy()
    out: dict[str, list[dict]] = {}
    for node in dict.fromkeys(nodes.tolist()):
        mine = np.flatnonzero(nodes == node)
        mine = mine[np.argsort(start[mine], kind="stable")]
        out[node] = [{"step": n, "start_us": a, "dur_us": d}
                     for n, a, d in zip(number[mine].tolist(), start[mine].tolist(), dur[mine].tolist())]
    return out


def _with_loading(columns: k.TraceColumns, steps: list[dict]) -> list[dict]:
    """Each step widened back over the training thread's DataLoader calls that lie wholly between the previous step
    (of any mode) and it: fetching a step's batch is part of the step, as in torch's ProfilerStep."""
    names = columns.names
    loader_ids = [i for i, n in enumerate(names) if LOADER_CALLS.match(n) or "DataLoaderIter" in n]
    loader = (np.isin(columns.name, loader_ids) & (columns.tid == MAIN) & (columns.cat == k.CPU_OP))
    annotation = columns.cat == k.USER_ANNOTATION  # every step, of every mode
    s_ends = np.sort(columns.end_us[annotation])
    l_order = np.argsort(columns.start_us[loader], kind="stable")
    l_starts, l_ends = columns.start_us[loader][l_order], columns.end_us[loader][l_order]
    start = np.array([s["start_us"] for s in steps], np.float64)
    i = np.searchsorted(s_ends, start, side="right")
    prev_end = np.where(i > 0, s_ends[np.maximum(i - 1, 0)] if s_ends.size else -np.inf, -np.inf)
    j = np.searchsorted(l_starts, prev_end, side="left")  # the first call after the previous step
    ok = j < l_starts.size
    ok[ok] &= l_ends[j[ok]] <= start[ok]
    first = start.copy()
    first[ok] = l_starts[j[ok]]
    return [{"step": s["step"], "start_us": int(f), "dur_us": int(s["start_us"] + s["dur_us"] - int(f))}
            for s, f in zip(steps, first.tolist())]
