"""How many of the machine's cores a command keeps busy, moment by moment (issue 32).

A wall time close to CPU time / cores needs every core busy all along; where they are not shows as a stretch
of one busy core in this profile. It samples the machine's own counters (``/proc/stat``, Linux) every
``--every`` seconds while the command runs, so run it on an otherwise idle machine: another process's work
counts as busy. Prints each sample's busy cores (0 to the number of cores) and the idle core-seconds.

    python benchmarks/bench_core_use.py -- python -m reportgen analyze benchmarks/data/medium -o /tmp/o -q
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


def _busy_and_total() -> tuple[int, int]:
    """The machine's busy and total clock ticks so far (``/proc/stat``'s first line: idle and iowait are idle)."""
    with open("/proc/stat") as stat:
        ticks = [int(x) for x in stat.readline().split()[1:]]
    total = sum(ticks[:8])  # user nice system idle iowait irq softirq steal (guest time is inside user)
    return total - ticks[3] - ticks[4], total


def profile(argv: list[str], every: float) -> tuple[float, list[tuple[float, float]]]:
    """Run ``argv``; its wall time and ``(end of the sample, busy cores during it)`` for each sample."""
    cores = os.cpu_count() or 1
    samples = []
    start = time.perf_counter()
    last = _busy_and_total()
    proc = subprocess.Popen(argv)
    while proc.poll() is None:
        time.sleep(every)
        now = _busy_and_total()
        d_busy, d_total = now[0] - last[0], now[1] - last[1]
        samples.append((time.perf_counter() - start, cores * d_busy / d_total if d_total else 0.0))
        last = now
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"the command failed (exit {proc.returncode})")
    return wall, samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=float, default=0.05, help="seconds between samples (default 0.05)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = ap.parse_args()
    argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not argv:
        ap.error("give the command after --")
    cores = os.cpu_count() or 1
    print(f"{cores} cores, load before {os.getloadavg()[0]:.2f}")
    for run in range(args.runs):
        wall, samples = profile(argv, args.every)
        used, prev = 0.0, 0.0
        for t, busy in samples:
            used += busy * (t - prev)
            prev = t
        print(f"run {run + 1}: wall {wall:.2f} s, {used:.2f} core-s busy, {cores * wall - used:.2f} idle")
        per_line = max(1, round(1 / args.every))
        for i in range(0, len(samples), per_line):
            row = samples[i:i + per_line]
            print(f"  {row[0][0] - args.every:5.1f} s: " + " ".join(f"{b:.1f}" for _, b in row))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
