#!/usr/bin/env python
"""Does one rank's reduction cost more CPU inside a ``local:N`` worker than in one process? Paired, task by task.

    python benchmarks/bench_dask_task_cost.py [SET] [--pairs 40]

SET: a folder of trace files (default ``benchmarks/data/hta-ranks-24``, which ``bench_dask_ranks.py --distinct``
builds). One process starts ``--scheduler local:1`` (one worker, forked from the fork server as ``local:N``'s are),
then for each pair runs the same file's ``reduce_task`` once in its own main thread and once on the worker, the
order alternating from pair to pair, one at a time (never both at once: this measures the task, not two busy
cores). Each side's cost is the task's own thread CPU (``time.thread_time``) and wall. Block comparisons (24 tasks
here, then 24 there) drift with the machine's speed, which varies by tens of percent from minute to minute on a
shared host; a pair is a few seconds apart. Printed: the medians, the median of the per-pair CPU ratios (worker /
main thread) with its quartiles, and the first and last thirds (does a worker's task grow dearer as it ages?).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed_reduction(path: str, cap: int) -> tuple[float, float]:
    """(wall s, thread CPU s) of one ``reduce_task`` of ``path``, in the calling thread."""
    from reportgen.trace_analysis.job import reduce_task

    wall, cpu = time.perf_counter(), time.thread_time()
    reduce_task([(0, path)], cap)
    return time.perf_counter() - wall, time.thread_time() - cpu


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("set", nargs="?", type=Path, default=ROOT / "benchmarks" / "data" / "hta-ranks-24")
    ap.add_argument("--pairs", type=int, default=40)
    args = ap.parse_args(argv)
    files = sorted(str(p) for p in args.set.glob("*.json*"))
    if not files or args.pairs < 3:
        ap.error(f"{args.set}: no trace files (run bench_dask_ranks.py --distinct first), or fewer than 3 pairs")
    from reportgen.cluster.client import dask_client
    from reportgen.cluster.scheduler import parse_scheduler

    print(f"# {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.pairs} pairs over {len(files)} files",
          flush=True)
    main_side, worker_side = [], []
    with dask_client(parse_scheduler("local:1")) as client:
        client.submit(timed_reduction, files[0], 1000, pure=False).result()  # the worker's first task: imports
        for i in range(args.pairs):
            path = files[i % len(files)]
            sides = [("main", lambda: timed_reduction(path, 1000)),
                     ("worker", lambda: client.submit(timed_reduction, path, 1000, pure=False).result())]
            for name, run in sides if i % 2 == 0 else sides[::-1]:
                (main_side if name == "main" else worker_side).append(run())
    print(f"# load after {os.getloadavg()[0]:.2f}")
    third = args.pairs // 3
    print("| side | wall s, median | CPU s, median | CPU, first third | CPU, last third |")
    print("|---|---|---|---|---|")
    for name, side in (("main thread of one process", main_side), ("`local:1` worker", worker_side)):
        cpu = [c for _, c in side]
        print(f"| {name} | {statistics.median(w for w, _ in side):.3f} | {statistics.median(cpu):.3f} | "
              f"{statistics.median(cpu[:third]):.3f} | {statistics.median(cpu[-third:]):.3f} |")
    low, mid, high = quartiles([w[1] / m[1] for m, w in zip(main_side, worker_side)])
    print(f"\nper-pair CPU ratio, worker / main thread: median {mid:.3f} (quartiles {low:.3f}-{high:.3f}), "
          f"{sum(w[1] > m[1] for m, w in zip(main_side, worker_side))} of {args.pairs} pairs dearer on the worker")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
