#!/usr/bin/env python
"""One node with many GPU series: wall, CPU and peak RSS of ``reportgen analyze`` on it.

    python benchmarks/bench_gpu_series.py [--gpus 20000,8] [--tree PATH] [--dir /tmp/reportgen-gpu-series]

Issue #30: a node with 20,000 GPU series (a 7 MB file) took 98 s and 4 GB, because BatchSize selected
every column once per GPU and LoadBalancing built every GPU pair. ``--tree`` runs another checkout's
code (e.g. ``git worktree add /tmp/base main``) on the same data, so base and head are timed alike.
Each run is a fresh child process; its peak RSS and CPU time come from ``os.wait4``. Prints the load
average (the machine is shared: compare rows taken together, interleaved).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
T = 1_700_000_040


def make_node(folder: Path, gpus: int, instants: int = 6) -> Path:
    """``instants`` samples, 0.5 s apart, of 2 CPU cores and ``gpus`` GPUs (utilisation and memory) on algo-1."""
    lines = []
    for k in range(instants):
        ts = T + 0.5 * k
        lines += [json.dumps({"Type": "cpu", "Name": f"cpu{c}", "Dimension": "CPUUtilization", "Value": 5.0,
                              "Timestamp": ts, "NodeId": "algo-1"}) for c in range(2)]
        for g in range(gpus):
            for dim, value in (("GPUUtilization", 3.0 + g % 50), ("GPUMemoryUtilization", 2.0)):
                lines.append(json.dumps({"Type": "gpu", "Name": f"gpu{g}", "Dimension": dim, "Value": value,
                                         "Timestamp": ts + 0.001, "NodeId": "algo-1"}))
    path = folder / "system" / "incremental" / "2023111400" / f"{T}.algo-1.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", default="20000,8")
    ap.add_argument("--tree", action="append", type=Path, default=[], help="checkout to run (repeatable; default: this one)")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/reportgen-gpu-series"))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--instants", type=int, default=2, help="samples per series (2: 20,000 GPUs is a 10 MB file)")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    trees = args.tree or [REPO]
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| GPU series | file | tree | wall s | CPU s | peak RSS | exit |\n|---:|---:|---|---:|---:|---:|---:|")
    for gpus in (int(g) for g in args.gpus.split(",")):
        src = args.dir / f"gpus-{gpus}-{args.instants}"
        if not src.exists():
            make_node(src, gpus, args.instants)
        size = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
        for _ in range(args.repeat):
            for tree in trees:  # interleaved
                out = args.dir / f"out-{gpus}-{tree.name}"
                start = time.perf_counter()
                env = {**os.environ, "PYTHONPATH": str(tree)}
                proc = subprocess.Popen(["timeout", str(args.timeout), sys.executable, "-m", "reportgen", "analyze",
                                         str(src), "-o", str(out), "-q"], cwd=tree, env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                _, status, usage = os.wait4(proc.pid, 0)
                wall = time.perf_counter() - start
                cpu = usage.ru_utime + usage.ru_stime
                print(f"| {gpus} | {size / 1e6:.1f} MB | {tree} | {wall:.1f} | {cpu:.1f} | {usage.ru_maxrss / 1024:.0f} MB "
                      f"| {os.waitstatus_to_exitcode(status)} |", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
