"""A ``local:N`` worker allocates memory as one process does (issue 33).

Dask starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``; glibc then also freezes the size above which
``malloc`` maps fresh pages, so every array of a trace read costs new page faults (24 reads of a real rank:
1.25 M faults and 3.1 s of system time instead of 0.33 M and 0.7 s). ``local:N`` starts its workers without it.
"""

from __future__ import annotations

import os
import platform
import resource

import pytest


def _worker_env() -> str | None:
    return os.environ.get("MALLOC_TRIM_THRESHOLD_")


def _faults_of_freed_arrays() -> int:
    """Page faults of 100 arrays of 1 MiB made and freed in turn: a few hundred when glibc keeps freed blocks
    of that size in its heap (its dynamic threshold), ~256 per array (25,600) when each is mapped anew."""
    import numpy as np

    a = np.ones(1 << 17)
    del a
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(100):
        a = np.ones(1 << 17)
        del a
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_local_workers_run_without_dasks_malloc_trim_threshold(monkeypatch):
    pytest.importorskip("distributed")
    from reportgen.readers.distributed import dask_client, parse_scheduler

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with dask_client(parse_scheduler("local:1")) as client:
        assert list(client.run(_worker_env).values()) == [None]
        if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
            faults = list(client.run(_faults_of_freed_arrays).values())
            assert faults[0] < 5_000, faults
    # Dask's nanny writes its workers' variables into this process's environment before it starts them:
    # none is left here for a later child (the notebook's worker process of `generate`) to inherit.
    assert "MALLOC_TRIM_THRESHOLD_" not in os.environ
