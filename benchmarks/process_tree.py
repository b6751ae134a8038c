"""One whole process measured as the goal benchmarks report it: its wall time, the CPU time of the process
and its waited-for descendants, and the peak memory of the whole tree (the page's worker and forked
children included), sampled every 20 ms.

Shared by ``bench_page_size.py``, ``bench_memory_duration.py`` and ``bench_speed_table.py``. (It was ``bench_notebook_path.py``'s,
retired in issue 47: benchmarks/HISTORY.md, "Scripts retired from the tree".)
"""

from __future__ import annotations

import resource
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]


def tree_bytes(tree) -> int:
    """Memory of a process tree: the sum of the processes' proportional set sizes (a page shared by n of them
    counts 1/n in each), the resident sizes where the system gives no PSS. reportgen's forked children share
    their parent's pages (copy-on-write): a sum of resident sizes counted those pages once per process."""
    total = 0
    for p in tree:
        if not p.is_running():
            continue
        try:
            total += p.memory_full_info().pss
        except (AttributeError, psutil.AccessDenied):
            total += p.memory_info().rss
    return total


def tree_peak(proc: psutil.Popen) -> int:
    """Wait for ``proc``; the largest ``tree_bytes`` of it and its descendants, sampled every 20 ms."""
    peak = 0
    while proc.poll() is None:
        try:
            tree = [proc, *proc.children(recursive=True)]
            peak = max(peak, tree_bytes(tree))
        except psutil.Error:
            pass
        time.sleep(0.02)
    return peak


def run(argv: list[str], env: dict | None = None, cwd: Path = ROOT,
        after_exit: Callable[[], None] | None = None) -> tuple[float, float, float]:
    """(seconds, peak MB of the process tree, CPU seconds of the tree) of one whole process. Its seconds
    include the sampling's cost: reading a process's PSS walks its page tables under its memory-map lock,
    which slowed a 4 s ``analyze`` on two cores by 1.3 s (HISTORY.md, "The bench's own sampling was in the
    ratio"): take wall-time figures from runs timed without sampling where the wall time is the goal.
    ``after_exit`` runs once the process has ended, before its CPU is read: a subreaper reaps the process's
    orphaned descendants there, so their CPU counts too (``bench_dask_ranks.reap_orphans``)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = psutil.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, env=env)
    peak = tree_peak(proc)
    seconds = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"{argv} exited with {proc.returncode}")
    if after_exit is not None:
        after_exit()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, peak / 2**20, cpu
