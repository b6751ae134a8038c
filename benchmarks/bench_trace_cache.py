#!/usr/bin/env python
"""The trace cache's reading part, cold and warm (issue 51, part 2: warm < 10 % of the first run's).

    python benchmarks/bench_trace_cache.py TRACE_FOLDER [--repeat 3]

For every trace file of the folder (``sources.layout.find_traces``), CPU seconds of this process (user + sys;
the machine is shared, so not wall) for:

* ``no cache``: ``read_trace_file`` alone (what a run read before the cache, and reads with ``--no-cache``);
* ``first run``: ``read_trace_cached`` into an empty cache (hash, read, store; each digest remembered);
* ``warm, hashed``: ``read_trace_cached`` again with every file hashed in full (``REPORTGEN_DIGEST_MEMO=0``;
  hash, load the entry);
* ``warm``: the same as a next run does it, the digests from the memo (``readers/digest_memo.py``; load the
  entry, no trace byte read: files changed less than 2 s before the first run are hashed again);

each the median of ``--repeat`` rounds, a fresh cache folder per round; then the entries' size on disk.
A whole ``generate`` is timed from outside (benchmarks/HISTORY.md, "Warm re-runs").
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

from reportgen.problems import ProblemLog
from reportgen.readers.digest_memo import DigestMemo
from reportgen.readers.trace_cache import TraceCache, read_trace_cached
from reportgen.readers.trace_files import read_trace_file
from reportgen.sources.layout import find_traces


def cpu() -> float:
    return time.process_time()


def timed(step) -> float:
    gc.collect()
    start = cpu()
    step()
    return cpu() - start


def read_all(files: list[Path], cache: TraceCache) -> list:
    return [read_trace_cached(f, ProblemLog(), cache) for f in files]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    files = find_traces(args.folder)
    size = sum(f.stat().st_size for f in files)
    rows: dict[str, list[float]] = {"no cache": [], "first run": [], "warm, hashed": [], "warm": []}
    stored = 0
    for _ in range(args.repeat):
        folder = Path(tempfile.mkdtemp(prefix="rg-trace-cache-"))
        cache = TraceCache(folder, 1 << 40, memo=DigestMemo(folder))
        hashed = TraceCache(folder, 1 << 40)
        try:
            rows["no cache"].append(timed(lambda: [read_trace_file(f, ProblemLog()) for f in files]))
            rows["first run"].append(timed(partial(read_all, files, cache)))
            rows["warm, hashed"].append(timed(partial(read_all, files, hashed)))
            nxt = TraceCache(folder, 1 << 40, memo=DigestMemo(folder))  # the next run: the memo read from its log
            rows["warm"].append(timed(partial(read_all, files, nxt)))
            stored = sum(p.stat().st_size for p in folder.glob("*.npz"))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"{len(files)} files, {size / 1e6:.1f} MB on disk; entries {stored / 1e6:.1f} MB; "
          f"CPU s, median of {args.repeat} (min-max)")
    base = statistics.median(rows["no cache"])
    for name, values in rows.items():
        median = statistics.median(values)
        print(f"  {name:<12} {median:7.3f} s  ({min(values):.3f}-{max(values):.3f})  {median / base:6.1%} of no cache"
              f"  {size / 1e6 / median:8.1f} MB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
