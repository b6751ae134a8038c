"""A job's PyTorch profiler traces analysed rank by rank: plan, reduce per rank, exact merge.

One rank's trace files are read, merged and analysed at a time, so memory holds one rank, never the
job; on a Dask cluster each rank is one task on a worker, which reads the files where they are (a
local folder, or S3 with the worker's own credentials) and sends back only the rank's summary.

The functions to call::

    from reportgen.trace_analysis.job import analyze_traces, TaskStats
    doc, problems = analyze_traces(files)                        # this process, one rank after another
    doc, problems = analyze_traces(files, scheduler="local:2")   # Dask: a local cluster of 2 workers
    doc, problems = analyze_traces(files, scheduler="tcp://host:8786")  # an existing cluster
    doc, problems = analyze_traces(files, client=dask_client)    # a dask.distributed.Client you hold
    stats: list[TaskStats] = []                                  # per task: files, bytes, seconds,
    analyze_traces(files, scheduler="local:2", stats=stats)      #   worker pid and its peak RSS
    # S3 objects the workers fetch themselves (keys, not local paths; needs a scheduler):
    analyze_traces(keys, client=client, s3=S3System(bucket, "", objects, region=...))

``doc`` is the ``kineto.json`` document (``write_kineto_outputs`` writes it), ``problems`` the
traces' data problems. Every number is the one the all-files-at-once analysis gave (tests compare
with its frozen output on every fixture trace set).

How (docs/distributed.md, "PyTorch profiler traces"):

1. **Plan** from the file names and each file's first 64 KiB (:func:`probe_rank`), or, for a file the trace
   cache knows unchanged, its kept head (:func:`plan_ranks`: not opened): a task per
   ``distributedInfo.rank`` and per torch worker (``<host>_<pid>`` in torch's file names: one process,
   its profiling cycles), else per file; so a rank's files are normally one task and read once.
2. **Reduce** (:func:`reduce_task`, on a worker or here; on Dask a task of several files is one
   :func:`read_file` task per file, on any worker, then :func:`reduce_reads`, unless every file's head is kept:
   then one :func:`reduce_task`): read the task's files, group them into
   ranks exactly as ``reportgen.trace_analysis.ranks`` does, merge each rank's cycles, ``analyze_trace`` it,
   and keep every distinct kernel and CPU-operator name with its total and count (not only the
   rank's top 15: that is what makes the job-wide top 15 exact). With the trace cache, a task whose files'
   heads and ranks' analyses are all kept is served from them alone (:func:`reduce_kept`): no file read or loaded
   (S3 objects by their listed identity, ``trace_analysis/s3_traces.py``: none downloaded); and when every task of
   the job is, the client serves them itself and starts no Dask cluster (:func:`served_whole`).
3. **Merge**: a rank whose files ended up in more than one task (its rank written after the events,
   two workers of one rank, S3 keys) is reduced again from all its files at once,
   as one task, so it is merged exactly as before. Then the labels, the straggler, and the job-wide
   tables (``job`` in kineto.json): per-name sums over the ranks in rank order, top 15.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from reportgen.trace_analysis.analysis import TOP_KERNELS, TOP_OPS, analyze_trace, compare_ranks, totals_by_name
from reportgen.trace_analysis.ranks import (cycle_order, group_traces_keyed, merge_cycles, rank_key, rank_label, rank_order,
                                    unique_labels, worker_of)
from reportgen.readers.trace_cache import TraceCache, file_key, known_key, read_trace_keyed
from reportgen.readers.trace_heads import FileHead, has_head, load_head, store_head
from reportgen.trace_analysis.rank_cache import load_rank, rank_entry_key, store_rank
from reportgen.trace_analysis.s3_traces import object_entry, object_path, read_object
from reportgen.errors import InputError
from reportgen.problems import DataProblem, ProblemLog
from reportgen.cluster.s3_objects import S3System
from reportgen.cluster.task_stats import TaskStats, peak_rss
from reportgen.sources.layout import TRACE_FORMATS, trace_format

__all__ = ["FileRead", "RankSummary", "S3System", "TaskResult", "TaskStats", "analyze_traces", "job_tables",
           "kept_head", "plan_ranks", "plan_tasks", "probe_rank", "read_file", "reduce_kept", "reduce_reads", "reduce_task",
           "served_whole", "straggler_summary"]


@dataclass
class RankSummary:
    """What a task returns per rank: small, and enough for an exact merge."""

    key: tuple  # ("rank", n) / ("worker", name) / ("file", label): how ranks are grouped and ordered
    members: list[int]  # the job's file indices of its files
    label: str  # rank_label() of its files (made unique on the client)
    first_name: str  # name of its first file (in time order)
    first_file: str  # how data problems name that file (local path or s3:// URI)
    workers: list[str]
    doc: dict  # analyze_trace(): what kineto.json holds for the rank
    totals: dict  # totals_by_name(): every kernel / CPU-operator name -> (total µs, count)


@dataclass
class TaskResult:
    ranks: list[RankSummary]
    problems: dict[int, tuple[dict, list[DataProblem]]]  # file index -> (counts by reason, listed sample)
    stats: TaskStats = field(default_factory=TaskStats)


# ------------------------------------------------------------------------------------ plan


def plan_tasks(files: list[str], ranks: list[int | None] | None = None) -> list[list[int]]:
    """File indices per task, without reading a file: torch's worker name (``<worker>.<ns>.pt.trace.json``)
    groups a process's cycles, any other file is a task of its own; ``ranks`` (:func:`probe_rank` of each
    file, None where unknown) also puts the files of one ``distributedInfo.rank`` in one task, so that a
    rank is never reduced twice. Tasks in the order of their first file, files in job order."""
    parent = list(range(len(files)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[tuple, int] = {}
    for i, name in enumerate(files):
        worker = worker_of(Path(str(name)))
        keys = [("worker", worker)] if worker is not None else []
        if ranks is not None and ranks[i] is not None:
            keys.append(("rank", ranks[i]))
        for key in keys:
            a, b = root(first.setdefault(key, i)), root(i)
            parent[max(a, b)] = min(a, b)
    tasks: dict[int, list[int]] = {}
    for i in range(len(files)):
        tasks.setdefault(root(i), []).append(i)
    return list(tasks.values())


PROBE_BYTES = 64 * 1024  # compressed bytes read from the start of a file to find its distributedInfo
PROBE_TEXT = 256 * 1024  # at most this much text decompressed from them (a gzip bomb stays small)
_INFO = re.compile(rb'"distributedInfo"\s*:\s*')


def probe_rank(path) -> int | None:
    """``distributedInfo.rank`` when the file states it before its events (torch writes it in the header),
    from the first 64 KiB only; None when it is not there, not a number, or the file cannot be read. A
    prediction for the plan only: the reduction still groups by what the whole read finds."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(PROBE_BYTES)
        if head[:2] == b"\x1f\x8b":
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, PROBE_TEXT)
        head = head.split(b'"traceEvents"', 1)[0]
        match = _INFO.search(head)
        if match is None:
            return None
        info, _ = json.JSONDecoder().raw_decode(head[match.end():].decode("utf-8", "replace"))
    except (OSError, ValueError, zlib.error):
        return None
    rank = info.get("rank") if isinstance(info, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else None


def plan_ranks(files: list[str], cap: int, cache: TraceCache | None,
               s3: S3System | None = None) -> tuple[list[int | None], set[int]]:
    """Each local file's rank for :func:`plan_tasks`, and the indices of the files whose rank came from their head.

    A file the digest memo knows as it is now (``known_key``: a stat, no byte read) and whose head is kept
    (``readers/trace_heads.py``) is planned by the rank its whole read found, which is what the reduction groups it by;
    it is not opened (issue 51: a warm run read the first 64 KiB of every trace). Any other file (changed, new, its
    head missing or damaged, no cache) is probed as before (:func:`probe_rank`). The plan only decides which files
    share a task; a rank spread over several is merged again (:func:`analyze_traces`), so either source is exact.
    ``s3``: the files are keys the workers fetch; a listed object's head is found by its identity
    (``trace_analysis/s3_traces.py``), any other key is planned by its name only (the client opens no object)."""
    ranks: list[int | None] = []
    kept: set[int] = set()
    for i, name in enumerate(files):
        head = kept_head(name, cap, cache, s3) if cache is not None else None
        if head is None:
            ranks.append(None if s3 is not None else probe_rank(name))
            continue
        ranks.append(head.rank)
        kept.add(i)
    return ranks, kept


def kept_head(name: str, cap: int, cache: TraceCache, s3: S3System | None = None) -> FileHead | None:
    """The kept head of the file ``name`` as it is now, found without reading it: a local file the digest memo knows
    unchanged (a stat), or an S3 object by its listed identity; None otherwise."""
    if s3 is not None:
        entry = object_entry(s3, name, cap)
        key, path = (entry[0] if entry is not None else None), object_path(s3, name)
    else:
        key, path = known_key(Path(name), cap, cache.memo), Path(name)
    return load_head(cache, key, path) if key is not None else None


def served_whole(names: list[str], cap: int, cache: TraceCache, s3: S3System | None = None) -> list[TaskResult] | None:
    """Every task of the job served from the cache in this process (:func:`reduce_kept`), or None: a file's head not
    kept (found at the first such file, before any task is tried: a cold run pays one lookup), a rank's analysis
    not kept, or a rank left in two tasks. What lets a warm ``--scheduler`` run start no Dask cluster: its tasks
    would only have read heads and ranks' entries on the workers."""
    ranks = []
    for name in names:
        head = kept_head(name, cap, cache, s3)
        if head is None:
            return None
        ranks.append(head.rank)
    results = []
    for task in plan_tasks(names, ranks):
        found = reduce_kept([(i, names[i]) for i in task], cap, False, cache, s3)
        if found is None:
            return None
        results.append(found)
    keys = [summary.key for result in results for summary in result.ranks]
    return results if len(keys) == len(set(keys)) else None


# ------------------------------------------------------------------------------------ reduce (worker side)


@dataclass
class FileRead:
    """One file read into columns (:func:`read_file`): on Dask, a rank's files are read by separate
    tasks, on any worker, and these go to the one task that merges the rank."""

    index: int  # the job's file index
    display: str  # how data problems name the file (local path or s3:// URI)
    trace: object  # TraceColumns, or None when the S3 key was unsafe (not fetched)
    problems: tuple[dict, list[DataProblem]]
    bytes: int = 0
    seconds: float = 0.0
    peak_rss: int = 0
    key: str | None = None  # the trace cache's key of the content read (None: not cached)


def read_file(index: int, name: str, cap: int, s3: S3System | None = None, cache: TraceCache | None = None) -> FileRead:
    """Read one trace file (a local path, or an S3 key the worker fetches into a temporary folder it then
    deletes) into its columns, through ``cache`` (``readers/trace_cache.py``; an S3 object by its identity,
    ``trace_analysis/s3_traces.py``) when given. Never raises on bad content (the reader records it); S3 errors do."""
    started = time.perf_counter()
    if s3 is not None:
        got = read_object(s3, name, cap, cache)
        return FileRead(index, s3.uri(name), got.trace, (dict(got.problems.counts), got.problems.items), got.nbytes,
                        time.perf_counter() - started, peak_rss() if got.trace is not None else 0, got.key)
    log = ProblemLog(cap)
    path = Path(name)
    trace, key = read_trace_keyed(path, log, cache)
    if key is not None and cache is not None and not has_head(cache, key):
        store_head(cache, key, trace, log)  # what the next run groups this file by (reduce_kept)
    nbytes = 0
    with contextlib.suppress(OSError):
        nbytes = path.stat().st_size
    return FileRead(index, str(path), trace, (dict(log.counts), log.items), nbytes, time.perf_counter() - started,
                    peak_rss(), key)


def reduce_task(files: list[tuple[int, str]], cap: int, s3: S3System | None = None,
                one_rank: bool = False, cache: TraceCache | None = None) -> TaskResult:
    """Read ``files`` (job index, local path or S3 key), group them into ranks and reduce each rank.
    ``one_rank``: the files are one rank (the client's regrouping), no grouping. With ``cache``, files (or S3
    objects) whose heads and ranks are all kept are not read (nor downloaded) at all (:func:`reduce_kept`). Never raises on bad content (the reader
    records it); S3 errors do."""
    if cache is not None:
        kept = reduce_kept(files, cap, one_rank, cache, s3)
        if kept is not None:
            return kept
    return reduce_reads([read_file(i, name, cap, s3, cache) for i, name in files], one_rank, cache)


def reduce_kept(files: list[tuple[int, str]], cap: int, one_rank: bool, cache: TraceCache,
                s3: S3System | None = None) -> TaskResult | None:
    """:func:`reduce_task` of ``files`` from the cache alone: each file's head (``readers/trace_heads.py``, found by
    its content key, the digest memo's, or an S3 object's by its listed identity, ``trace_analysis/s3_traces.py``)
    groups it into its rank, and each rank's analysis is its kept entry, so no file's entry is loaded (issue 51:
    1.4 GB over 64 x 200 MB) and no object downloaded. None when any piece is missing or unusable: then the files
    are read as before, never grouped or served from a part."""
    started = time.perf_counter()
    heads: list[FileHead] = []
    keys: dict[int, str] = {}
    index: dict[int, int] = {}
    shown: dict[int, str] = {}
    nbytes = 0
    for i, name in files:
        if s3 is not None:
            path, display, found = object_path(s3, name), s3.uri(name), object_entry(s3, name, cap)
        else:
            path = Path(name)
            display, local = str(path), file_key(path, cap, cache.memo)
            found = (local[0], local[1][0]) if local is not None else None
        head = load_head(cache, found[0], path) if found is not None else None
        if found is None or head is None:
            return None
        heads.append(head)
        keys[id(head)], index[id(head)], shown[id(head)] = found[0], i, display
        nbytes += found[1]
    if one_rank:
        cycle_order(heads)
        groups = [(rank_key(heads[0]), heads)] if heads else []
    else:
        groups = group_traces_keyed(heads)
    ranks = []
    for key, group in groups:
        analysed = load_rank(cache, rank_entry_key([keys[id(h)] for h in group]))
        if analysed is None:
            return None
        workers = sorted({w for h in group if (w := worker_of(h.path))})
        ranks.append(RankSummary(key, [index[id(h)] for h in group], rank_label(group), group[0].path.name,
                                 shown[id(group[0])], workers, *analysed))
    problems = {}
    for head in heads:
        log = head.problems(cap)
        problems[index[id(head)]] = (dict(log.counts), log.items)
    stats = TaskStats(files=len(files), bytes=nbytes, seconds=time.perf_counter() - started, worker_pid=os.getpid(),
                      peak_rss=peak_rss())
    return TaskResult(ranks, problems, stats)


def reduce_reads(reads: list[FileRead], one_rank: bool = False, cache: TraceCache | None = None) -> TaskResult:
    """Group files already read into ranks and reduce each rank (the second half of :func:`reduce_task`); a rank
    whose files all came with a key is analysed once per cache (``trace_analysis/rank_cache.py``)."""
    started = time.perf_counter()
    problems = {read.index: read.problems for read in reads}
    traces = [read.trace for read in reads if read.trace is not None]
    index = {id(read.trace): read.index for read in reads if read.trace is not None}
    shown = {id(read.trace): read.display for read in reads if read.trace is not None}
    keys = {id(read.trace): read.key for read in reads if read.trace is not None}
    if one_rank:
        cycle_order(traces)
        groups = [(rank_key(traces[0]), traces)] if traces else []
    else:
        groups = group_traces_keyed(traces)
    del traces  # each group's files go as soon as the group is merged
    ranks = []
    for key, group in groups:
        members = [index[id(t)] for t in group]
        label, first_name, first_file = rank_label(group), group[0].path.name, shown[id(group[0])]
        workers = sorted({w for t in group if (w := worker_of(t.path))})  # as merge_cycles finds them
        entry = (rank_entry_key([keys[id(t)] for t in group])
                 if cache is not None and all(keys[id(t)] is not None for t in group) else None)
        found = load_rank(cache, entry) if entry is not None else None
        if found is None:
            rank = merge_cycles(group)
            found = analyze_trace(rank), totals_by_name(rank)
            del rank
            if entry is not None:
                found = store_rank(cache, entry, *found) or found
        group.clear()
        ranks.append(RankSummary(key, members, label, first_name, first_file, workers, *found))
    read_seconds = sum(read.seconds for read in reads)
    stats = TaskStats(files=len(reads), bytes=sum(read.bytes for read in reads),
                      seconds=read_seconds + time.perf_counter() - started, worker_pid=os.getpid(),
                      peak_rss=max([peak_rss(), *(read.peak_rss for read in reads)]))
    reads.clear()
    return TaskResult(ranks, problems, stats)


# ------------------------------------------------------------------------------------ merge (client side)


def analyze_traces(files, problems: ProblemLog | None = None, *, scheduler: str | None = None, client=None,
                   s3: S3System | None = None, stats: list | None = None,
                   cache: TraceCache | None = None) -> tuple[dict, ProblemLog]:
    """The ``kineto.json`` document of a job's trace files and their data problems (module docstring).

    ``files``: local paths, or S3 keys with ``s3``; ``scheduler`` (``local[:N]`` / ``tcp://host:port``)
    or ``client``: one task per rank on Dask, else one rank after another here; ``stats``: a list
    that receives each task's :class:`TaskStats` (none when a ``scheduler``'s job is served whole from the cache:
    no cluster is started, :func:`served_whole`); ``cache``: where the files' reductions (S3 objects' by their
    identity) are kept and found (``readers.trace_cache.trace_cache_for``; None: every file read in full)."""
    problems = problems if problems is not None else ProblemLog()
    names = [str(f) for f in files]
    served = None
    if scheduler is not None and client is None:
        from reportgen.cluster.scheduler import parse_scheduler

        sched = parse_scheduler(scheduler)  # a bad address fails here, served or not
        served = served_whole(names, problems.cap, cache, s3) if cache is not None else None
        if served is None:
            from reportgen.cluster.client import dask_client

            with dask_client(sched) as own:
                return analyze_traces(files, problems, client=own, s3=s3, stats=stats, cache=cache)
    if s3 is not None and client is None and served is None:
        raise ValueError("traces in S3 are fetched by Dask workers: give a scheduler or a client")

    planned, kept = plan_ranks(names, problems.cap, cache, s3) if served is None else ([], set())

    def run(tasks: list[list[int]], one_rank: bool) -> list[TaskResult]:
        jobs = [[(i, names[i]) for i in task] for task in tasks]
        if client is None:
            results = [reduce_task(job, problems.cap, s3, one_rank, cache) for job in jobs]
        else:
            # A task of several files (a rank's cycles) reads each file in a task of its own, so the
            # files are read on every worker at once; one task then merges and analyses the rank.
            # Submitted in order, each reduction before the next task's reads: Dask runs it first. A task whose
            # files all have their heads kept is one task (served from the cache, or read there if a piece is gone).
            futures, reads = [], []
            for job in jobs:
                if len(job) == 1 or all(i in kept for i, _ in job):
                    futures.append(client.submit(reduce_task, job, problems.cap, s3, one_rank, cache, pure=False))
                    continue
                parts = [client.submit(read_file, i, name, problems.cap, s3, cache, pure=False) for i, name in job]
                reads += parts
                futures.append(client.submit(reduce_reads, parts, one_rank, cache, pure=False))
            try:
                results = client.gather(futures)
            except Exception as err:
                _explain_dask_failure(err)
                raise
            finally:
                for future in futures + reads:
                    future.release()
        if stats is not None:
            stats.extend(r.stats for r in results)
        return results

    results = served if served is not None else run(plan_tasks(names, planned), False)
    per_file = {i: found for result in results for i, found in result.problems.items()}
    for i in sorted(per_file):  # in file order, as a sequential read records them
        counts, items = per_file[i]
        problems.counts.update(counts)
        problems.items.extend(items[: max(problems.cap - len(problems.items), 0)])
    by_key: dict[tuple, list[RankSummary]] = {}
    for result in results:
        for summary in result.ranks:
            by_key.setdefault(summary.key, []).append(summary)
    split = [key for key, found in by_key.items() if len(found) > 1]
    if split:  # a rank spread over several tasks: reduced again from all its files at once
        again = run([sorted(i for s in by_key[key] for i in s.members) for key in split], True)
        for key, result in zip(split, again):
            by_key[key] = result.ranks
    summaries = [by_key[key][0] for key in sorted(by_key, key=rank_order)]
    labels = unique_labels([(s.label, s.first_name) for s in summaries])
    ranks: dict[str, dict] = {}
    for summary, label in zip(summaries, labels):
        if len(summary.workers) > 1:
            problems.add(summary.first_file, None, f"rank {label}: trace files of {len(summary.workers)} processes "
                         f"({', '.join(summary.workers[:4])}) merged; a folder reused by several runs?")
        for note in summary.doc.get("data_notes", ()):  # steps cut at the profiler's span or not annotated
            problems.add(summary.first_file, None, f"rank {label}: {note}")
        ranks[label] = summary.doc
    doc = {"version": 2, "files": [Path(name).name for name in names], "ranks": ranks,
           "comparison": compare_ranks(ranks)}
    doc["straggler"] = straggler_summary(doc["comparison"])
    doc["job"] = job_tables(summaries, labels)
    formats = sorted({fmt.name for name in names if (fmt := trace_format(Path(name))) is not None})
    if any(name != TRACE_FORMATS[0].name for name in formats):  # Kineto-only documents stay as they were
        doc["formats"] = formats
    return doc, problems


def _explain_dask_failure(err: Exception) -> None:
    """A worker that died (out of memory, killed) is the environment, not a bug: one line, exit 2."""
    from distributed import KilledWorker

    if isinstance(err, KilledWorker):
        raise InputError(f"--scheduler: a Dask worker died while analysing PyTorch profiler traces ({err}); each "
                         "worker needs the memory of one rank's traces (docs/distributed.md)") from None


def straggler_summary(comparison: dict) -> dict | None:
    """The top-level ``straggler`` of kineto.json: rank, reason, evidence, method (None: none found)."""
    if comparison.get("straggler") is None:
        return None
    return {"rank": comparison["straggler"], "reason": comparison.get("reason"),
            "evidence": list(comparison.get("evidence") or []), "method": comparison.get("method")}


def job_tables(summaries: list[RankSummary], labels: list[str]) -> dict:
    """Kernels and CPU operators over all ranks: each name's total and count summed over the ranks (in
    rank order) from every rank's complete per-name totals, so the top 15 is exact; with the
    per-rank least and most time among the ranks that ran it."""
    out: dict = {"ranks": len(summaries)}
    for key, count_key, top_n in (("kernels", "launches", TOP_KERNELS), ("cpu_ops", "calls", TOP_OPS)):
        acc: dict[str, list] = {}  # name -> [total µs, count, ranks, least µs, its rank, most µs, its rank]
        for summary, label in zip(summaries, labels):
            for name, (total, count) in summary.totals.get(key, {}).items():
                entry = acc.get(name)
                if entry is None:
                    acc[name] = [total, count, 1, total, label, total, label]
                    continue
                entry[0] += total
                entry[1] += count
                entry[2] += 1
                if total < entry[3]:
                    entry[3], entry[4] = total, label
                if total > entry[5]:
                    entry[5], entry[6] = total, label
        grand = 0.0  # all kernel time of the job (the ranks' kernels.total_ms, in rank order)
        for summary in summaries if key == "kernels" else ():
            grand += summary.doc["kernels"]["total_ms"]
        ranked = sorted(acc.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top_n]
        top = []
        for name, (total, count, n, least, least_at, most, most_at) in ranked:
            row = {"name": name, "total_ms": total / 1000.0, count_key: count, "mean_us": total / count if count else 0.0,
                   "ranks": n, "min_rank_ms": least / 1000.0, "min_rank": least_at, "max_rank_ms": most / 1000.0,
                   "max_rank": most_at}
            if key == "kernels":
                row["pct"] = 100.0 * (total / 1000.0) / grand if grand else 0.0
            top.append(row)
        table = {"count": sum(e[1] for e in acc.values()), "distinct": len(acc), "top": top}
        if key == "kernels":
            table["total_ms"] = grand
        out[key] = table
    return out
