"""System-metrics ingest split into pieces of work: on a Dask cluster (``--scheduler``), and/or with
the per-piece cache of ``--incremental``; and the framework traces one Dask task per file.

Only imported when one of those is asked for. This module is what the tasks do and how their results
merge; the cluster they run on (the client, the scheduler, the workers' S3 downloads) is
``reportgen.cluster``'s, and Dask is imported there, only when a client is made.

A piece is a list of system files, normally all files of one node (the node in the file names).
``reduce_piece`` runs on a worker: it reads the files with the same ``SystemReader`` as the
single-machine path (DuckDB per node, the careful line-by-line fallback) and returns

* the node's finished tick table (``NodeSystem``, ~2 bytes per value) when the files held records
  of exactly that one node: the table *is* the mergeable summary. Every percentile, mean and
  threshold count the rules compute is then computed on the client from the very same table a
  single-machine read builds, so results are exact (rule JSONs byte-equal), not approximate;
* the parsed records (series catalog, timestamps, values) when the piece held records of several
  nodes, or when the caller caches records (``--incremental``). The client concatenates the records
  of every piece that holds a node and builds that node's table (same ``build_table``).

If a node's records turn up in more than one piece (a file named for another node), the pieces
that already built a table for it are run again in records mode, so such a node is still built
from all of its records at once, as in the single-machine ``_Restart`` fallback.

S3 sources: the client lists the objects and passes keys to the workers; each worker downloads its
own piece's objects (``cluster.s3_objects``) into its local temporary folder, reduces them and deletes
them. No system metrics pass through the client.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from reportgen.cluster.client import settled
from reportgen.cluster.s3_objects import S3System, download_objects
from reportgen.cluster.task_stats import TaskStats, peak_rss
from reportgen.readers.incremental import (Records, RecordCache, cache_folder, local_fingerprint, merge_problems,
                                          records_from_reader, tables_from_records)
from reportgen.problems import ProblemLog
from reportgen.environment import count

# ------------------------------------------------------------------------------------ sources


def _s3_listing(s3: S3System) -> tuple[list[tuple[int, str]], dict[str, tuple]]:
    """``(minute key µs, relative key)`` of the system files, sorted, and their fingerprints."""
    from reportgen.readers.system import SYSTEM_FILE_RE

    files, fps = [], {}
    for key, size, etag in s3.objects:
        rel = s3.rel(key)
        m = SYSTEM_FILE_RE.match(rel.rsplit("/", 1)[-1])
        if m and rel.startswith("system/"):
            files.append((int(m.group(1)) * 1_000_000, rel))
            fps[rel] = (rel, int(size), str(etag))
    files.sort(key=lambda kp: (kp[0], kp[1]))
    return files, fps


# ------------------------------------------------------------------------------------ the task


def reduce_piece(root: str, rels: list[str], cap: int, want_records: bool, s3: S3System | None = None,
                 duckdb_threads: int | None = None) -> Records:
    """Worker side: read one piece's files and reduce them (see the module docstring).
    ``duckdb_threads``: DuckDB threads for this task (None: the reader's own setting)."""
    from reportgen.readers.system import SystemReader

    started = time.perf_counter()
    local = ProblemLog(cap=cap)
    with contextlib.ExitStack() as stack:
        if s3 is not None:
            read_root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="reportgen-s3-")))
            paths = [path for _, path in download_objects(s3, rels, read_root)]
        else:
            read_root = Path(root)
            paths = [read_root / r for r in rels]
        # The parallelism is Dask's (one task per worker thread): DuckDB threads beyond that only
        # oversubscribe the cores. Results do not depend on it (row order is never relied upon).
        reader = SystemReader(read_root, local, streaming=False, threads=duckdb_threads)
        try:
            reader.read(paths)
            seen = [n for n, c in reader.acc.chunks.items() if c]
            if want_records or len(seen) > 1:
                rec = records_from_reader(reader, local, reader.files_read)
            else:
                tables = reader.tables()
                rec = Records(keys=[], nodes={}, problem_counts=dict(local.counts),
                              problem_items=[(p.file, p.line, p.reason) for p in local.items],
                              files_read=reader.files_read, tables=tables)
        finally:
            reader.con.close()
        nbytes = sum(p.stat().st_size for p in paths if p.exists())
    rec.stats = TaskStats(files=len(paths), bytes=nbytes, seconds=time.perf_counter() - started,
                           worker_pid=os.getpid(), peak_rss=peak_rss())
    return rec


# ------------------------------------------------------------------------------------ the client


@dataclass
class PiecesResult:
    nodes: dict
    files_read: int
    pieces: int
    cached_pieces: int
    stats: list[TaskStats] = field(default_factory=list)


def _node_of(rel: str) -> str:
    from reportgen.readers.system import SYSTEM_FILE_RE

    m = SYSTEM_FILE_RE.match(rel.rsplit("/", 1)[-1])
    return m.group(2) if m else ""


def _plan(files: list[str], covered: set[str], split_tail: bool) -> list[list[str]]:
    """Pieces of the files not ``covered``: per node (file-name node, natural order), and with
    ``split_tail`` the node's newest file as a piece of its own (a live job may still append to it)."""
    from reportgen.readers.tick_build import natural_key

    groups: dict[str, list[str]] = {}
    for rel in files:
        groups.setdefault(_node_of(rel), []).append(rel)
    pieces = []
    for node in sorted(groups, key=natural_key):
        todo = [f for f in groups[node] if f not in covered]
        if not todo:
            continue
        newest = groups[node][-1]
        if split_tail and newest in todo and len(todo) > 1:
            pieces += [todo[:-1], [newest]]
        else:
            pieces.append(todo)
    return pieces


def read_pieces(root: Path, problems: ProblemLog, *, client=None, cache_root: Path | None = None,
                s3: S3System | None = None, local_files: list[tuple[int, Path]] | None = None):
    """Read every system file of the profile piece by piece; returns ``(SystemData, PiecesResult)``."""
    from reportgen.readers.system import list_system_files
    from reportgen.readers.tick_build import natural_key
    from reportgen.readers.tick_table import SystemData

    root = Path(root)
    if s3 is not None:
        listing, fingerprints = _s3_listing(s3)
        source_id = s3.source_id
    else:
        found = local_files if local_files is not None else list_system_files(root, problems)
        listing = []
        for key_us, path in found:
            try:
                listing.append((key_us, str(path.relative_to(root))))
            except ValueError:
                continue
        fingerprints = {}
        source_id = str(root.resolve())
        if cache_root is not None:
            for _, rel in listing:
                try:
                    fingerprints[rel] = local_fingerprint(root, root / rel)
                except OSError:
                    pass  # vanished since the listing: the reader records it
    data = SystemData(files=len(listing), file_keys_us=[k for k, _ in listing])
    if not listing:
        return data, PiecesResult({}, 0, 0, 0)
    data.first_file_key_us, data.last_file_key_us = listing[0][0], listing[-1][0]
    order = {rel: i for i, (_, rel) in enumerate(listing)}
    rels = [rel for _, rel in listing]

    cache = None
    cached: list[tuple[list[str], Records]] = []
    covered: set[str] = set()
    if cache_root is not None:
        cache = RecordCache(cache_folder(cache_root, source_id), source_id)
        cached, covered = cache.lookup(fingerprints)
    want_records = cache is not None
    plan = _plan(rels, covered, split_tail=cache is not None)

    results = _run(plan, str(root), problems.cap, want_records, s3, client)
    if cache is not None:
        for files, rec in zip(plan, results):
            fps = [fingerprints[f] for f in files if f in fingerprints]
            if len(fps) == len(files):  # a file that vanished mid-run is not cached
                cache.store(fps, rec)

    # Nodes whose records are in several pieces: pieces that built a table for one of them redo it as records.
    holders: dict[str, list[int]] = {}
    for i, rec in enumerate(results):
        for node in (*rec.tables, *rec.nodes):
            holders.setdefault(node, []).append(i)
    shared = {n for n, where in holders.items() if len(where) > 1}
    redo = [i for i, rec in enumerate(results) if shared.intersection(rec.tables)]
    if redo:
        again = _run([plan[i] for i in redo], str(root), problems.cap, True, s3, client)
        for i, rec in zip(redo, again):
            rec.files_read += results[i].files_read
            results[i] = rec

    pieces = [(order[files[0]], files, rec, False) for files, rec in zip(plan, results)]
    pieces += [(min(order[f] for f in files), files, rec, True) for files, rec in cached]
    pieces.sort(key=lambda p: p[0])
    nodes: dict = {}
    for _, _, rec, _ in pieces:
        merge_problems(problems, rec.problem_counts, rec.problem_items)
        nodes.update(rec.tables)
    nodes.update(tables_from_records([rec for _, _, rec, _ in pieces if rec.nodes], problems))
    data.nodes = {n: nodes[n] for n in sorted(nodes, key=natural_key)}
    files_read = sum(rec.files_read for rec in results)
    data.files_read = files_read
    return data, PiecesResult(data.nodes, files_read, len(plan), len(cached),
                              [getattr(r, "stats", None) for r in results if getattr(r, "stats", None)])


# ------------------------------------------------------------------------------------ framework traces


def framework_listing(root: Path, problems: ProblemLog | None = None, s3: S3System | None = None) -> list[tuple[int, str]]:
    """``(file-name time µs, path relative to root)`` of every framework trace, in the order the
    single-machine reader reads them: from the local folder, or from the S3 objects left to the workers."""
    from reportgen.readers.framework import file_key_us, list_framework_files
    from reportgen.sources.layout import is_framework_trace

    if s3 is None:
        out = []
        for p in list_framework_files(root, problems):
            try:
                out.append((file_key_us(p), str(p.relative_to(root))))
            except ValueError:
                continue
        return out
    rels = [s3.rel(key) for key, _, _ in s3.objects]
    rels = [r for r in rels if r.startswith("framework/") and is_framework_trace(tuple(r.split("/")))]
    return sorted(((file_key_us(Path(r)), r) for r in rels), key=lambda kr: (kr[0], str(root / kr[1])))


def system_listing_keys(s3: S3System) -> list[int]:
    """The minute keys (µs) of the system files in S3, as ``read_pieces`` lists them."""
    return [k for k, _ in _s3_listing(s3)[0]]


def reduce_trace(root: str, rels: list[str], cap: int, s3: S3System | None = None, reduce=None):
    """Worker side: one framework trace file (``rels[0]``) read into its event columns
    (``readers.framework.FileEvents``), or what ``reduce`` (a picklable function of them) makes of
    them. With ``s3`` the worker downloads it, and the TF profiler's ``.metadata`` markers it needs
    (``rels[1:]``), into its own temporary folder first."""
    from reportgen.readers.framework import read_trace_file

    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if s3 is not None:
            read_root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="reportgen-s3-")))
            download_objects(s3, rels, read_root)
        else:
            read_root = Path(root)
        path = read_root / rels[0]
        fe = read_trace_file(read_root, path, cap)
        nbytes = path.stat().st_size if path.is_file() else 0
    if reduce is not None:
        fe = reduce(fe)
    fe.stats = TaskStats(files=1, bytes=nbytes, seconds=time.perf_counter() - started, worker_pid=os.getpid(),
                          peak_rss=peak_rss())
    return fe


def _tf_markers(root: Path, rel: str) -> list[str]:
    """The ``.metadata`` markers a TF trace's base time comes from (``FrameworkReader._tf_base``:
    four folders up), as paths relative to ``root``; the client has them (they are not deferred)."""
    if not rel.endswith(".trace.json.gz"):
        return []
    parts = Path(rel).parents
    if len(parts) < 4:
        return []
    folder = root / parts[3]
    try:
        return sorted(str(p.relative_to(root)) for p in folder.glob("*.metadata") if p.is_file())
    except (OSError, ValueError):
        return []


def read_traces(root: Path, problems: ProblemLog, files: list[str], *, client, s3: S3System | None = None, stop=None,
                reduce=None, merge=None):
    """The framework event table, one Dask task per trace file (``reduce_trace``); the client merges
    the per-file columns in file order as they arrive (``readers.framework.table_of_files``), so
    the table and the problems are those of the single-machine read. ``reduce`` (run on the
    workers) and ``merge(iterable, problems)``: another per-file reduction and its merge
    (``readers.ingest.TraceReduction``). ``stop``: checked between files."""
    from reportgen.readers.framework import table_of_files

    root = Path(root)
    merge = merge or table_of_files
    futures = [client.submit(reduce_trace, str(root), [rel, *(_tf_markers(root, rel) if s3 is not None else [])],
                             problems.cap, s3, reduce, pure=False) for rel in files]

    def arriving():
        for i, f in enumerate(futures):
            while not settled(f, 0.5):
                if stop is not None and stop.is_set():
                    return
            fe = f.result()
            f.release()
            futures[i] = None
            yield fe

    try:
        return merge(arriving(), problems)
    finally:
        left = [f for f in futures if f is not None]
        if left:
            client.cancel(left)


def _run(plan: list[list[str]], root: str, cap: int, want_records: bool, s3, client) -> list[Records]:
    if not plan:
        return []
    if client is None:
        return [reduce_piece(root, files, cap, want_records, s3) for files in plan]
    # DuckDB threads per Dask task: the cluster provides the parallelism (run workers with one thread
    # each and as many processes as cores); $REPORTGEN_DASK_DUCKDB_THREADS overrides it.
    threads = count("REPORTGEN_DASK_DUCKDB_THREADS")
    futures = [client.submit(reduce_piece, root, files, cap, want_records, s3, threads, pure=False) for files in plan]
    try:
        return client.gather(futures)
    finally:
        for f in futures:
            f.release()
