"""End-to-end time and HTML size of `reportgen generate` (the issue's target: median <= 5 s).

Usage: python benchmarks/bench_generate.py [SOURCE ...] [--runs N]
Without SOURCE it measures sample_data/ and, when ../shared is present, three real jobs.
Each run is a fresh `python -m reportgen generate` process (interpreter start, kernel start,
notebook, nbconvert): what a user waits for.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "fixtures" / "real"
DEFAULT_REAL = ("beauvilerobed-dd30fc8e", "eljandoubi-60c549bd", "suinaowawa-b3deafcd")


def measure(source: Path, runs: int) -> dict:
    times, size, json_size = [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "reportgen", "generate", str(source), "-o", str(out), "-q"],
                           check=True, cwd=ROOT)
            times.append(time.perf_counter() - started)
        size, json_size = out.stat().st_size, out.with_suffix(".json").stat().st_size
    return {"source": source.name, "median_s": statistics.median(times), "min_s": min(times),
            "max_s": max(times), "html_mb": size / 1e6, "json_kb": json_size / 1e3, "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sources = args.sources or [ROOT / "sample_data", *[REAL / j for j in DEFAULT_REAL if (REAL / j).is_dir()]]
    print(f"{'source':28} {'median s':>9} {'min s':>7} {'max s':>7} {'HTML MB':>8} {'JSON kB':>8}")
    for source in sources:
        r = measure(source, args.runs)
        print(f"{r['source']:28} {r['median_s']:9.2f} {r['min_s']:7.2f} {r['max_s']:7.2f} "
              f"{r['html_mb']:8.2f} {r['json_kb']:8.1f}")


if __name__ == "__main__":
    main()
