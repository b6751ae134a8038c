#!/usr/bin/env python
"""Generate a deterministic multi-rank PyTorch profiler (Kineto) trace set for benchmarks.

    PYTHONPATH=. python benchmarks/generate_kineto.py --ranks 64 --mb 200 --out DIR
        [--seed 0] [--cycles 2] [--straggler RANK|none|auto] [--straggler-ms 60] [--layers 24]
        [--gzip] [--compact] [--jobs N]

N ranks x S MB each (S counts all of a rank's cycles), written streaming (one step's text in memory
at a time) as torch names them: ``<host>_<pid>.<ns>.pt.trace.json[.gz]``, one file per rank and
profiling cycle. What the traces hold (a DDP transformer training on 8-GPU nodes, NCCL all-reduce,
a planted straggler rank with slow data loading) is described in ``testdata/kineto_synthetic.py``.
The same arguments give byte-identical files. Prints the plan, the files' total size and the
write speed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from testdata.kineto_synthetic import KinetoSet, write_set  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--mb", type=float, default=20.0, help="MB of trace per rank (all its cycles)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cycles", type=int, default=2, help="profiling cycles (files) per rank")
    ap.add_argument("--straggler", default="auto",
                    help="rank with slow data loading, 'none', or 'auto' (rank 2N/3 with 2 or more ranks)")
    ap.add_argument("--straggler-ms", type=float, default=60.0, help="its extra DataLoader time per step")
    ap.add_argument("--layers", type=int, default=24, help="transformer layers (events per step ~ 420 x layers)")
    ap.add_argument("--gzip", action="store_true", help="write .pt.trace.json.gz (compresslevel 1; slower)")
    ap.add_argument("--compact", action="store_true", help="one event per line instead of torch's layout")
    ap.add_argument("--jobs", type=int, default=1, help="processes writing ranks in parallel")
    args = ap.parse_args(argv)
    if args.straggler.lower() == "auto":
        straggler = (2 * args.ranks) // 3 if args.ranks >= 2 else None
    else:
        straggler = None if args.straggler.lower() == "none" else int(args.straggler)
    if args.ranks < 1 or args.mb <= 0 or args.cycles < 1 or args.layers < 1:
        ap.error("--ranks, --mb, --cycles and --layers must be positive")
    if straggler is not None and not 0 <= straggler < args.ranks:
        ap.error(f"--straggler must be a rank in 0..{args.ranks - 1} or 'none'")
    spec = KinetoSet(ranks=args.ranks, mb=args.mb, seed=args.seed, cycles=args.cycles, straggler=straggler,
                     straggler_ms=args.straggler_ms, layers=args.layers, gzip=args.gzip, compact=args.compact)
    t0 = time.perf_counter()
    info = write_set(spec, args.out, jobs=args.jobs)
    wall = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in info["files"])
    text = info["steps_per_cycle"] * spec.cycles * info["bytes_per_step"] * spec.ranks  # JSON text (before gzip)
    print(json.dumps({"out": str(args.out), "ranks": spec.ranks, "files": len(info["files"]),
                      "steps_per_cycle": info["steps_per_cycle"], "cycles": spec.cycles,
                      "bytes_per_step": info["bytes_per_step"], "straggler": straggler,
                      "disk_mb": round(size / 1e6, 1), "text_mb": round(text / 1e6, 1), "wall_s": round(wall, 2),
                      "text_mb_per_s": round(text / 1e6 / wall, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
