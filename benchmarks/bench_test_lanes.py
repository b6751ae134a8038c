#!/usr/bin/env python3
"""How long each test lane takes (docs/testing.md): ``python -m pytest tests/<lane>`` in a fresh child
process, wall and CPU (user + system of pytest and every process it started), the load average around
each run and pytest's own summary line. The unit lane's target is 45 s on the 2-core machine; on a shared
machine its CPU time is the figure to compare (its wall time is about its CPU time when the cores are
free: one process, nothing waited for).

    python benchmarks/bench_test_lanes.py [--lanes unit,integration,e2e] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = {"unit": 45.0}


def run_lane(lane: str) -> dict:
    """One run of one lane: the child's wall and CPU seconds, the load before and after, pytest's summary."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", f"tests/{lane}", "-q", "-p", "no:cacheprovider"],
                          cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    return {"lane": lane, "rc": proc.returncode, "wall": wall, "cpu": cpu, "load": (load, os.getloadavg()[0]),
            "summary": lines[-1] if lines else proc.stderr.strip()[-200:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lanes", default="unit", help="comma-separated: unit, integration, e2e")
    parser.add_argument("--runs", type=int, default=1, help="runs of each lane, interleaved")
    args = parser.parse_args()
    lanes = [lane for lane in args.lanes.split(",") if lane]
    results = [run_lane(lane) for _ in range(args.runs) for lane in lanes]
    print(f"{'lane':<12} {'wall s':>8} {'CPU s':>8} {'load before/after':>18}  target  pytest")
    failed = False
    for r in results:
        target = TARGET_S.get(r["lane"])
        met = "-" if target is None else ("met" if r["cpu"] <= target else "MISSED")
        print(f"{r['lane']:<12} {r['wall']:8.1f} {r['cpu']:8.1f} {r['load'][0]:8.2f} / {r['load'][1]:<7.2f}  "
              f"{met:<6}  {r['summary']}")
        failed |= r["rc"] != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
