#!/usr/bin/env python
"""Gzip bombs: wall time and peak RSS of ``reportgen generate`` on each bomb of ``tests/support/bombs.py``.

    python benchmarks/bench_bombs.py [--dir /tmp/reportgen-bombs] [--only KIND,KIND]

Each bomb (at most 10 MB on disk, up to 10 GB of text) is built once under --dir, then turned into a
report in a fresh child process; the peak RSS is the child's as the kernel reports it to the parent
(``os.wait4``), the times are the child's wall time and CPU time (user + system, with the
notebook kernel it waited for). Prints one row per bomb plus the 1-minute load
average (the machine is shared: compare rows taken together). Nothing here is a test:
tests/e2e/test_bombs.py asserts the memory bound; numbers go to benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support import bombs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/reportgen-bombs"))
    ap.add_argument("--only", default="", help="comma-separated kinds (default: all): " + ", ".join(bombs.KINDS))
    args = ap.parse_args()
    kinds = [k for k in args.only.split(",") if k] or list(bombs.KINDS)
    print(f"| bomb | on disk | wall s | CPU s | peak RSS | exit |\n|---|---:|---:|---:|---:|---:|")
    for kind in kinds:
        src = args.dir / kind / "in"
        if not src.exists():
            src.mkdir(parents=True)
            bombs.KINDS[kind](src)
        size = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
        out = args.dir / kind / "report.html"
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "reportgen", "generate", str(src), "-o", str(out), "-q"],
                                cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        cpu = usage.ru_utime + usage.ru_stime  # the child and the children it waited for (the kernel)
        print(f"| {kind} | {size / 1e6:.1f} MB | {wall:.1f} | {cpu:.1f} | {usage.ru_maxrss / 1024:.0f} MB "
              f"| {os.waitstatus_to_exitcode(status)} |", flush=True)
    print(f"load average (1 min): {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
