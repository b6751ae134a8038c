"""``local:N`` workers: glibc's memory settings of one process, the trace reader imported once (issue 33).

Dask starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``; glibc then also freezes the size above which
``malloc`` maps fresh pages, so every array of a trace read costs new page faults (24 reads of a real rank:
1.25 M faults and 3.1 s of system time instead of 0.33 M and 0.7 s). ``local:N`` starts its workers without
it, forked from a server process that imported the trace reader. Checked in a fresh process: a Dask cluster
started earlier in the same process (another test's) writes the variable into its environment, which a fork
server started after it inherits.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import subprocess
import sys

import pytest

_SCRIPT = r"""
import json, multiprocessing, os, resource, sys

def worker_state():
    import numpy as np
    a = np.ones(1 << 17)
    del a
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(100):  # 100 arrays of 1 MiB made and freed in turn
        a = np.ones(1 << 17)
        del a
    return {"env": os.environ.get("MALLOC_TRIM_THRESHOLD_"), "forked": multiprocessing.parent_process() is not None,
            "preloaded": [m for m in ("reportgen.trace_analysis.job", "reportgen.readers.distributed") if m in sys.modules], "hash": hash("reportgen"),
            "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before}

if __name__ == "__main__":
    from reportgen.cluster.client import dask_client
    from reportgen.cluster.scheduler import parse_scheduler
    with dask_client(parse_scheduler("local:2")) as client:
        states = list(client.run(worker_state).values())
    print(json.dumps({"workers": states, "client_env": os.environ.get("MALLOC_TRIM_THRESHOLD_")}))
"""


@pytest.fixture(scope="module")
def local_cluster_state(tmp_path_factory) -> dict:
    pytest.importorskip("distributed")
    script = tmp_path_factory.mktemp("malloc") / "state.py"
    script.write_text(_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_local_workers_run_without_dasks_malloc_trim_threshold(local_cluster_state):
    assert [w["env"] for w in local_cluster_state["workers"]] == [None, None]
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        # a few hundred faults when glibc keeps freed 1 MiB blocks in its heap (its dynamic threshold),
        # ~256 per array (25,600) when each is mapped anew, as under MALLOC_TRIM_THRESHOLD_=65536
        assert all(w["faults"] < 5_000 for w in local_cluster_state["workers"]), local_cluster_state
    # Dask's nanny writes its workers' variables into the client's environment before it starts them: none is
    # left there for a later child (the notebook's worker process of `generate`) to inherit
    assert local_cluster_state["client_env"] is None


@pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server (Windows)")
def test_local_workers_are_forked_with_the_trace_reader_already_imported(local_cluster_state):
    # imported once in the fork server, before any task asked for it (a spawned worker imports it itself):
    # both tasks' modules, the ranks' and the system pieces'
    preloaded = ["reportgen.trace_analysis.job", "reportgen.readers.distributed"]
    assert [(w["forked"], w["preloaded"]) for w in local_cluster_state["workers"]] == [(True, preloaded)] * 2


@pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server (Windows)")
def test_local_workers_share_the_hash_seed_spawned_workers_get(local_cluster_state):
    # the fork server starts before Dask's nanny sets its variables (its imports overlap the client's): it is
    # given the same seed itself, so every worker hashes a str as a spawned Dask worker would
    seeded = subprocess.run([sys.executable, "-c", "print(hash('reportgen'))"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONHASHSEED": "6640"}, check=True).stdout.strip()
    assert [w["hash"] for w in local_cluster_state["workers"]] == [int(seeded)] * 2


def _variable() -> str | None:
    return os.environ.get("REPORTGEN_TEST_WORKER_VARIABLE")


def test_a_second_local_cluster_sees_the_environment_of_its_start(monkeypatch):
    """Forked workers get the client's environment of the moment (credentials set since the first cluster)."""
    pytest.importorskip("distributed")
    from reportgen.cluster.client import dask_client
    from reportgen.cluster.scheduler import parse_scheduler

    monkeypatch.setenv("REPORTGEN_TEST_WORKER_VARIABLE", "first")
    with dask_client(parse_scheduler("local:1")) as client:
        assert list(client.run(_variable).values()) == ["first"]
    monkeypatch.setenv("REPORTGEN_TEST_WORKER_VARIABLE", "second")
    with dask_client(parse_scheduler("local:1")) as client:
        assert list(client.run(_variable).values()) == ["second"]
