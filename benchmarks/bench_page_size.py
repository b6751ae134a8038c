#!/usr/bin/env python
"""The page's size against the job's size (issue 32): ``reportgen generate`` of a base commit and of the
working tree on the same inputs, interleaved whole processes.

    python benchmarks/bench_page_size.py [--base REF] [--raw DIR ...] [--synthetic 8,16] [--own 32,64] [--runs N]

Inputs: ``sample_data``; each ``--raw`` folder of SageMaker raw profiler data (e.g. the 4-node x 2 h
``benchmarks/data/medium`` of ``generate_data.py --size medium``); and, for each N of ``--synthetic``, the
rule outputs of sample_data with the ``timeline.json`` of an N-node x 8 h job, 96 cores and 8 GPUs a node,
sampled every 0.5 s (``testdata/long_timeline.py``: the engine's own bucketing of synthetic samples; the
page's time series come only from that file, so this is the page of such a job without writing and
parsing N x 6 GB of raw data); for each N of ``--own``, the rule outputs of an N-node job of its own
(3 minutes generated and analysed) with an N-node x 8 h timeline (``own``: the page's tables grow with the
nodes too). Made once under ``benchmarks/data/page-size/``.

For each input and side: the page's bytes, of which plotly.js (inlined once) and the chart specs, the
wall and CPU seconds of the process tree and its peak memory (the largest sum of the resident sizes of
the process and its descendants, sampled every 20 ms), medians over ``--runs``; the 1-minute load
average before and after. Sizes do not depend on the load; times do (say how loaded the machine was).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from process_tree import run  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "page-size"
SPEC = re.compile(r'<script type="application/json" (?:class="chart-spec"|id="chart-parts")>(.*?)</script>', re.S)
SCRIPT = re.compile(r"<script[^>]*>(.*?)</script>", re.S)


def synthetic(nodes: int) -> Path:
    """Rule outputs of sample_data with an N-node x 8 h timeline (made once)."""
    out = DATA / f"synthetic-{nodes}x8h"
    if (out / "timeline.json").is_file():
        return out
    from testdata.long_timeline import long_job_timeline

    rules = DATA / "sample-rule-outputs"
    if not (rules / "OverallSystemUsage.json").is_file():
        subprocess.run([sys.executable, "-m", "reportgen", "analyze", str(ROOT / "sample_data"), "-o", str(rules),
                        "-q"], check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(rules, out)
    (out / "timeline.json").write_text(json.dumps(long_job_timeline(nodes=nodes, cores=96, gpus=8, hours=8.0)))
    return out


def own(nodes: int) -> Path:
    """The rule outputs of an N-node job of its own (96 cores, 8 GPUs a node; generated for 3 minutes and
    analysed by the engine) with the ``timeline.json`` of the same N nodes over 8 h (2 s apart: the page does
    not depend on the sampling interval but for the sentence saying it), as ``tests/integration/
    test_long_job_page.py`` makes its 8 nodes: the page's tables and per-node charts are the N nodes' own."""
    out = DATA / f"own-{nodes}x8h"
    if (out / "timeline.json").is_file():
        return out
    from reportgen.engine import analyze
    from testdata.long_timeline import long_job_timeline
    from testdata.synthetic import generate as generate_raw

    raw = DATA / f"own-{nodes}-raw"
    shutil.rmtree(raw, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    generate_raw(raw, nodes=nodes, cores=96, gpus=8, duration_s=180.0, seed=0)
    analyze(raw, out)
    shutil.rmtree(raw)
    (out / "timeline.json").write_text(json.dumps(long_job_timeline(nodes=nodes, cores=96, gpus=8, hours=8.0,
                                                                    interval_s=2.0)))
    return out


def parts(page: str) -> tuple[int, int, int]:
    """(page bytes, plotly.js bytes, chart-spec bytes: the specs and the attributes they share)."""
    plotly = max((len(s.encode()) for s in SCRIPT.findall(page)), default=0)
    specs = sum(len(s.encode()) for s in SPEC.findall(page))
    return len(page.encode()), plotly, specs


def export(ref: str, dest: Path) -> None:
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def load() -> float:
    return os.getloadavg()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None, help="commit to compare against (default: none, the tree only)")
    ap.add_argument("--raw", action="append", default=[], help="a folder of raw profiler data (repeatable)")
    ap.add_argument("--synthetic", default="8,16", help="node counts of synthetic 8 h jobs ('' for none)")
    ap.add_argument("--own", default="", help="node counts of jobs with their own rule outputs and an 8 h timeline")
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    inputs = [("sample_data (2 nodes, 13 min)", ROOT / "sample_data")]
    inputs += [(f"raw {Path(r).name}", Path(r).resolve()) for r in args.raw]
    inputs += [(f"{n} nodes x 8 h, 96 cores + 8 GPUs each (synthetic timeline)", synthetic(int(n)))
               for n in args.synthetic.split(",") if n]
    inputs += [(f"{n} nodes, own rule outputs, 8 h timeline", own(int(n))) for n in args.own.split(",") if n]
    work = Path(tempfile.mkdtemp(prefix="bench-page-size-"))
    sides = {"tree": ROOT}
    if args.base:
        export(args.base, work / "base")
        sides = {f"base {args.base}": work / "base", "tree": ROOT}
    print(f"load before: {load():.2f}", flush=True)
    rows = []
    try:
        for name, src in inputs:
            found = {side: [] for side in sides}
            for _ in range(args.runs):
                for side, tree in sides.items():  # interleaved: both sides see the same load
                    out = work / "report.html"
                    env = {**os.environ, "PYTHONPATH": str(tree)}
                    seconds, peak, cpu = run([sys.executable, "-m", "reportgen", "generate", str(src), "-o", str(out),
                                              "-q"], env=env, cwd=work)
                    found[side].append((seconds, cpu, peak, parts(out.read_text(encoding="utf-8"))))
            for side, runs in found.items():
                size, plotly, specs = runs[-1][3]
                row = (name, side, size, plotly, specs, statistics.median(r[0] for r in runs),
                       statistics.median(r[1] for r in runs), max(r[2] for r in runs))
                rows.append(row)
                print(f"{name:60s} {side:16s} page {size / 1e6:6.2f} MB (plotly.js {plotly / 1e6:.2f}, charts "
                      f"{specs / 1e6:.2f})  wall {row[5]:6.1f} s  CPU {row[6]:6.1f} s  peak {row[7]:6.0f} MB",
                      flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load after: {load():.2f}")
    if args.base:
        print("\nsize ratio tree / base:")
        for i in range(0, len(rows), 2):
            print(f"  {rows[i][0]:60s} {rows[i + 1][2] / rows[i][2]:.2f}x ({rows[i][2]:,} -> {rows[i + 1][2]:,} bytes)")


if __name__ == "__main__":
    main()
