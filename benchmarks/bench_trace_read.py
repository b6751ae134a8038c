#!/usr/bin/env python
"""Trace reading speed per core: reportgen's readers against the floor of just decoding the same bytes.

    python benchmarks/bench_trace_read.py PATH [PATH ...] [--repeat 3] [--streamed] [--memory]
        [--xspace FILE ...] [--protobuf-python /work/recenv/bin/python] [--json FILE]

``PATH``: a PyTorch profiler (Kineto) trace file or a folder of them (``*.json`` / ``*.json.gz`` found
recursively); each PATH is one row, and all of them together a last one. Measured in this process, in CPU seconds (user + system of the
process, ``time.process_time``: the machine is shared and wall time moves with the load), the least of
``--repeat`` runs, the two interleaved:

* **floor**: read the file, gunzip it (``zlib``) when gzip'd, ``orjson.loads`` the text (what any reader
  that builds the events as Python objects pays at least);
* **reader**: ``readers.kineto_trace.read_trace`` (open, gunzip, decode, the columns it keeps);
* ``--streamed``: the reader again with every file streamed (``REPORTGEN_STREAM_TRACE_MB=0``: how files
  above 64 MB of text are read);
* ``--memory``: each file streamed in a fresh process: its peak RSS growth (``VmHWM``) over the read,
  per event kept.

MB are the files' text (decompressed), so plain and gzip'd rows compare. ``--xspace``: the same for
XSpace protobuf files (``readers.xspace_trace.read_xspace``) beside a plain protobuf parse
(``XSpace.ParseFromString`` of TensorFlow's ``xplane_pb2``, run with ``--protobuf-python``, a Python that
has TensorFlow). The 1-minute load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reportgen.readers.kineto_trace import read_trace  # noqa: E402
from reportgen.readers.xspace_trace import read_xspace  # noqa: E402

MEMORY_CHILD = r"""
import os, sys, json
from pathlib import Path
os.environ["REPORTGEN_STREAM_TRACE_MB"] = "0"
from reportgen.readers.kineto_trace import read_trace
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
read_trace(Path(sys.argv[2]))  # warm: the first read's one-time costs are not the file's
before = hwm()
trace = read_trace(Path(sys.argv[1]))
print(json.dumps({"events": int(len(trace.start_us)), "peak_growth": hwm() - before}))
"""

PROTOBUF_FLOOR = r"""
import sys, time, json, zlib
from tensorflow.tsl.profiler.protobuf import xplane_pb2
best = None
for _ in range(int(sys.argv[2])):
    t = time.process_time()
    data = open(sys.argv[1], "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = zlib.decompress(data, 16 + zlib.MAX_WBITS)
    space = xplane_pb2.XSpace()
    space.ParseFromString(data)
    events = sum(len(line.events) for plane in space.planes for line in plane.lines)
    cpu = time.process_time() - t
    best = cpu if best is None else min(best, cpu)
print(json.dumps({"cpu_s": best, "events": events}))
"""


def trace_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith((".json", ".json.gz")))


def text_of(path: Path) -> bytes:
    data = path.read_bytes()
    return zlib.decompress(data, 16 + zlib.MAX_WBITS) if data[:2] == b"\x1f\x8b" else data


def floor(path: Path) -> None:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = zlib.decompress(data, 16 + zlib.MAX_WBITS)
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        json.loads(data)


def cpu_of(fn, files: list[Path]) -> float:
    t = time.process_time()
    for f in files:
        fn(f)
    return time.process_time() - t


def streamed_read(path: Path) -> None:
    os.environ["REPORTGEN_STREAM_TRACE_MB"] = "0"
    try:
        read_trace(path)
    finally:
        del os.environ["REPORTGEN_STREAM_TRACE_MB"]


def memory_per_event(files: list[Path], warm: Path) -> dict:
    events = growth = 0
    for f in files:
        out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(f), str(warm)], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True).stdout
        row = json.loads(out)
        events += row["events"]
        growth = max(growth, row["peak_growth"] / max(row["events"], 1))
    return {"events": events, "max_bytes_per_event": round(growth, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--streamed", action="store_true", help="also read every file streamed")
    ap.add_argument("--memory", action="store_true", help="peak memory per event of a streamed read")
    ap.add_argument("--xspace", nargs="*", type=Path, default=[], help="XSpace .xplane.pb files")
    ap.add_argument("--protobuf-python", type=Path, default=None, help="a Python with TensorFlow (XSpace floor)")
    ap.add_argument("--json", type=Path, default=None, help="append every row as one JSON line here")
    args = ap.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    for path in args.paths:
        files = trace_files(path)
        if not files:
            print(f"{path}: no trace files", file=sys.stderr)
            return 2
        mb = sum(len(text_of(f)) for f in files) / 1e6
        best: dict[str, float] = {}
        modes = {"floor": floor, "reader": read_trace, **({"streamed": streamed_read} if args.streamed else {})}
        for _ in range(args.repeat):
            for mode, fn in modes.items():
                cpu = cpu_of(fn, files)
                best[mode] = min(best.get(mode, cpu), cpu)
        row = {"set": str(path), "files": len(files), "gzip": files[0].name.endswith(".gz"), "text_mb": round(mb, 1),
               **{f"{m}_cpu_s": round(c, 2) for m, c in best.items()},
               **{f"{m}_mb_per_cpu_s": round(mb / c, 1) for m, c in best.items() if c > 0}}
        row["reader_vs_floor"] = round(best["reader"] / best["floor"], 2) if best["floor"] else None
        if args.memory:
            row["streamed_memory"] = memory_per_event(files, min(files, key=lambda f: f.stat().st_size))
        rows.append(row)
        print(json.dumps(row), flush=True)
    if len(rows) > 1:  # every PATH together
        cpu = {m: sum(r[f"{m}_cpu_s"] for r in rows) for m in ("floor", "reader", "streamed") if f"{m}_cpu_s" in rows[0]}
        mb = sum(r["text_mb"] for r in rows)
        total = {"set": "all of the above", "files": sum(r["files"] for r in rows), "text_mb": round(mb, 1),
                 **{f"{m}_cpu_s": round(c, 2) for m, c in cpu.items()},
                 **{f"{m}_mb_per_cpu_s": round(mb / c, 1) for m, c in cpu.items() if c > 0},
                 "reader_vs_floor": round(cpu["reader"] / cpu["floor"], 2) if cpu["floor"] else None}
        rows.append(total)
        print(json.dumps(total), flush=True)
    for path in args.xspace:
        mb = len(text_of(path)) / 1e6
        cpu = min(cpu_of(lambda f: read_xspace(f), [path]) for _ in range(args.repeat))
        row = {"set": str(path), "format": "xspace", "mb": round(mb, 1), "reader_cpu_s": round(cpu, 2),
               "reader_mb_per_cpu_s": round(mb / cpu, 1)}
        if args.protobuf_python:
            out = subprocess.run([str(args.protobuf_python), "-c", PROTOBUF_FLOOR, str(path), str(args.repeat)],
                                 capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
            fl = json.loads(out)
            row.update(floor_cpu_s=round(fl["cpu_s"], 3), floor_mb_per_cpu_s=round(mb / fl["cpu_s"], 1),
                       events=fl["events"], reader_vs_floor=round(cpu / fl["cpu_s"], 1))
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}", flush=True)
    if args.json:
        with open(args.json, "a") as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
