"""The Dask client that ``--scheduler`` asks for: a fresh local cluster with reportgen's settings (closed on
exit), or an existing scheduler reached after its handshake; a local cluster's workers forked from one
server that imported their modules once.

Dask itself is imported only inside these functions (5.8 s): a command without ``--scheduler`` never pays it.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import os
import re

from reportgen.cluster.scheduler import Scheduler, check_dask_installed
from reportgen.errors import InputError
from reportgen.workdir import dask_scratch, socket_folder

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
# workers): a failure reaches the command as the task's exception (worded in ``trace_analysis.job``).
LOCAL_HTTP_ADDRESS = "127.0.0.1:0"
# A local cluster's workers are forked from one server process that imported these once (spawned workers
# each import Dask, then the task's modules), and a forked worker ends without an interpreter teardown:
# local:2's close 0.86-1.23 s -> 0.07-0.11 s, its workers' start-up CPU 1.0 -> 0.7-0.8 s, a worker's first
# trace task 0.3-0.9 s -> 0.05 s sooner (load ~12). The last one freezes what the others imported
# (``cluster.fork_server_heap``): a worker's full collections then skip Dask's and the reader's objects.
# ``readers.distributed`` (the system pieces' task) is named on its own: ``trace_analysis.job`` imported it
# until the Dask code moved here, and the workers keep inheriting it.
LOCAL_PRELOAD = ["distributed", "reportgen.trace_analysis.job", "reportgen.readers.distributed",
                 "reportgen.cluster.fork_server_heap"]


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
    """A tcp:// scheduler must answer its handshake within ``timeout`` (``cluster.handshake``: Client's own
    limit covers only the TCP connect)."""
    from reportgen.cluster.handshake import check_scheduler

    match = re.match(r"^tcp://(?P<host>[^\s/:]+):(?P<port>\d{1,5})/?$", address)
    if match:
        check_scheduler(match.group("host"), int(match.group("port")), address, timeout)


def settled(future, timeout: float) -> bool:
    """Whether a Dask future finished (or failed) within ``timeout`` seconds."""
    import asyncio

    from distributed import wait

    try:
        wait(future, timeout=timeout)
    except (TimeoutError, asyncio.TimeoutError):
        return False
    return True
