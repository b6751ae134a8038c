"""The notebook path's overhead: ``reportgen generate`` against the engine alone, whole processes, interleaved.

Usage: python benchmarks/bench_notebook_path.py [SOURCE] [--runs N] [--base DIR] [--in-process]
       (default: sample_data, 5 runs)

Each round runs, in turn, a fresh ``python -m reportgen generate SOURCE -o tmp/report.html -q`` and a fresh
process that only runs the engine (``reportgen.engine.analyze``, what ``reportgen analyze`` runs), so both
see the same machine load. Peak memory is the largest sum of the resident sizes of the process and its
descendants (the page's worker process included), sampled every 20 ms with psutil; CPU is the user + system time
of the process and its waited-for descendants. Prints the medians and the ratio. ``--base DIR``: a checkout
of another commit (``git worktree add /tmp/base <commit>``) whose ``generate`` runs in the same rounds
(through PYTHONPATH), for a before/after comparison under the same load. ``--in-process``: also
``generate`` with ``REPORTGEN_NOTEBOOK_PROCESS=0`` (the page made in the same process, no worker).
"""

from __future__ import annotations

import argparse
import os
import resource
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


def timed(argv: list[str], env: dict | None = None, cwd: Path = ROOT) -> tuple[float, float]:
    """(seconds, CPU seconds of the tree) of one whole process, nothing sampled while it runs.

    ``run``'s memory sampling is not free: reading a process's proportional set size walks its page
    tables under its memory-map lock (its page faults wait) and takes a core's share of its own, so on
    two cores it slowed a 4 s ``analyze`` (three processes) by 1.3 s and the one-process DuckDB query by
    0.4 s (2026-11-27, benchmarks/README.md). Time with this; take the peak from separate runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    ran = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, env=env)
    seconds = time.perf_counter() - started
    if ran.returncode:
        raise SystemExit(f"{argv} exited with {ran.returncode}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(argv: list[str], env: dict | None = None, cwd: Path = ROOT) -> tuple[float, float, float]:
    """(seconds, peak MB of the process tree, CPU seconds of the tree) of one whole process; its seconds
    include the sampling's cost (see ``timed``)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = psutil.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, env=env)
    peak = 0
    while proc.poll() is None:
        try:
            tree = [proc, *proc.children(recursive=True)]
            peak = max(peak, tree_bytes(tree))
        except psutil.Error:
            pass
        time.sleep(0.02)
    seconds = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"{argv} exited with {proc.returncode}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, peak / 2**20, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, default=ROOT / "sample_data")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--base", type=Path, default=None, help="another checkout whose generate runs too")
    parser.add_argument("--in-process", action="store_true",
                        help="also run generate with REPORTGEN_NOTEBOOK_PROCESS=0 (the page made in the same process)")
    args = parser.parse_args()
    args.source = args.source.resolve()
    args.base = args.base.resolve() if args.base else None
    if args.base:
        ran = subprocess.run([sys.executable, "-c", "import reportgen; print(reportgen.__file__)"], cwd=args.base,
                             env={**os.environ, "PYTHONPATH": str(args.base)}, capture_output=True, text=True).stdout
        if not Path(ran.strip()).resolve().is_relative_to(args.base):
            raise SystemExit(f"--base {args.base}: its generate would import {ran.strip()!r}, not the base's code")
    # Byte-compiled first, as `pip install` leaves an installed package: with PYTHONDONTWRITEBYTECODE set (some
    # CI images and sandboxes) a source checkout would otherwise compile every module in every run, which
    # costs the page's worker (it imports the report builders) more than the engine.
    for tree in (ROOT, args.base):
        if tree is not None:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "reportgen")], check=True)
    gen, eng, base, here = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            gen.append(run([sys.executable, "-m", "reportgen", "generate", str(args.source), "-o",
                            f"{tmp}/report.html", "-q"]))
            eng.append(run([sys.executable, "-c", ENGINE_ONLY, str(args.source), f"{tmp}/engine"]))
            if args.in_process:
                here.append(run([sys.executable, "-m", "reportgen", "generate", str(args.source), "-o",
                                 f"{tmp}/here.html", "-q"], env={**os.environ, "REPORTGEN_NOTEBOOK_PROCESS": "0"}))
            if args.base:
                base.append(run([sys.executable, "-m", "reportgen", "generate", str(args.source), "-o",
                                 f"{tmp}/base.html", "-q"], env={**os.environ, "PYTHONPATH": str(args.base)},
                                cwd=args.base))  # `-m` puts the working folder first on sys.path
    for name, runs in (("generate", gen), ("engine", eng), ("base gen", base), ("in-proc", here)):
        if not runs:
            continue
        times = [t for t, _, _ in runs]
        print(f"{name:9} median {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}), "
              f"peak {max(m for _, m, _ in runs):.0f} MB, CPU median {statistics.median(c for _, _, c in runs):.2f} s")
    g, e = statistics.median(t for t, _, _ in gen), statistics.median(t for t, _, _ in eng)
    print(f"ratio:    {g / e:.2f}x wall, {statistics.median(c for *_, c in gen) / statistics.median(c for *_, c in eng):.2f}x "
          f"CPU, over {args.runs} interleaved runs; load average {os.getloadavg()[0]:.1f}")
    if here:
        h = statistics.median(t for t, _, _ in here)
        print(f"in-process generate: {h / e:.2f}x wall")


if __name__ == "__main__":
    main()
