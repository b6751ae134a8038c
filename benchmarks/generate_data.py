#!/usr/bin/env python
"""Generate deterministic synthetic raw profiler data for benchmarks.

    PYTHONPATH=. python benchmarks/generate_data.py --size small|medium|large --out DIR [--seed N]
                                                    [--nodes-only 0,1] [--no-framework]
                                                    [--nodes N] [--hours H]

Sizes (all sampled every 500 ms, with modest framework traces):

=======  =====  =====  ====  ========  ===========================
size     nodes  cores  GPUs  duration  system JSON lines (approx.)
=======  =====  =====  ====  ========  ===========================
small        1      8     1  30 min    ~ 12 MB
medium       4     32     4  2 h       ~ 570 MB
large       16     96     8  4 h       ~ 12 GB
=======  =====  =====  ====  ========  ===========================

``--nodes-only`` writes only some nodes of the configuration (node data do not depend on the
other nodes), e.g. ``--size large --nodes-only 0`` to time one node of ``large`` without
putting 12 GB on disk.  ``--nodes`` / ``--hours`` change a size's node count or duration (the rest
as the size has it), e.g. ``--size large --hours 8`` for issue 32's 16-node x 8 h job (~24 GB),
or shorter runs of it to see what grows with the duration.  Prints the sizes written and the generation time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from testdata.synthetic import Scenario, generate  # noqa: E402

# A busy but imperfect data-parallel job: some CPU bottlenecks, a few outliers and memory jumps.
BENCH_SCENARIO = Scenario(
    init_s=240.0,
    step_ms=400.0,
    gap_ms=20.0,
    eval_every=2000,
    eval_steps=50,
    step_outliers=20,
    gpu_util_busy=(85.0,),
    gpu_idle_fraction=(0.15,),
    gpu_memory_jumps=3,
    cpu_bottleneck_fraction=0.2,
    iowait_spike_fraction=0.02,
    dataloader_workers=4,
    steps_per_epoch=2000,
    detailed_steps=10,
)

SIZES = {
    "small": dict(nodes=1, cores=8, gpus=1, duration_s=30 * 60),
    "medium": dict(nodes=4, cores=32, gpus=4, duration_s=2 * 3600),
    "large": dict(nodes=16, cores=96, gpus=8, duration_s=4 * 3600),
}


def _du(path: str) -> int:
    total = 0
    for dp, _d, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(dp, f))
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Generate synthetic SageMaker Debugger raw profiles for benchmarks")
    ap.add_argument("--size", choices=sorted(SIZES), required=True)
    ap.add_argument("--out", required=True, help="output directory (created; must be empty or absent)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nodes-only", default=None,
                    help="comma-separated 0-based node indices to write (default: all)")
    ap.add_argument("--no-framework", action="store_true", help="write system metrics only")
    ap.add_argument("--nodes", type=int, default=None, help="node count instead of the size's")
    ap.add_argument("--hours", type=float, default=None, help="duration in hours instead of the size's")
    args = ap.parse_args(argv)
    if os.path.isdir(args.out) and os.listdir(args.out):
        ap.error(f"{args.out} is not empty")
    cfg = dict(SIZES[args.size])
    if args.nodes is not None:
        if args.nodes < 1:
            ap.error("--nodes must be at least 1")
        cfg["nodes"] = args.nodes
    if args.hours is not None:
        if not args.hours > 0:
            ap.error("--hours must be positive")
        cfg["duration_s"] = args.hours * 3600
    subset = None
    if args.nodes_only:
        subset = tuple(int(x) for x in args.nodes_only.split(","))
        if any(not 0 <= n < cfg["nodes"] for n in subset):
            ap.error(f"--nodes-only: {args.size} has nodes 0..{cfg['nodes'] - 1}")
    t = time.perf_counter()
    st = generate(args.out, interval_ms=500, seed=args.seed, scenario=BENCH_SCENARIO,
                  framework=not args.no_framework, node_subset=subset, **cfg)
    elapsed = time.perf_counter() - t
    n_nodes = len(subset) if subset else cfg["nodes"]
    print(f"size={args.size} nodes={n_nodes}/{cfg['nodes']} cores={cfg['cores']} gpus={cfg['gpus']} "
          f"duration={cfg['duration_s']}s interval=500ms seed={args.seed}")
    print(f"system:    {st.system_files} files, {st.system_records:,} records, {st.system_bytes / 1e6:,.1f} MB")
    print(f"framework: {st.trace_files} files, {st.trace_events:,} events, {st.trace_bytes / 1e6:,.1f} MB")
    print(f"total on disk: {_du(args.out) / 1e6:,.1f} MB; generated in {elapsed:.1f} s "
          f"({(st.system_bytes + st.trace_bytes) / 1e6 / max(elapsed, 1e-9):,.0f} MB/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
