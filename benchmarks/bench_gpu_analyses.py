#!/usr/bin/env python
"""The GPU analyses of issue 28 (``reportgen.trace_analysis.gpu_analyses``) cost: a job's trace analysis
(``reportgen.trace_analysis.job.analyze_traces``, what ``reportgen analyze`` runs on a trace folder) with them, against a
checkout without them, on the same sets, interleaved.

    python benchmarks/bench_gpu_analyses.py --base BASE_CHECKOUT SET [SET ...] [--repeat 3] [--json FILE]

``BASE_CHECKOUT``: a folder holding the base's ``reportgen`` package (``git archive <commit> reportgen | tar -x
-C DIR``). Each run is a fresh process (``python -c``, this interpreter, the checkout first on ``sys.path``) that
analyses every trace file of the set; measured: wall (from outside), CPU (user + system of the child), peak
RSS (the child's ``ru_maxrss``). Base and tree alternate run by run so that a busy machine weighs on both; the
1-minute load average is printed before and after. Prints one row per run and the median ratio per set.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD = """
import resource, sys, time
sys.path.insert(0, sys.argv[1])
import reportgen
assert reportgen.__file__.startswith(sys.argv[1]), reportgen.__file__
from reportgen.trace_analysis.job import analyze_traces
files = sys.argv[2:]
t = time.perf_counter()
doc, problems = analyze_traces(files)
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
      sum(1 for r in doc["ranks"].values() if r.get("gpu_analysis")))
"""


def _files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob("*") if p.is_file() and (".pt.trace.json" in p.name
                                                                         or p.name.endswith(".json.gz")))


def run(checkout: str, files: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, checkout, *files], capture_output=True, text=True,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    inner, rss_kb, gpu_ranks = out.stdout.split()[-3:]
    return {"wall_s": wall, "analysis_s": float(inner), "cpu_s": (after.ru_utime - before.ru_utime)
            + (after.ru_stime - before.ru_stime), "peak_mb": int(rss_kb) / 1024, "gpu_ranks": int(gpu_ranks)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="+", type=Path)
    ap.add_argument("--base", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    tree = str(Path(__file__).resolve().parents[1])
    rows = []
    print(f"load before: {os.getloadavg()[0]:.1f}")
    for folder in a.sets:
        files = _files(folder)
        mb = sum(Path(f).stat().st_size for f in files) / 1e6
        for i in range(a.repeat):
            for side, checkout in (("base", a.base), ("tree", tree)) if i % 2 == 0 else (("tree", tree), ("base", a.base)):
                r = {"set": folder.name, "mb": round(mb, 1), "side": side, **run(checkout, files)}
                rows.append(r)
                print(json.dumps(r), flush=True)
        med = {side: {k: statistics.median(r[k] for r in rows if r["set"] == folder.name and r["side"] == side)
                      for k in ("wall_s", "cpu_s", "analysis_s", "peak_mb")} for side in ("base", "tree")}
        print(f"{folder.name}: median tree/base wall {med['tree']['wall_s'] / med['base']['wall_s']:.3f}, CPU "
              f"{med['tree']['cpu_s'] / med['base']['cpu_s']:.3f}, analysis {med['tree']['analysis_s'] / med['base']['analysis_s']:.3f}, "
              f"peak {med['base']['peak_mb']:.0f} -> {med['tree']['peak_mb']:.0f} MB", flush=True)
    print(f"load after: {os.getloadavg()[0]:.1f}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
