"""The cluster room on its own (reportgen/cluster/): the --scheduler value's edges, the local workers' fork
server preload naming modules that exist, and the S3 objects' keys, all without Dask or boto3."""

from __future__ import annotations

import importlib.util

import pytest

from reportgen.cluster.client import LOCAL_PRELOAD
from reportgen.cluster.s3_objects import S3System
from reportgen.cluster.scheduler import parse_scheduler
from reportgen.errors import InputError


def test_local_worker_counts_at_the_edges():
    assert parse_scheduler("local:1").workers == 1
    assert parse_scheduler(" local:1024 ").workers == 1024
    assert parse_scheduler("local:1024").local
    with pytest.raises(InputError, match="between 1 and 1024"):
        parse_scheduler("local:1025")


def test_an_address_keeps_its_scheme_and_loses_a_trailing_slash():
    sched = parse_scheduler("tls://scheduler.internal:8786/")
    assert (sched.address, sched.local, sched.workers) == ("tls://scheduler.internal:8786", False, None)
    with pytest.raises(InputError, match="expected local, local:N or tcp://host:port"):
        parse_scheduler("tcp://host:123456")


def test_every_module_the_fork_server_preloads_exists_and_the_freeze_comes_last():
    # a module renamed or moved would leave the workers without it, silently: each name must still be found
    ours = [name for name in LOCAL_PRELOAD if name.startswith("reportgen.")]
    assert ours == ["reportgen.trace_analysis.job", "reportgen.readers.distributed",
                    "reportgen.cluster.fork_server_heap"]
    assert all(importlib.util.find_spec(name) is not None for name in ours)
    assert LOCAL_PRELOAD[-1] == "reportgen.cluster.fork_server_heap"


def test_s3_keys_relative_to_the_profile_root_and_back():
    under = S3System("bucket", "job/profiler-output", (("job/profiler-output/system/a.json", 3, "e"),))
    assert under.source_id == "s3://bucket/job/profiler-output"
    assert under.rel("job/profiler-output/system/a.json") == "system/a.json"
    assert under.key("system/a.json") == "job/profiler-output/system/a.json"
    at_root = S3System("bucket", "", ())
    assert (at_root.rel("system/a.json"), at_root.key("system/a.json")) == ("system/a.json", "system/a.json")
    assert at_root.source_id == "s3://bucket/"
