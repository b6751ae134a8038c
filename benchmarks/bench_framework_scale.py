#!/usr/bin/env python
"""Client memory against framework-trace volume: the engine before and after the per-file reduction.

    python benchmarks/bench_framework_scale.py [--base REF] [--sizes 1x2,1x4] [--minutes 30]
                                               [--scheduler local:2] [--dir /tmp/reportgen-fwscale]

Writes deterministic framework-heavy SageMaker profiles (``testdata.synthetic.generate`` with the
benchmark scenario, every TRAIN step profiled in detail: sub-module, CPU-operator and GPU-kernel
events, ~54 events per step; a small system part: 2 cores, 1 GPU) of ``NODES x HOURS`` (``--sizes``,
e.g. ``1x2`` = 2 nodes for 1 hour; ``--minutes`` scales the hour), then runs the engine
(``reportgen.engine.analyze``) on each, one fresh child process per run, for the ``--base`` commit
(exported with ``git archive``) and for the working tree, and with ``--scheduler`` for the tree
too. Each child reports its own peak RSS (``VmHWM`` of the process: with a scheduler that is the
client alone, the workers are other processes; Linux only) and wall time; the rule JSONs, data-quality.json
and timeline.json of every run are compared byte for byte with the base's.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, sys, time
from pathlib import Path

def main():
    from reportgen.engine import analyze
    t = time.perf_counter()
    kw = {"scheduler": sys.argv[3]} if len(sys.argv) > 3 else {}
    r = analyze(Path(sys.argv[1]), Path(sys.argv[2]), **kw)
    wall = time.perf_counter() - t
    # VmHWM: this process's own peak. ru_maxrss would also count the parent's resident size at the
    # fork (Linux folds the pre-exec high-water mark into it).
    hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
    print(json.dumps({"wall_s": wall, "peak_mib": hwm / 1024, "events": r.n_events}))

if __name__ == "__main__":
    main()
"""


def export_tree(ref: str, dest: Path) -> None:
    data = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", ref], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def make_profile(out: Path, nodes: int, seconds: float) -> dict:
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "benchmarks"))
    from dataclasses import replace

    from generate_data import BENCH_SCENARIO
    from testdata.synthetic import generate

    marker = out / ".stats.json"
    if marker.exists():
        return json.loads(marker.read_text())
    sc = replace(BENCH_SCENARIO, detailed_start=0, detailed_steps=10**9, init_s=30.0)
    st = generate(out, nodes=nodes, cores=2, gpus=1, duration_s=seconds, interval_ms=500, seed=7, scenario=sc)
    stats = {"trace_files": st.trace_files, "trace_events": st.trace_events, "trace_mb": st.trace_bytes / 2**20,
             "system_mb": st.system_bytes / 2**20}
    marker.write_text(json.dumps(stats))
    return stats


def outputs(folder: Path) -> dict[str, bytes]:
    got = {p.name: p.read_bytes() for p in sorted((folder / "profiler-reports").glob("*.json"))}
    for name in ("data-quality.json", "timeline.json"):
        got[name] = (folder / name).read_bytes()
    return got


def run(code: Path, profile: Path, out: Path, scheduler: str | None) -> dict:
    script = out.parent / "child.py"
    script.write_text(_CHILD)
    cmd = [sys.executable, str(script), str(profile), str(out)] + ([scheduler] if scheduler else [])
    env = {**os.environ, "PYTHONPATH": str(code)}
    res = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="main")
    ap.add_argument("--sizes", default="1x1,1x2,1x4", help="comma-separated HOURSxNODES (1x2: 1 hour, 2 nodes)")
    ap.add_argument("--minutes", type=float, default=60.0, help="length of one 'hour' in minutes (default 60)")
    ap.add_argument("--scheduler", default=None, help="also run the tree with this --scheduler (e.g. local:2)")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "reportgen-fwscale"))
    args = ap.parse_args(argv)
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="fwscale-base-"))
    try:
        export_tree(args.base, base)
        rows = _measure(args, work, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    (work / "results.json").write_text(json.dumps(rows, indent=1))
    return 0 if all(r["same"] for r in rows) else 1


def _measure(args, work: Path, base: Path) -> list[dict]:
    load = os.getloadavg()[0]
    rows = []
    for size in args.sizes.split(","):
        hours, nodes = (float(x) for x in size.split("x"))
        prof = work / f"profile-{size}-{args.minutes:g}m"
        t = time.perf_counter()
        stats = make_profile(prof, int(nodes), hours * args.minutes * 60)
        gen_s = time.perf_counter() - t
        runs = [("base", base, None), ("tree", REPO, None)]
        if args.scheduler:
            runs.append((f"tree {args.scheduler}", REPO, args.scheduler))
        ref = None
        for label, code, sched in runs:
            run_dir = Path(tempfile.mkdtemp(prefix="fwscale-out-", dir=work))
            try:
                r = run(code, prof, run_dir / "o", sched)
                got = outputs(run_dir / "o")
            finally:
                shutil.rmtree(run_dir, ignore_errors=True)
            ref = ref or got
            r.update(size=size, run=label, same=(got == ref), **stats)
            rows.append(r)
            print(f"{size:>6} {stats['trace_mb']:8.1f} MB traces {stats['trace_events']:>10,} events | {label:<16} "
                  f"wall {r['wall_s']:6.1f} s  client peak {r['peak_mib']:7.1f} MiB  identical: {r['same']}"
                  + (f"  (generated in {gen_s:.0f} s)" if label == "base" else ""), flush=True)
    print(f"load average at start: {load:.1f}, at end: {os.getloadavg()[0]:.1f}")
    return rows


if __name__ == "__main__":
    sys.exit(main())
