#!/usr/bin/env python
"""JAX / TensorFlow profiler output (XSpace ``.xplane.pb``) at scale: read time and peak memory of
``reportgen.readers.xspace_trace.read_xspace`` against the number of events.

    python benchmarks/bench_xspace.py [--events 200000,1000000] [--repeat 2] [--json FILE]

A synthetic XSpace is written per size (a host plane with a ``python`` line of annotated steps and
``$builtins next`` calls, and 8 op threads, names from a pool of 200 as TF's are; the shape of the real
recordings in tests/recordings/jax-tf). Each read runs in a fresh process, sizes interleaved per repeat
(the machine is shared): wall, CPU (user + system) and the process's peak RSS (``VmHWM``) before and after
the read; ``bytes/event`` = (peak after - peak before) / events. The 1-minute load average is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MS = 10**9  # ps
sys.path.insert(0, str(ROOT))
from tests.support.xspace_writer import int_field as _int, len_field as _len  # noqa: E402


def write_space(path: Path, events: int) -> None:
    """An XSpace of about ``events`` events (see the module docstring)."""
    names = {1: b"train", 2: b"$builtins next"} | {10 + i: f"Op{i}:MatMulFusion".encode() for i in range(200)}
    step_stat = 1
    steps = max(events // 100, 1)
    lines = []
    python = bytearray(_int(1, 0) + _len(2, b"python") + _int(3, 0))
    for s in range(steps):
        python += _len(4, _int(1, 1) + _int(2, s * 10 * MS) + _int(3, 9 * MS)
                       + _len(4, _int(1, step_stat) + _int(4, s)))
        python += _len(4, _int(1, 2) + _int(2, s * 10 * MS + MS // 10) + _int(3, 2 * MS))
    lines.append(bytes(python))
    per_thread = max((events - 2 * steps) // 8, 0)
    for t in range(8):
        line = bytearray(_int(1, t + 1) + _len(2, f"tf_op_thread/{t}".encode()) + _int(3, 0))
        for i in range(per_thread):
            line += _len(4, _int(1, 10 + (i * 7 + t) % 200) + _int(2, i * 100_000_000 + t) + _int(3, 80_000_000))
        lines.append(bytes(line))
    plane = _len(2, b"/host:CPU") + b"".join(_len(3, line) for line in lines)
    for key, label in names.items():
        plane += _len(4, _int(1, key) + _len(2, _int(1, key) + _len(2, label)))
    plane += _len(5, _int(1, step_stat) + _len(2, _int(1, step_stat) + _len(2, b"step_num")))
    path.write_bytes(_len(1, plane))


CHILD = r"""
import json, os, resource, sys, time
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
from reportgen.readers.xspace_trace import read_xspace
from reportgen.problems import ProblemLog
before = hwm()
r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
problems = ProblemLog()
trace = read_xspace(sys.argv[1], problems)
r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
print(json.dumps({"events": int(trace.cat.size), "wall_s": w1 - w0,
                  "cpu_s": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
                  "hwm_before": before, "hwm_after": hwm(), "problems": problems.total,
                  "steps": sum(1 for n in trace.names if n.startswith("ProfilerStep#"))}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", default="200000,1000000")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    os.environ.setdefault("REPORTGEN_NO_CACHE", "1")  # every run reads its traces: no round warm from the trace cache
    sizes = [int(x) for x in args.events.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-xspace-") as tmp:
        files = {}
        for n in sizes:
            files[n] = Path(tmp) / f"host{n}.xplane.pb"
            write_space(files[n], n)
        print(f"load before: {os.getloadavg()[0]:.1f}", flush=True)
        for rep in range(args.repeat):
            for n in sizes:  # interleaved
                out = subprocess.run([sys.executable, "-c", CHILD, str(files[n])], capture_output=True, text=True,
                                     check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
                row = json.loads(out.stdout) | {"asked": n, "file_mb": files[n].stat().st_size / 2**20, "repeat": rep}
                row["bytes_per_event"] = (row["hwm_after"] - row["hwm_before"]) / max(row["events"], 1)
                rows.append(row)
                print(f"{n:>9} events  file {row['file_mb']:6.1f} MiB  wall {row['wall_s']:6.2f} s  "
                      f"cpu {row['cpu_s']:6.2f} s  peak +{(row['hwm_after'] - row['hwm_before']) / 2**20:6.1f} MiB "
                      f"({row['bytes_per_event']:.0f} B/event)  steps {row['steps']}  problems {row['problems']}",
                      flush=True)
        print(f"load after: {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
