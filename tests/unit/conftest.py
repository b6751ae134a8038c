"""The unit lane runs in this process only: a test here that starts a child process (``subprocess``,
``os.fork``, ``os.posix_spawn``, multiprocessing) fails, naming the command; it belongs in
tests/integration or tests/e2e (docs/testing.md says which)."""

from __future__ import annotations

import multiprocessing.util
import os
import subprocess

import pytest

from reportgen.readers.trace_cache import TraceCache


@pytest.fixture(autouse=True)
def no_child_process(monkeypatch):
    started: list[str] = []

    def refuse(what):
        def refused(*args, **kwargs):
            started.append(f"{what}{args[1:2] if what == 'subprocess' else args[:1]}")
            raise OSError(f"the unit lane starts no child process ({what})")
        return refused

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse("subprocess"))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "spawnv", "spawnve", "execv", "execve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse(f"os.{name}"))
    monkeypatch.setattr(multiprocessing.util, "spawnv_passfds", refuse("multiprocessing"))
    yield
    assert not started, f"a unit test started a child process: {started}; move it to tests/integration or tests/e2e"


@pytest.fixture
def cache(tmp_path) -> TraceCache:
    """An empty trace cache of 1 GiB in the test's own folder (the caches' tests share it; in the unit lane it stands
    for pytest's own ``cache`` fixture, which no unit test uses)."""
    folder = tmp_path / "cache"
    folder.mkdir()
    return TraceCache(folder, 1 << 30)
