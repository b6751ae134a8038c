"""Fixtures shared by the PyTorch-trace tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def dask_cluster():
    pytest.importorskip("distributed")
    import logging

    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.ERROR)
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
