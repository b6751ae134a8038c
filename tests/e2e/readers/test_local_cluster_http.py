"""``--scheduler local[:N]``: the cluster serves no dashboard, the scheduler's HTTP server (which Dask always
starts) listens on the loopback interface only, and Dask's own log lines stay off the terminal."""

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
    from reportgen.readers.distributed import dask_client, parse_scheduler

    with dask_client(parse_scheduler("local:1")) as client:
        listening = {c.laddr.ip for c in psutil.Process().net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN}
        levels = set(client.run(_distributed_level).values())
    assert connected == []
    assert listening == {"127.0.0.1"}  # the scheduler and its HTTP server, in this process
    assert levels == {logging.CRITICAL}
