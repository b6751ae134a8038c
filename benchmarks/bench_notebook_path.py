"""The notebook path's overhead: ``reportgen generate`` against the engine alone, whole processes, interleaved.

Usage: python benchmarks/bench_notebook_path.py [SOURCE] [--runs N]   (default: sample_data, 5 runs)

Each round runs, in turn, a fresh ``python -m reportgen generate SOURCE -o tmp/report.html -q`` and a fresh
process that only runs the engine (``reportgen.engine.analyze``, what ``reportgen analyze`` runs), so both
see the same machine load. Peak memory is the largest sum of the resident sizes of the process and its
descendants (the notebook kernel included), sampled every 20 ms with psutil. Prints the medians and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
ENGINE_ONLY = ("import sys; from pathlib import Path; from reportgen.engine import analyze; "
               "analyze(Path(sys.argv[1]), Path(sys.argv[2]))")


def run(argv: list[str]) -> tuple[float, float]:
    """(seconds, peak MB of the process tree) of one whole process."""
    started = time.perf_counter()
    proc = psutil.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        try:
            tree = [proc, *proc.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    seconds = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"{argv} exited with {proc.returncode}")
    return seconds, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, default=ROOT / "sample_data")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    gen, eng = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            gen.append(run([sys.executable, "-m", "reportgen", "generate", str(args.source), "-o",
                            f"{tmp}/report.html", "-q"]))
            eng.append(run([sys.executable, "-c", ENGINE_ONLY, str(args.source), f"{tmp}/engine"]))
    g, e = statistics.median(t for t, _ in gen), statistics.median(t for t, _ in eng)
    print(f"generate: median {g:.2f} s (min {min(t for t, _ in gen):.2f}, max {max(t for t, _ in gen):.2f}), "
          f"peak {max(m for _, m in gen):.0f} MB")
    print(f"engine:   median {e:.2f} s (min {min(t for t, _ in eng):.2f}, max {max(t for t, _ in eng):.2f}), "
          f"peak {max(m for _, m in eng):.0f} MB")
    print(f"ratio:    {g / e:.2f}x over {args.runs} interleaved runs")


if __name__ == "__main__":
    main()
