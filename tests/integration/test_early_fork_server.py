"""``--scheduler local[:N]``: the command line starts the workers' fork server before it looks at its input
(``cli._start_local_workers_early``), so the server's imports overlap the command's own; a ``tcp://`` scheduler
or no scheduler starts none. Checked in a fresh interpreter: the processes it started, from ``/proc``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads its children from /proc")

_PROBE = r"""
import json, os, sys
from reportgen.cli import main

rc = main(sys.argv[1:])
children = []
for entry in os.listdir("/proc"):
    if not entry.isdigit():
        continue
    try:
        with open(f"/proc/{entry}/stat") as fh:
            ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid():
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                children.append(fh.read().replace(b"\0", b" ").decode(errors="replace"))
    except OSError:
        pass
print(json.dumps({"rc": rc, "children": children}))
"""


def _children_after(tmp_path: Path, *options: str) -> dict:
    # a folder that does not exist: the command fails on its input (exit 2) after main's start
    argv = ["analyze", str(tmp_path / "missing"), "-o", str(tmp_path / "out"), "-q", *options]
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_local_scheduler_starts_the_fork_server_first(tmp_path):
    pytest.importorskip("distributed")
    seen = _children_after(tmp_path, "--scheduler", "local:2")
    assert seen["rc"] == 2
    servers = [c for c in seen["children"] if "from multiprocessing.forkserver import main" in c]
    assert len(servers) == 1
    # beside it only multiprocessing's resource tracker, which the server's start needs
    assert [c for c in seen["children"] if c not in servers and "multiprocessing.resource_tracker" not in c] == []


@pytest.mark.parametrize("options", [(), ("--scheduler", "tcp://127.0.0.1:9"), ("--scheduler", "local:0")])
def test_no_fork_server_without_a_local_scheduler(tmp_path, options):
    seen = _children_after(tmp_path, *options)
    assert seen["rc"] == 2
    assert seen["children"] == []
