"""The recorded command's own process split by thread (``MainThreadCPUCores``, ``OtherThreadsCPUCores``,
``BusiestThreads``): what shows a thread beside the training loop that the trace does not hold
(reportgen/recorder/sampler.py)."""

from __future__ import annotations

import threading
import time

import pytest

from reportgen.recorder.sampler import ProcessTree, schedstats

psutil = pytest.importorskip("psutil")


def test_a_busy_thread_beside_the_main_one_is_counted_and_named():
    tree = ProcessTree(psutil, psutil.Process().pid)
    if schedstats(tree.pid) is None:
        pytest.skip("the kernel keeps no per-thread schedstat")
    stop = threading.Event()
    spins: list[int] = []

    def spin() -> None:
        spins.append(threading.get_native_id())
        t = time.thread_time()
        while time.thread_time() - t < 0.3 and not stop.is_set():
            pass
        stop.wait()

    tree.sample(None, time.time())
    worker = threading.Thread(target=spin)
    worker.start()
    try:
        last = time.monotonic()
        deadline = last + 30
        other = 0.0
        named: set[int] = set()
        while other < 0.25 and time.monotonic() < deadline:  # its 0.3 s of CPU, however loaded the host
            time.sleep(0.2)
            tick = tree.sample(None, time.time())
            now = time.monotonic()
            other += tick["OtherThreadsCPUCores"] * (now - last)
            last = now
            assert tick["MainThreadCPUCores"] >= 0 and tick["MainThreadRunQueueCores"] >= 0
            assert len(tick["BusiestThreads"]) <= 3
            named |= {tid for _, tid, _ in tick["BusiestThreads"]}
        assert other >= 0.25
        assert spins[0] in named  # the spinning thread, by its id; its name the kernel's (the process's here)
    finally:
        stop.set()
        worker.join()
    time.sleep(0.3)
    tree.sample(None, time.time())
    time.sleep(0.3)
    quiet = tree.sample(None, time.time())
    assert quiet["OtherThreadsCPUCores"] < 0.05  # ended: no more time counted for it


def test_no_split_where_the_processs_threads_cannot_be_read(monkeypatch):
    """A kernel without per-thread schedstat (or a /proc that lists no thread of the command's first): the tick keeps
    its other columns and has no split, rather than a main thread at 0 cores."""
    import reportgen.recorder.sampler as sampler

    tree = ProcessTree(psutil, psutil.Process().pid)
    for odd in (None, {}, {tree.pid + 10**6: (1.0, 0.0)}):
        monkeypatch.setattr(sampler, "schedstats", lambda pid, odd=odd: odd)
        tick = tree.sample(None, time.time())
        assert tick["CPUCores"] >= 0 and "MainThreadCPUCores" not in tick and "BusiestThreads" not in tick
