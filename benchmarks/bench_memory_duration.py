#!/usr/bin/env python
"""Peak memory against the job's duration (issue 32: bounded by nodes x series, not by duration).

    python benchmarks/bench_memory_duration.py RAW_DIR... [--runs N] [--analyze] [--base DIR] [--json FILE]
                                               [--keep DIR]

Each RAW_DIR is a SageMaker raw profile, e.g. ``generate_data.py --size large --hours 1|2|4|8`` (16 nodes,
96 cores and 8 GPUs a node, a sample every 0.5 s). For each, in fresh processes, interleaved with
``--base`` (a checkout of another commit, run through PYTHONPATH) when given: ``reportgen generate RAW
-o page.html`` (and ``reportgen analyze`` with ``--analyze``): wall and CPU seconds of the process tree,
the tree's peak (the largest sum of the proportional set sizes of the process and its descendants, sampled
every 20 ms: the page's worker included; ``process_tree.tree_peak``; resident sizes before 2026-11-27's
sixth session, which counted the pages a forked child shares with its parent twice) and the largest single process's peak (``ru_maxrss`` of the waited-for
children, which the kernel keeps, so no peak between samples is missed), and the page's size. Prints one
line per run, then per input the medians, the system files' size on disk and the 1-minute load before and
after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from process_tree import tree_peak  # noqa: E402


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run(argv: list[str], env: dict, cwd: Path) -> dict:
    """One whole process: wall, CPU of the tree, tree peak (sampled) and largest process peak."""
    proc = psutil.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, env=env)
    started = time.perf_counter()
    peak = tree_peak(proc)
    wall = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"{argv} exited with {proc.returncode}")
    return {"wall_s": wall, "tree_peak_mb": peak / 2**20}


def measured(argv: list[str], env: dict, cwd: Path) -> dict:
    """``run`` in a child of its own, so that ``RUSAGE_CHILDREN`` (CPU, max RSS) is this run's alone."""
    job = json.dumps({"argv": argv, "env": env, "cwd": str(cwd)})
    done = subprocess.run([sys.executable, __file__, "--one"], input=job, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{argv} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def one() -> None:
    """The ``--one`` child: runs the job read from stdin, prints its figures as one JSON line."""
    job = json.loads(sys.stdin.read())
    r = run(job["argv"], job["env"], Path(job["cwd"]))
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    r.update(cpu_s=u.ru_utime + u.ru_stime, process_peak_mb=u.ru_maxrss / 1024)
    print(json.dumps(r))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--analyze", action="store_true", help="also time `reportgen analyze` (the engine alone)")
    ap.add_argument("--base", type=Path, default=None, help="another checkout, run in the same rounds")
    ap.add_argument("--json", type=Path, default=None, help="write every run's figures here")
    ap.add_argument("--keep", type=Path, default=None, help="copy each page here (<input>-<side>.html)")
    args = ap.parse_args()
    sides = {"tree": ROOT} if args.base is None else {"base": args.base.resolve(), "tree": ROOT}
    commands = ["generate"] + (["analyze"] if args.analyze else [])
    work = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    results = []
    print(f"load before: {os.getloadavg()[0]:.2f}", flush=True)
    try:
        for raw in args.raw:
            system_mb = du(raw / "system") / 1e6 if (raw / "system").is_dir() else du(raw) / 1e6
            for i in range(args.runs):
                for command in commands:
                    for side, tree in sides.items():
                        out = work / ("page.html" if command == "generate" else "out")
                        env = {**os.environ, "PYTHONPATH": str(tree)}
                        argv = [sys.executable, "-m", "reportgen", command, str(raw.resolve()), "-o", str(out), "-q"]
                        r = measured(argv, env, work)
                        r.update(raw=str(raw), system_mb=system_mb, side=side, command=command, run=i,
                                 load=os.getloadavg()[0], page_bytes=out.stat().st_size if out.is_file() else None)
                        results.append(r)
                        print(f"{raw.name:14s} {command:8s} {side:5s} wall {r['wall_s']:7.1f} s  CPU {r['cpu_s']:7.1f} s"
                              f"  tree peak {r['tree_peak_mb']:6.0f} MB  largest process {r['process_peak_mb']:6.0f} MB"
                              f"  load {r['load']:.1f}" + (f"  page {r['page_bytes']:,} B" if r["page_bytes"] else ""),
                              flush=True)
                        if out.is_dir():
                            shutil.rmtree(out)
                        elif args.keep and out.is_file():
                            args.keep.mkdir(parents=True, exist_ok=True)
                            shutil.copy(out, args.keep / f"{raw.name}-{side}.html")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")
    print("\nmedians:")
    for raw in args.raw:
        for command in commands:
            for side in sides:
                rs = [r for r in results if r["raw"] == str(raw) and r["command"] == command and r["side"] == side]
                print(f"{raw.name:14s} {rs[0]['system_mb']:9.0f} MB of system files  {command:8s} {side:5s} "
                      f"wall {statistics.median(r['wall_s'] for r in rs):7.1f} s  "
                      f"CPU {statistics.median(r['cpu_s'] for r in rs):7.1f} s  "
                      f"tree peak {max(r['tree_peak_mb'] for r in rs):6.0f} MB  "
                      f"largest process {max(r['process_peak_mb'] for r in rs):6.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    one() if sys.argv[1:] == ["--one"] else main()
