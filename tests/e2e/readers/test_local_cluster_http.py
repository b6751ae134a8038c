"""``--scheduler local[:N]``: the cluster serves no dashboard, the scheduler's HTTP server (which Dask always
starts) listens on the loopback interface only, Dask's own log lines stay off the terminal, and the workers
start with the objects their fork server imported out of the garbage collector's scans."""

from __future__ import annotations

import logging
import sys
import types

import pytest

psutil = pytest.importorskip("psutil")
pytest.importorskip("distributed")


def _distributed_level() -> int:
    return logging.getLogger("distributed").level


def test_local_cluster_serves_no_dashboard_and_listens_on_loopback_only(monkeypatch):
    # a stand-in for bokeh's dashboard module: the scheduler would import it and connect it, were the
    # dashboard on (bokeh is not installed here; where it is, the dashboard cost 0.59 s of each start)
    connected = []
    fake = types.ModuleType("distributed.dashboard.scheduler")
    fake.connect = lambda *args, **kwargs: connected.append(args)
    monkeypatch.setitem(sys.modules, "distributed.dashboard.scheduler", fake)
    from reportgen.cluster.client import dask_client
    from reportgen.cluster.scheduler import parse_scheduler

    with dask_client(parse_scheduler("local:1")) as client:
        listening = {c.laddr.ip for c in psutil.Process().net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN}
        levels = set(client.run(_distributed_level).values())
    assert connected == []
    assert listening == {"127.0.0.1"}  # the scheduler and its HTTP server, in this process
    assert levels == {logging.CRITICAL}


def _collector_state() -> tuple[int, int]:
    import gc

    return gc.get_freeze_count(), len(gc.get_objects())


def test_local_workers_start_with_dasks_objects_frozen():
    # the fork server's last preload (cluster.fork_server_heap) froze Dask's and the trace reader's objects
    # before it forked the worker: its full collections walk only what the worker made since
    from reportgen.cluster.client import dask_client
    from reportgen.cluster.scheduler import parse_scheduler

    with dask_client(parse_scheduler("local:1")) as client:
        [(frozen, tracked)] = client.run(_collector_state).values()
    assert frozen > 40_000  # distributed and the trace reader (~60 thousand objects here)
    assert tracked < frozen
