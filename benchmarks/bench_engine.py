"""Time the analysis engine on generated raw profiler folders.

Usage: python benchmarks/bench_engine.py RAW_DIR [RAW_DIR ...] [--repeat N]

Each run is a fresh child process (``python -c 'analyze(...)'``), so the figures are whole-process:
interpreter start, imports, ingest, all 11 rules and the JSON writing. Wall time is measured by the
parent; peak RSS is the child's ``ru_maxrss`` (via ``resource.getrusage(RUSAGE_CHILDREN)``, which
only ever grows, so each run gets its own short-lived parent).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run([sys.executable, "-c",
    "import sys; from pathlib import Path; from reportgen.engine import analyze; "
    "analyze(Path(sys.argv[1]), Path(sys.argv[2]))", sys.argv[1], sys.argv[2]],
    env={**__import__('os').environ, "PYTHONPATH": sys.argv[3]})
wall = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"rc": p.returncode, "wall_s": wall, "peak_rss_mb": rss}))
"""


def measure(raw: Path) -> dict:
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([sys.executable, "-c", _CHILD, str(raw), out, str(REPO)],
                           capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def size_mb(raw: Path, sub: str) -> float:
    d = raw / sub
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) / 2**20 if d.is_dir() else 0.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", nargs="+", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"{'dataset':<28}{'system MB':>10}{'framework MB':>13}{'best wall s':>12}{'median wall s':>14}{'peak RSS MB':>12}")
    for raw in args.raw:
        runs = [measure(raw) for _ in range(args.repeat)]
        if any(r["rc"] for r in runs):
            print(f"{raw.name:<28} FAILED (exit {runs[0]['rc']})")
            continue
        walls = sorted(r["wall_s"] for r in runs)
        print(f"{raw.name:<28}{size_mb(raw, 'system'):>10.0f}{size_mb(raw, 'framework'):>13.1f}"
              f"{walls[0]:>12.2f}{walls[len(walls) // 2]:>14.2f}{max(r['peak_rss_mb'] for r in runs):>12.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
