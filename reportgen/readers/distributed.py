"""System-metrics ingest split into pieces of work: on a Dask cluster (``--scheduler``), and/or with
the per-piece cache of ``--incremental``.

Only imported when one of those is asked for; Dask itself only inside :func:`dask_client`.

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
own piece's objects into its local temporary folder, reduces them and deletes them. No system
metrics pass through the client.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from reportgen.readers.incremental import (Records, RecordCache, cache_folder, local_fingerprint, merge_problems,
                                          records_from_reader, tables_from_records)
from reportgen.problems import ProblemLog
from reportgen.environment import count
from reportgen.errors import InputError
from reportgen.workdir import dask_scratch, socket_folder

_LOCAL_RE = re.compile(r"^local(?::(\d+))?$")
_TCP_RE = re.compile(r"^(tcp|tls)://[^\s/:]+:\d{1,5}/?$")
INSTALL_HINT = "pip install 'reportgen[dask]'"
# DuckDB threads per Dask task: the cluster provides the parallelism (run workers with one thread
# each and as many processes as cores); $REPORTGEN_DASK_DUCKDB_THREADS overrides it.
# A local cluster's own background work competes with the tasks for the same cores: no statistical
# profiler in the workers (it samples the running task every 10 ms, for a dashboard nobody sees here)
# and slower housekeeping ticks. A busy worker's CPU outside its task: ~0.02 -> ~0.008 s per second.
# And glibc's malloc as in one process: Dask starts its workers with MALLOC_TRIM_THRESHOLD_=65536, which
# also freezes the threshold above which malloc maps fresh pages (128 KiB), so every array of a trace read
# was new pages: 24 reads of a real rank took 1.25 M page faults and 3.1 s of system time instead of
# 0.33 M and 0.7 s (12.6 CPU s instead of 9.8, one process started with that variable).
# The memory monitors (each worker's and its nanny's, in the client) poll every 500 ms, not 100 ms: an idle
# local:2 cluster's CPU 0.046 -> 0.024 s per second of wall (client + workers, load ~2); a worker past its
# memory limit is still stopped within half a second.
LOCAL_CLUSTER_CONFIG = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "500ms",
                        "distributed.admin.system-monitor.interval": "2s",
                        "distributed.worker.memory.monitor-interval": "500ms",
                        "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
if "forkserver" in multiprocessing.get_all_start_methods():  # not on Windows: spawned workers there
    LOCAL_CLUSTER_CONFIG["distributed.worker.multiprocessing-method"] = "forkserver"
# A local cluster serves no dashboard (nobody sees it in a command's run; with bokeh installed it cost
# 0.59 s of every run's start, median of 6 paired runs) and its scheduler's HTTP server, which Dask always
# starts, listens on the loopback interface only, not on every interface (``dashboard_address=":0"`` did).
# Dask's own log lines stay off the terminal (``silence_logs=CRITICAL`` here, ``FORK_SERVER_ENV`` in the
# workers): a failure reaches the command as the task's exception (``_explain_dask_failure``).
LOCAL_HTTP_ADDRESS = "127.0.0.1:0"
# A local cluster's workers are forked from one server process that imported these once (spawned workers
# each import Dask, then the task's modules), and a forked worker ends without an interpreter teardown:
# local:2's close 0.86-1.23 s -> 0.07-0.11 s, its workers' start-up CPU 1.0 -> 0.7-0.8 s, a worker's first
# trace task 0.3-0.9 s -> 0.05 s sooner (load ~12). The last one freezes what the others imported
# (``readers.fork_server_heap``): a worker's full collections then skip Dask's and the reader's objects.
LOCAL_PRELOAD = ["distributed", "reportgen.trace_analysis.job", "reportgen.readers.fork_server_heap"]


# ------------------------------------------------------------------------------------ scheduler


@dataclass(frozen=True)
class Scheduler:
    spec: str
    workers: int | None = None  # local cluster size (None: one per CPU core)
    address: str | None = None  # tcp://host:port of an existing scheduler

    @property
    def local(self) -> bool:
        return self.address is None


def parse_scheduler(spec: str) -> Scheduler:
    """``local``, ``local:N`` or ``tcp://host:port`` (also ``tls://``); anything else is a usage error."""
    text = str(spec).strip()
    m = _LOCAL_RE.match(text)
    if m:
        n = int(m.group(1)) if m.group(1) else None
        if n is not None and not 1 <= n <= 1024:
            raise InputError(f"--scheduler {text}: the number of local workers must be between 1 and 1024")
        return Scheduler(text, workers=n)
    if _TCP_RE.match(text):
        return Scheduler(text, address=text.rstrip("/"))
    raise InputError(f"--scheduler {text!r}: expected local, local:N or tcp://host:port")


def dask_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("dask") is not None and importlib.util.find_spec("distributed") is not None


def check_dask_installed() -> None:
    if not dask_installed():
        raise InputError(f"--scheduler needs Dask, which is not installed: {INSTALL_HINT}")


@contextlib.contextmanager
def dask_client(sched: Scheduler, connect_timeout: float = 10.0):
    """A ``dask.distributed.Client``: a fresh local cluster (closed on exit) or the given scheduler."""
    check_dask_installed()
    if sched.local:
        start_fork_server()  # before Dask's own import here: the two overlap
    from dask.distributed import Client, LocalCluster

    import dask

    cluster = None
    try:
        if sched.local:
            n = sched.workers or os.cpu_count() or 1
            # local_directory: the run's work folder (workdir.scratch_env), not dask-scratch-space/ in $TMPDIR
            with dask.config.set(LOCAL_CLUSTER_CONFIG):  # the workers get it when they start
                _keep_our_preload()
                # env: this process's environment now (AWS_*, a test's variables), as a spawned worker would
                # inherit it; a forked one starts with the fork server's, from when the server started
                cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                       dashboard_address=LOCAL_HTTP_ADDRESS, scheduler_kwargs={"dashboard": False},
                                       local_directory=dask_scratch(),
                                       silence_logs=logging.CRITICAL, env=dict(os.environ))
            client = Client(cluster)
        else:
            _check_handshake(sched.address, connect_timeout)
            client = Client(sched.address, timeout=connect_timeout)
    except (OSError, TimeoutError) as err:
        if cluster is not None:
            cluster.close()
        where = "start a local Dask cluster" if sched.local else f"reach the Dask scheduler at {sched.address}"
        raise InputError(f"--scheduler: cannot {where} ({type(err).__name__}: {err})") from None
    except (TypeError, ValueError) as err:  # tls:// without Dask's TLS settings: the configuration, not a bug
        if cluster is not None:
            cluster.close()
        if sched.local:
            raise
        failed = InputError(f"--scheduler {sched.address}: Dask cannot connect with this configuration "
                            f"({type(err).__name__}: {err})")
        # The half-made Client lives in this traceback's frames: collected later, its __del__ can run inside
        # the next Client's loop start, which holds the lock its close waits for (a test run hung there).
        err.__traceback__ = None
    else:
        failed = None
    if failed is not None:
        gc.collect()
        raise failed from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# The fork server's environment at its start, where the user set none: what Dask's nanny puts in the
# environment before it starts a worker process (its ``pre-spawn-environ``, less MALLOC_TRIM_THRESHOLD_),
# read at interpreter start or at numpy's import, so it must be there before the server starts: one BLAS
# thread per worker, and one hash seed for every worker's str hashes (as spawned workers get it). And Dask's
# log level for the workers, set where the server imports ``distributed`` (a forked worker does not configure
# its logging again; ``silence_logs`` quiets only the nanny's logger there): a worker's heartbeat that raced
# the cluster's close printed a traceback at ERROR after a successful run.
FORK_SERVER_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                   "PYTHONHASHSEED": "6640", "DASK_LOGGING__DISTRIBUTED": "critical"}


def start_fork_server() -> None:
    """Start the local workers' fork server now, in the background, with our preload: its imports
    (``LOCAL_PRELOAD``, ~0.5 s) then run while this process imports Dask and starts the scheduler, instead
    of after (the cluster's start ~1.1 s -> ~0.6-0.8 s). The command line calls it first thing (its input
    is found meanwhile: 0.16 s less wall, 10 paired runs), ``dask_client`` again. Idempotent (a running
    server stays); nothing where workers are spawned."""
    if LOCAL_CLUSTER_CONFIG.get("distributed.worker.multiprocessing-method") != "forkserver":
        return
    from multiprocessing import forkserver

    socket_folder()  # its listener's path must fit a Unix socket, whatever $TMPDIR is
    multiprocessing.get_context("forkserver").set_forkserver_preload(LOCAL_PRELOAD)
    added = {k: v for k, v in FORK_SERVER_ENV.items() if k not in os.environ}
    os.environ.update(added)
    try:
        forkserver.ensure_running()
    finally:
        for k in added:
            os.environ.pop(k, None)


def _keep_our_preload() -> None:
    """Tell Dask the fork server's preload is set, before its first start would set its own (which imports
    pandas and lz4 in this process first, ~0.45 s, then in the server, and not the trace reader)."""
    if LOCAL_CLUSTER_CONFIG.get("distributed.worker.multiprocessing-method") != "forkserver":
        return
    from distributed import utils as dask_utils

    if getattr(dask_utils, "_forkserver_preload_set", None) is False:  # else Dask's own (a newer Dask: still right)
        dask_utils._forkserver_preload_set = True


def _check_handshake(address: str, timeout: float) -> None:
    """A tcp:// scheduler must answer its handshake within ``timeout`` (``dask_probe``: Client's own
    limit covers only the TCP connect)."""
    from reportgen.readers.dask_probe import check_scheduler

    match = re.match(r"^tcp://(?P<host>[^\s/:]+):(?P<port>\d{1,5})/?$", address)
    if match:
        check_scheduler(match.group("host"), int(match.group("port")), address, timeout)


# ------------------------------------------------------------------------------------ sources


@dataclass(frozen=True)
class S3System:
    """Raw-data objects in S3 that the workers fetch themselves: the system metrics, or (the same
    class, other objects) the framework traces."""

    bucket: str
    root_key: str  # the profile root ("" or ".../profiler-output"), no trailing slash
    objects: tuple[tuple[str, int, str], ...]  # (key, size, etag) of every object under <root>/system/ (or the traces)
    region: str | None = None
    session_kwargs: dict | None = None

    @property
    def source_id(self) -> str:
        return f"s3://{self.bucket}/{self.root_key}"

    def rel(self, key: str) -> str:
        return key[len(self.root_key) + 1:] if self.root_key else key

    def key(self, rel: str) -> str:
        return f"{self.root_key}/{rel}" if self.root_key else rel


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


def download_objects(s3: S3System, rels: list[str], dest: Path) -> list[tuple[str, Path]]:
    """Worker side: fetch ``rels`` (keys relative to ``s3.root_key``) into ``dest`` with the worker's own
    boto3 session; ``(rel, local path)`` of each (a key unsafe as a path is skipped)."""
    from reportgen.sources.aws import aws_errors, make_client, make_session
    from reportgen.sources.s3 import UnsafeKey, key_segments

    client = make_client(make_session(s3.session_kwargs), "s3", s3.region)
    out = []
    for rel in rels:
        try:
            path = dest.joinpath(*key_segments(rel))
        except UnsafeKey:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        with aws_errors(f"downloading s3://{s3.bucket}/{s3.key(rel)}"):
            client.download_file(s3.bucket, s3.key(rel), str(path))
        out.append((rel, path))
    return out


# ------------------------------------------------------------------------------------ the task


@dataclass
class PieceStats:
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    worker_pid: int = 0
    peak_rss: int = 0


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
    rec.stats = PieceStats(files=len(paths), bytes=nbytes, seconds=time.perf_counter() - started,
                           worker_pid=os.getpid(), peak_rss=peak_rss())
    return rec


def peak_rss() -> int:
    try:
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(kb) * (1 if os.uname().sysname == "Darwin" else 1024)
    except (ImportError, AttributeError, OSError):
        return 0


# ------------------------------------------------------------------------------------ the client


@dataclass
class PiecesResult:
    nodes: dict
    files_read: int
    pieces: int
    cached_pieces: int
    stats: list[PieceStats] = field(default_factory=list)


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
    fe.stats = PieceStats(files=1, bytes=nbytes, seconds=time.perf_counter() - started, worker_pid=os.getpid(),
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
            while not _settled(f, 0.5):
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


def _settled(future, timeout: float) -> bool:
    """Whether a Dask future finished (or failed) within ``timeout`` seconds."""
    import asyncio

    from distributed import wait

    try:
        wait(future, timeout=timeout)
    except (TimeoutError, asyncio.TimeoutError):
        return False
    return True


def _run(plan: list[list[str]], root: str, cap: int, want_records: bool, s3, client) -> list[Records]:
    if not plan:
        return []
    if client is None:
        return [reduce_piece(root, files, cap, want_records, s3) for files in plan]
    threads = count("REPORTGEN_DASK_DUCKDB_THREADS")
    futures = [client.submit(reduce_piece, root, files, cap, want_records, s3, threads, pure=False) for files in plan]
    try:
        return client.gather(futures)
    finally:
        for f in futures:
            f.release()
