"""The part of the recorded tree's CPU its descendants used (``ChildCPUCores``): what tells where a DataLoader's
workers stopped working (reportgen/recorder/sampler.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from reportgen.recorder.sampler import ProcessTree

psutil = pytest.importorskip("psutil")


def test_a_busy_child_is_counted_apart_and_an_idle_one_is_not(tmp_path):
    tree = ProcessTree(psutil, psutil.Process().pid)
    busy = subprocess.Popen([sys.executable, "-c", "import sys, time\nt = time.process_time()\n"
                             "while time.process_time() - t < 0.3: pass\nprint('idle', flush=True)\nsys.stdin.read()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        tree.sample(None, time.time())
        last = time.monotonic()
        deadline = last + 30
        used = 0.0
        while used < 0.25 and time.monotonic() < deadline:  # its 0.3 s of CPU, however loaded the host
            time.sleep(0.2)
            tick = tree.sample(None, time.time())
            now = time.monotonic()
            used += tick["ChildCPUCores"] * (now - last)  # cores over the tick the sampler timed, within a few ms
            # CPUCores counts each process's clock ticks (cpu_times: 1/CLK_TCK s, read at each end of the tick),
            # ChildCPUCores the scheduler's exact ns: they agree within two clock ticks a process over the tick
            slack = 2 * tick["Processes"] / os.sysconf("SC_CLK_TCK") / (now - last)
            last = now
            assert tick["Processes"] >= 2 and tick["ChildCPUCores"] <= tick["CPUCores"] + slack
        assert used >= 0.25
        assert busy.stdout.readline() == b"idle\n"  # its busy part done, however starved (a sleep was not enough)
        time.sleep(0.3)  # now it waits on its stdin
        tree.sample(None, time.time())
        time.sleep(0.3)
        assert tree.sample(None, time.time())["ChildCPUCores"] < 0.002
    finally:
        busy.communicate(b"")
