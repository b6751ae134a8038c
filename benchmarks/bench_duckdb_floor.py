#!/usr/bin/env python
"""The engine against a floor: ``reportgen analyze`` vs one DuckDB query computing the per-node, per-series
percentiles of the same system-metrics files (issue 32's reference), whole processes, interleaved.

    python benchmarks/bench_duckdb_floor.py RAW_DIR [--runs N] [--generate] [--memory-runs N] [--no-compile]

The reference reads every ``system/**/*.json`` of RAW_DIR with ``read_json`` (the columns and their types
given, no sampling) and computes, per node and series (name, dimension), the 5/25/50/75/95/99th
percentiles, min, max, mean and count: the heaviest thing the rules ask of the system metrics, with none of
the rest (framework traces, clock checks, windows, the 11 rule outputs, the timeline). ``--generate``:
``reportgen generate`` too. Each run is a fresh process. Wall and CPU (user + system of the process tree)
come from runs with nothing sampled beside them (``bench_notebook_path.timed``: sampling the tree's memory
every 20 ms cost ``analyze`` ~30 % of its wall on two cores, the query ~15 %); the peak memory from
``--memory-runs`` further runs of each, sampled as in bench_notebook_path.py. Prints the medians, the ratios
of the medians to the reference and the medians of the per-round ratios (a round runs every case once, in
turn, the order alternating from round to round, so a ratio of one round compares runs under the same
load) with a bootstrap 90 % interval of the wall ratio's median (5 rounds or more), and the load average
before and after (the machine is shared: compare only figures of the same rounds).

reportgen's modules are byte-compiled first (``compileall``), as ``pip install`` does: an editable
checkout under ``PYTHONDONTWRITEBYTECODE=1`` (set on the development machine) would otherwise compile
its ~65 modules in every process, 0.15 CPU s of each ``analyze`` that an installed reportgen does not
spend (DuckDB's own modules are compiled at install). ``--no-compile`` measures without.
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_notebook_path import run, timed  # noqa: E402

QUERY = """
import sys, duckdb
rows = duckdb.sql('''
  SELECT NodeId, Name, Dimension,
         quantile_cont(Value, [0.05, 0.25, 0.5, 0.75, 0.95, 0.99]) AS p, min(Value), max(Value), avg(Value), count(*)
  FROM read_json($glob, format = 'newline_delimited',
                 columns = {Type: 'VARCHAR', Name: 'VARCHAR', Dimension: 'VARCHAR', Value: 'DOUBLE',
                            NodeId: 'VARCHAR', Timestamp: 'DOUBLE'})
  GROUP BY ALL''', params={"glob": sys.argv[1] + "/system/**/*.json"}).fetchall()
print(len(rows))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", help="a folder of SageMaker raw profiler data (e.g. benchmarks/data/medium)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--generate", action="store_true", help="time reportgen generate too")
    ap.add_argument("--memory-runs", type=int, default=1,
                    help="sampled runs of each case for the peak memory, after the timed rounds (0: none)")
    ap.add_argument("--no-compile", action="store_true",
                    help="do not byte-compile reportgen's modules first (see the module docstring)")
    args = ap.parse_args()
    raw = str(Path(args.raw).resolve())
    if not args.no_compile:
        compileall.compile_dir(str(ROOT / "reportgen"), quiet=1)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    work = Path(tempfile.mkdtemp(prefix="bench-duckdb-floor-"))
    cases = {"DuckDB query": [sys.executable, "-c", QUERY, raw],
             "reportgen analyze": [sys.executable, "-m", "reportgen", "analyze", raw, "-o", str(work / "out"), "-q"]}
    if args.generate:
        cases["reportgen generate"] = [sys.executable, "-m", "reportgen", "generate", raw, "-o",
                                       str(work / "report.html"), "-q"]
    found = {name: [] for name in cases}
    print(f"load before: {os.getloadavg()[0]:.2f}", flush=True)
    for i in range(args.runs):
        order = list(cases) if i % 2 == 0 else list(cases)[::-1]  # neither case always first
        for name in order:
            seconds, cpu = timed(cases[name], env=env, cwd=work)
            found[name].append((seconds, cpu))
            print(f"  round {i + 1}: {name:20s} {seconds:6.2f} s wall {cpu:6.2f} s CPU", flush=True)
    peaks = {name: [run(argv, env=env, cwd=work)[1] for _ in range(args.memory_runs)] for name, argv in cases.items()}
    print(f"load after: {os.getloadavg()[0]:.2f}")
    ref = found["DuckDB query"]
    ref_wall, ref_cpu = statistics.median(r[0] for r in ref), statistics.median(r[1] for r in ref)
    for name, runs in found.items():
        wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        per_wall = statistics.median(r[0] / q[0] for r, q in zip(runs, ref))
        per_cpu = statistics.median(r[1] / q[1] for r, q in zip(runs, ref))
        peak = f"peak {max(peaks[name]):.0f} MB" if peaks[name] else "peak not sampled"
        print(f"{name:20s} median {wall:6.2f} s wall ({wall / ref_wall:.2f}x, per round {per_wall:.2f}x), "
              f"{cpu:6.2f} s CPU ({cpu / ref_cpu:.2f}x, per round {per_cpu:.2f}x), {peak}")
        if runs is not ref and len(runs) >= 5:
            lo, hi = median_interval([r[0] / q[0] for r, q in zip(runs, ref)])
            print(f"{'':20s} per-round wall ratio: 90 % interval of its median {lo:.2f}x-{hi:.2f}x "
                  f"({len(runs)} rounds, bootstrap)")


def median_interval(ratios: list[float], level: float = 0.9, draws: int = 4000) -> tuple[float, float]:
    """A bootstrap interval of the median of ``ratios`` (rounds drawn with replacement, a fixed seed): how far
    the per-round median could move on another set of rounds of the same host, which is what says whether a
    goal such as "within 2x" holds or only happened to in one set."""
    rng = random.Random(32)
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(draws))
    return meds[int((1 - level) / 2 * draws)], meds[int((1 + level) / 2 * draws) - 1]

if __name__ == "__main__":
    main()
