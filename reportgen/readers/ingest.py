"""Reading a raw profile: the one place that chooses how the system metrics are read.

``read_profile`` reads the system metrics in this thread — on this machine (``readers.system``), on
a Dask cluster or through the ``--incremental`` cache (``readers.distributed``, which runs the same
reader on pieces and gives identical tables) — and the framework traces in a helper thread at the
same time (``readers.framework``; with a Dask cluster one task per trace file, merged into the
identical table by ``readers.distributed.read_traces``). Then it drops clock jumps (``readers.clock``). The engine turns
the result into the rules' input (``engine.model.AnalysisData``).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from reportgen.errors import InputError
from reportgen.problems import ProblemLog
from reportgen.readers.heap import reuse_freed_heap


@dataclass
class Profile:
    system: object  # readers.system.SystemData: per-node tick tables and the files' minute keys
    events: object  # pandas.DataFrame: the framework event table (or what TraceReduction.merge made)
    first_key_us: int | None  # the first system file's minute inside the job's time range


@dataclass(frozen=True)
class TraceReduction:
    """How the framework traces are reduced instead of being held as one event table (the engine's
    ``framework_events``): ``reduce(file_events, span)`` runs on each file's
    ``readers.framework.FileEvents`` where the file is read (here, or on a Dask worker: it must be a
    picklable module-level function) and drops the file's clock jumps (``span``: the files' time
    range, ``readers.clock``); ``merge(iterable, problems)`` merges the results in file order and
    returns an object with ``dropped`` (node -> events dropped as clock jumps)."""

    reduce: object
    merge: object


def read_profile(raw_root: Path, problems: ProblemLog, *, scheduler: str | None = None,
                 cache_root: Path | None = None, s3_system=None, s3_framework=None,
                 traces: TraceReduction | None = None, client=None) -> Profile:
    """Everything under ``raw_root`` (``system/`` and ``framework/``). ``scheduler`` (``local[:N]`` or
    ``tcp://host:port``): the system metrics and the framework traces are read on Dask;
    ``cache_root``: records of unchanged system files come from the ``--incremental`` cache;
    ``s3_system`` / ``s3_framework`` (``cluster.s3_objects.S3System``): the Dask workers fetch the system
    files / the framework traces from S3 themselves. ``traces``: the framework traces reduced file by
    file (``Profile.events`` is then what its ``merge`` returns). ``client``: a ``dask.distributed.Client``
    the caller holds, used instead of starting one for ``scheduler``. See docs/distributed.md."""
    raw_root = Path(raw_root)
    if not raw_root.is_dir():
        raise InputError(f"raw profiler folder not found: {raw_root}")
    if (s3_system is not None or s3_framework is not None) and scheduler is None and client is None:
        raise InputError("raw data in S3 is read by Dask workers: give --scheduler")
    from reportgen.readers.clock import drop_clock_outliers, file_time_range_us, record_dropped_events

    # Clock jumps: records far outside the files' main time range are dropped and counted (clock.py).
    # The range comes from the file names alone; a per-file reduction needs it before the reading.
    system, events, span = _read_both(raw_root, problems, scheduler, cache_root, s3_system, s3_framework, traces,
                                      client)
    try:
        sys_keys = system.file_keys_us
        if traces is None:
            span = file_time_range_us(sys_keys + _framework_keys(raw_root, s3_framework))
            system.nodes, events = drop_clock_outliers(system.nodes, events, span, problems)
        else:
            system.nodes, _ = drop_clock_outliers(system.nodes, None, span, problems)
            record_dropped_events(problems, events.dropped)
        first_key = system.first_file_key_us
        if span is not None:
            first_key = min((k for k in sys_keys if span[0] <= k <= span[1]), default=None)
    except BaseException:  # an interrupt: the summaries' spill folder goes with the run (see _close_result)
        _close_events(events)
        raise
    return Profile(system, events, first_key)


def read_system_metrics(raw_root: Path, problems: ProblemLog, *, client=None, cache_root: Path | None = None,
                        s3=None, listing: list | None = None, sharing=None):
    """The system metrics as per-node tick tables (``readers.system.SystemData``): read here, or by
    ``readers.distributed`` when a Dask ``client``, a ``cache_root`` or ``s3`` objects are given.
    ``listing``: the local files as ``readers.system.list_system_files`` listed them already;
    ``sharing``: a ``readers.system.SharedCores`` (its ``parsing`` set at once on the other paths)."""
    if client is not None or cache_root is not None or s3 is not None:
        if sharing is not None:
            sharing.parsing.set()
        from reportgen.readers.distributed import read_pieces

        data, _ = read_pieces(raw_root, problems, client=client, cache_root=cache_root, s3=s3,
                              local_files=listing if s3 is None else None)
        return data
    from reportgen.readers.system import read_system

    return read_system(raw_root, problems, listing, sharing=sharing)


def _system_listing(raw_root: Path, s3_system, problems: ProblemLog) -> list | None:
    """The local system files, listed once for the whole run (None for S3: the workers' objects)."""
    if s3_system is not None:
        return None
    from reportgen.readers.system import list_system_files

    return list_system_files(raw_root, problems)


def _system_keys(listing: list | None, s3_system) -> list[int]:
    """The minute keys of the system files, as the system readers list them."""
    if s3_system is not None:
        from reportgen.readers.distributed import system_listing_keys

        return system_listing_keys(s3_system)
    return [k for k, _ in listing]


def _framework_keys(raw_root: Path, s3_framework) -> list[int]:
    """The file-name times of the framework traces (in S3 when the workers read them there)."""
    if s3_framework is not None:
        from reportgen.readers.distributed import framework_listing

        return [k for k, _ in framework_listing(raw_root, None, s3_framework)]
    from reportgen.readers.framework_files import file_key_us, list_framework_files

    return [file_key_us(p) for p in list_framework_files(raw_root)]


def _framework_files(raw_root: Path, s3_framework, problems: ProblemLog) -> list | None:
    """The local framework traces, listed once for the whole run (None for S3: the workers' objects)."""
    if s3_framework is not None:
        return None
    from reportgen.readers.framework_files import list_framework_files

    return list_framework_files(raw_root, problems)


def _read_traces(raw_root: Path, problems: ProblemLog, stop, client=None, s3_framework=None,
                 traces: TraceReduction | None = None, span=None, files: list | None = None,
                 after: threading.Event | None = None):
    """The framework traces (see ``read_profile``); ``after``: an event to wait for before any work."""
    if after is not None:
        after.wait()
    reduce = merge = None
    if traces is not None:
        reduce, merge = functools.partial(traces.reduce, span=span), traces.merge
    if client is None:
        from reportgen.readers.framework import read_framework, reduce_framework  # pandas: imported in this thread

        if traces is not None:
            return reduce_framework(raw_root, problems, reduce, merge, stop, files=files)
        return read_framework(raw_root, problems, stop)
    from reportgen.readers.distributed import framework_listing, read_traces

    if files is not None:  # listed already: the same files, relative to the profile root
        files = [str(p.relative_to(raw_root)) for p in files if p.is_relative_to(raw_root)]
    else:
        files = [rel for _, rel in framework_listing(raw_root, problems, s3_framework)]
    return read_traces(raw_root, problems, files, client=client, s3=s3_framework, stop=stop, reduce=reduce,
                       merge=merge)


def _framework_listing_and_span(raw_root: Path, listing: list | None, s3_system, s3_framework,
                                fw_problems: ProblemLog) -> tuple[list | None, tuple[int, int] | None]:
    """The local framework traces (None for S3) and the job's time range from every file's name (``readers.clock``)."""
    from reportgen.readers.clock import file_time_range_us
    from reportgen.readers.framework_files import file_key_us

    fw_files = _framework_files(raw_root, s3_framework, fw_problems)
    fw_keys = [file_key_us(p) for p in fw_files] if fw_files is not None else _framework_keys(raw_root, s3_framework)
    return fw_files, file_time_range_us(_system_keys(listing, s3_system) + fw_keys)


def _fork_system_read(raw_root: Path, listing: list | None, cap: int, stack):
    """A ``forked_call.ForkedCall`` reading the local system metrics in a child process (``_read_system_forked``),
    or None where no fork is allowed (``forked_call.can_fork``). Tables past the memory budget go to a spill
    file made here, before the fork, so that the tables sent back refer to this process's open file."""
    from reportgen.readers.forked_call import can_fork, start

    if not can_fork():
        return None
    from reportgen.readers.tick_table import ColumnSpill

    try:
        spill = ColumnSpill()
    except OSError:  # no temporary folder: the child cannot make one either and keeps its tables in memory
        spill = None
    shared = {"spill": spill} if spill is not None else {}
    return start(_read_system_forked, raw_root, listing, cap, spill, stack=stack, shared=shared)


def _read_system_forked(notice, raw_root: Path, listing: list | None, cap: int, spill):
    """The child's work: the system metrics and the problems found in them. DuckDB runs with one thread
    fewer until ``notice`` (the parent's traces are read), as beside the traces thread (``SharedCores``)."""
    from reportgen.readers.system import SharedCores

    reuse_freed_heap()  # the slices' arrays kept mapped between nodes (readers.heap): this process only
    sharing = SharedCores(alone=notice)
    sharing.parsing.set()
    return _read_system_here(raw_root, cap, listing, sharing, spill)


def _read_system_here(raw_root: Path, cap: int, listing: list | None, sharing, spill=None):
    """The system metrics and the problems found in them, read in this process (the child's work, or the
    parent's when the child ended without answering)."""
    from reportgen.readers.system import read_system

    found = ProblemLog(cap=cap)
    return read_system(raw_root, found, listing, sharing=sharing, spill=spill), found


def _traces_done(sharing, forked) -> None:
    """The traces are read: the system read may use every core (here, or in the forked child)."""
    sharing.alone.set()
    if forked is not None:
        forked.notify()


def _close_result(future) -> None:
    """Close what the traces thread returned (the framework summaries' spill folder), when it returns at all.
    Runs before the pool's shutdown returns, so before an interrupt reaches the command line, which then
    leaves with ``os._exit``: no finalizer would remove the folder later."""
    if future.cancelled() or future.exception() is not None:
        return
    close = getattr(future.result(), "close", None)
    if close is not None:
        close()


def _close_events(events) -> None:
    """Close a ``Profile.events`` that has resources (the reduction's spill folder); a table has none."""
    close = getattr(events, "close", None)
    if close is not None:
        close()


def _read_both(raw_root: Path, problems: ProblemLog, scheduler, cache_root, s3_system, s3_framework=None,
               traces: TraceReduction | None = None, client=None):
    """System metrics in this thread, framework traces in a helper thread at the same time.

    The system side spends most of its time inside DuckDB (or waiting for Dask workers), which runs
    without the GIL, so the Python decoding of the traces fills the otherwise idle core. The
    traces' problems are kept apart and appended after the system ones: data-quality.json lists
    them in the same order as a one-after-the-other read.

    With ``traces`` (the framework traces reduced file by file) the files are listed once, before they are
    read (the system files before the system read's child is forked, the traces right after): the
    reduction needs their time range (returned as the third value; None without ``traces``) before
    reading, and the reading uses the same listing, so a file deleted after it is an unreadable file,
    counted, never silently absent."""
    fw_problems = ProblemLog(cap=problems.cap)
    listing = fw_files = span = None
    if traces is not None:
        listing = _system_listing(raw_root, s3_system, problems)
    stop = threading.Event()
    with contextlib.ExitStack() as stack:
        if client is None and scheduler is not None:
            from reportgen.cluster.client import dask_client
            from reportgen.cluster.scheduler import parse_scheduler

            client = stack.enter_context(dask_client(parse_scheduler(scheduler)))
        local = client is None and cache_root is None and s3_system is None
        # The local system metrics read in a forked child where the command line allows it
        # (readers.forked_call): forked before any thread starts (the pool's starts at its first task).
        # Closed first on the way out (an interrupted run does not wait for it).
        forked = _fork_system_read(raw_root, listing, problems.cap, stack) if local else None
        if traces is not None:  # after the fork: the child does not need them (~45 ms at one core before it)
            fw_files, span = _framework_listing_and_span(raw_root, listing, s3_system, s3_framework, fw_problems)
        if forked is None and local:
            # DuckDB imported before the traces thread starts importing pandas: an import holds the GIL, so the
            # two would take turns, and the system metrics' read (DuckDB's threads, without the GIL) would start
            # only after both; this way it starts first and pandas is imported beside it.
            import duckdb  # noqa: F401
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=1, thread_name_prefix="reportgen-traces"))
        # The traces thread starts its work (pandas' import first) once DuckDB parses, and DuckDB runs with one
        # thread fewer until the traces are read (readers.system.SharedCores).
        from reportgen.readers.system import SharedCores

        sharing = SharedCores()
        if forked is not None:  # the traces thread has this process to itself: it starts at once
            sharing.parsing.set()
        pending = pool.submit(_read_traces, raw_root, fw_problems, stop, client, s3_framework, traces, span, fw_files,
                              sharing.parsing)
        pending.add_done_callback(lambda _: _traces_done(sharing, forked))
        try:
            if forked is not None:
                system, found = forked.result(lambda: _read_system_here(raw_root, problems.cap, listing, sharing))
                problems.merge(found)
            else:
                system = read_system_metrics(raw_root, problems, client=client, cache_root=cache_root, s3=s3_system,
                                             listing=listing, sharing=sharing)
        except BaseException:
            stop.set()  # do not keep a failed or interrupted run waiting for the traces
            pending.add_done_callback(_close_result)  # and what they made so far goes with the run
            raise
        finally:
            sharing.parsing.set()  # whatever happened above, the traces thread does not wait any longer
        events = pending.result()
    problems.merge(fw_problems)
    return system, events, span
