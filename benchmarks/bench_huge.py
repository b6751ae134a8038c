"""Huge single files: peak memory and time of the engine on one 2 GB system-metrics file and one 1 GB
framework trace (issue 8: bounded memory, a too-large trace summarised rather than crashed on).

Usage:
    python benchmarks/bench_huge.py [--dir /tmp/reportgen-huge] [--sys-gb 2] [--trace-gb 1]
                                    [--full-load-mb 200] [--gz-mb 500] [--only CASES] [--keep]

Writes, under --dir (reused when already complete):
  sys/    system/.../<T>.algo-1.json   one file of --sys-gb GB (32 series per 500 ms instant)
  trace/  framework/pevents/.../<END>_27-algo-1_pythontimeline.json   one file of --trace-gb GB
  small/  the same trace layout at --full-load-mb MB, read once streamed and once loaded whole
  kineto/, kineto-small/   a PyTorch profiler (Kineto) trace of --trace-gb GB and of --full-load-mb MB
  tfgz/, kinetogz/   a gzip'd TF profiler trace (.trace.json.gz) and a gzip'd Kineto trace of --gz-mb MB of text
and runs ``reportgen.engine.analyze`` on each in a fresh child process, reporting wall time, CPU
time (user+sys) and peak RSS (``ru_maxrss`` of the child), plus the 1-minute load average.
Cases:
  system, clean          DuckDB fast path
  system, 3 bad lines    the same file with 3 corrupt lines appended: the careful (line-by-line) path
  trace, streamed        default: traces above REPORTGEN_STREAM_TRACE_MB (256) are decoded event by event
  small trace, streamed / loaded whole   the ratio of the two ways on a file that fits either way
  kineto trace, streamed; small kineto trace, streamed / loaded whole   the same for Kineto (read + analysis)
  TF trace .gz / Kineto trace .gz, streamed / loaded whole   (--only tfgz,kinetogz) gzip'd traces above the
                         threshold, decompressed as a stream (default) vs decompressed and loaded whole
                         (REPORTGEN_STREAM_TRACE_MB=100000, what every .gz got before streaming them)
Nothing here is a test: numbers go to benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
T = 1_700_000_040

_CHILD = r"""
import json, os, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "peak_rss_mb": ru.ru_maxrss / 1024, "stdout": p.stdout[-2000:], "stderr": p.stderr[-2000:]}))
"""

# What analyze() does (read, rules, timeline), plus a count of the values kept, column by column.
_ANALYZE = r"""
import json, sys
from pathlib import Path
import numpy as np
from reportgen.engine import load_data, run_rules
from reportgen.engine.timeline import build_timeline
data, problems = load_data(Path(sys.argv[1]))
values = sum(int(np.count_nonzero(~np.isnan(ns.take([j])))) for ns in data.nodes.values() for j in range(len(ns.columns)))
rules = run_rules(data)
build_timeline(data.nodes, data.events, extent_us=data.framework.extent)
print(json.dumps({"nodes": list(data.nodes), "values": values, "events": data.framework.n_events,
                  "problems": problems.total, "by_reason": dict(problems.counts)}))
"""


def write_system(path: Path, gigabytes: float) -> int:
    """One node, 16 cores + 4 GPUs (util + memory) + memory, I/O, network: 32 records per instant."""
    path.parent.mkdir(parents=True, exist_ok=True)
    target = int(gigabytes * 1e9)
    series = [("cpu", f"cpu{c}", "CPUUtilization") for c in range(16)]
    series += [("cpu", f"cpu{c}", "I/OWaitPercentage") for c in range(4)]
    series += [("gpu", f"gpu{g}", d) for g in range(4) for d in ("GPUUtilization", "GPUMemoryUtilization")]
    series += [("memory", "MemoryUsedPercent", ""), ("i/o", "IOPS", ""),
               ("network", "ReceiveBytesPerSecond", "Algorithm"), ("network", "TransmitBytesPerSecond", "Algorithm")]
    templates = [f'{{{{"Type": "{t}", "Name": "{n}", "Dimension": "{d}", "Value": {{v}}, "NodeId": "algo-1", '
                 f'"Timestamp": {{ts}}}}}}\n' for t, n, d in series]
    written = records = 0
    k = 0
    with open(path, "w", encoding="utf-8", buffering=1 << 24) as fh:
        while written < target:
            block = []
            for _ in range(2000):
                ts = T + 0.5 * k
                for j, tpl in enumerate(templates):
                    block.append(tpl.format(v=round((k * 7 + j * 13) % 10000 / 100, 2), ts=f"{ts + 0.001 * (j % 5):.3f}"))
                k += 1
            text = "".join(block)
            fh.write(text)
            written += len(text)
            records += len(block)
    return records


def write_trace(path: Path, megabytes: float) -> int:
    """smdebug's pythontimeline layout (one event per line), steps and operators of 4 phases."""
    path.parent.mkdir(parents=True, exist_ok=True)
    target = int(megabytes * 1e6)
    head = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": T * 1_000_000}}]
    phases = ["Step:ModeKeys.TRAIN", "Step:ModeKeys.EVAL", "DataLoaderWorker", "forward"]
    head += [{"name": "process_name", "ph": "M", "pid": i + 1, "args": {"name": p}} for i, p in enumerate(phases)]
    n = 0
    written = 0
    with open(path, "w", encoding="utf-8", buffering=1 << 24) as fh:
        fh.write("[\n" + ",\n".join(json.dumps(e) for e in head))
        while written < target:
            block = []
            for _ in range(5000):
                pid = 1 + n % 4
                block.append(f',\n{{"name": "op_{n % 97}", "pid": {pid}, "ph": "X", "ts": {n * 20}, "dur": {15 + n % 5}, '
                             f'"args": {{"step_num": "{n // 50}", "pid": 27}}}}')
                n += 1
            text = "".join(block)
            fh.write(text)
            written += len(text)
        fh.write("\n]\n")
    return n


def write_kineto(path: Path, megabytes: float) -> int:
    """A PyTorch profiler (Kineto) trace: CPU operators and GPU kernels, one event per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    target = int(megabytes * 1e6)
    base = T * 1_000_000
    n = written = 0
    with open(path, "w", encoding="utf-8", buffering=1 << 24) as fh:
        fh.write('{"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, '
                 '"deviceProperties": [{"name": "NVIDIA A100"}], "traceEvents": [\n')
        while written < target:
            block = []
            for _ in range(5000):
                if n % 1000 == 0:
                    block.append(f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{n // 1000}", '
                                 f'"pid": 1, "tid": 1, "ts": {base + n * 3}, "dur": 2990}},\n')
                cat = "kernel" if n % 2 else "cpu_op"
                block.append(f'{{"ph": "X", "cat": "{cat}", "name": "op_{n % 300}", "pid": {n % 2}, "tid": 7, '
                             f'"ts": {base + n * 3}, "dur": 2, "args": {{"device": 0}}}},\n')
                n += 1
            text = "".join(block)
            fh.write(text)
            written += len(text)
        fh.write(f'{{"ph": "X", "cat": "cpu_op", "name": "last", "pid": 1, "tid": 1, "ts": {base + n * 3}, "dur": 1}}\n]}}\n')
    return n + n // 1000 + 1


def write_tf_gz(path: Path, megabytes: float) -> tuple[int, int]:
    """A TF profiler trace as the smdebug TF plugin leaves it: gzip'd, metadata events for a host and a
    GPU stream, then complete events one per line (pid / thread in the args); the step's .metadata
    marker four levels up. Returns (events, bytes of text)."""
    import gzip

    path.parent.mkdir(parents=True, exist_ok=True)
    step = path.parents[3]
    (step / f"algo-1_{T * 1_000_000}_{T * 1_000_000 + 3_600_000_000}.metadata").write_text("")
    target = int(megabytes * 1e6)
    head = [{"ph": "M", "pid": p, "name": "process_name", "args": {"name": n}}
            for p, n in ((1, "/host:CPU"), (2, "/device:GPU:0/stream:all"))]
    n = written = 0
    with gzip.open(path, "wb", compresslevel=6) as fh:
        text = '{"displayTimeUnit": "ns", "metadata": {"highres-ticks": true}, "traceEvents": [\n'
        text += ",\n".join(json.dumps(e) for e in head)
        fh.write(text.encode())
        written += len(text)
        while written < target:
            block = []
            for _ in range(5000):
                pid = 1 + n % 2
                block.append(f',\n{{"ph": "X", "pid": {pid}, "tid": {n % 8}, "ts": {n * 20}, "dur": {15 + n % 5}, '
                             f'"name": "{("MatMul", "Conv2D", "Relu", "AddV2")[n % 4]}_{n % 97}", '
                             f'"args": {{"step_num": "{n // 500}", "pid": {pid}, "thread_id": {n % 8}}}}}')
                n += 1
            text = "".join(block)
            fh.write(text.encode())
            written += len(text)
        fh.write(b"\n]}\n")
    return n, written + 4


def write_kineto_gz(path: Path, megabytes: float) -> tuple[int, int]:
    """write_kineto's trace, gzip'd (as torch.profiler's tensorboard handler writes .pt.trace.json.gz)."""
    import gzip

    plain = path.with_suffix("")
    n = write_kineto(plain, megabytes)
    with open(plain, "rb") as src, gzip.open(path, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 24)
    size = plain.stat().st_size
    plain.unlink()
    return n, size


_KINETO = r"""
import json, sys
from pathlib import Path
from reportgen.trace_analysis.analysis import analyze_trace
from reportgen.readers.kineto_trace import read_trace
from reportgen.problems import ProblemLog
log = ProblemLog()
trace = read_trace(Path(sys.argv[1]), log)  # what analyze_job does per rank file
events = len(trace.start_us)
rank = analyze_trace(trace)
print(json.dumps({"events": events, "problems": log.total, "label": trace.label}))
"""


def measure_kineto(path: Path, env_extra: dict | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env_extra or {})}
    load = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, "-c", _CHILD, sys.executable, "-c", _KINETO, str(path)],
                          capture_output=True, text=True, env=env, cwd=str(REPO))
    res = json.loads(proc.stdout)
    res["load_1m_before"] = round(load, 2)
    if res["rc"] == 0:
        res.update(json.loads(res.pop("stdout").strip().splitlines()[-1]))
    return res


def measure(root: Path, env_extra: dict | None = None) -> dict:
    out = root.parent / (root.name + "-out")
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env_extra or {})}
    load = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, "-c", _CHILD, sys.executable, "-c", _ANALYZE, str(root), str(out)],
                          capture_output=True, text=True, env=env, cwd=str(REPO))
    res = json.loads(proc.stdout)
    res["load_1m_before"] = round(load, 2)
    if res["rc"] == 0:
        res.update(json.loads(res.pop("stdout").strip().splitlines()[-1]))
    shutil.rmtree(out, ignore_errors=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/reportgen-huge"))
    ap.add_argument("--sys-gb", type=float, default=2.0)
    ap.add_argument("--trace-gb", type=float, default=1.0)
    ap.add_argument("--full-load-mb", type=float, default=200.0)
    ap.add_argument("--gz-mb", type=float, default=500.0, help="text size of the gzip'd traces (tfgz, kinetogz)")
    ap.add_argument("--only", default="system,bad,trace,small,kineto",
                    help="comma-separated cases to run (also: tfgz, kinetogz)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    args = ap.parse_args()
    os.environ.setdefault("REPORTGEN_NO_CACHE", "1")  # every run reads its traces: no round warm from the trace cache
    only = set(args.only.split(","))
    results = {}
    sys_root = args.dir / "sys"
    sys_file = sys_root / "system" / "incremental" / "2023111422" / f"{T}.algo-1.json"
    if only & {"system", "bad"}:
        if not (sys_root / ".complete").exists() or sys_file.stat().st_size < args.sys_gb * 1e9:
            shutil.rmtree(sys_root, ignore_errors=True)
            t = time.perf_counter()
            n = write_system(sys_file, args.sys_gb)
            (sys_root / ".complete").write_text(str(n))
            print(f"wrote {sys_file} ({sys_file.stat().st_size / 1e9:.2f} GB, {n} records) in "
                  f"{time.perf_counter() - t:.0f} s", flush=True)
        records = int((sys_root / ".complete").read_text())
        size = sys_file.stat().st_size
        if "system" in only:
            with open(sys_file, "r+b") as fh:  # a clean file (a previous run may have appended bad lines)
                fh.truncate(size - _bad_tail_len(sys_file))
            results["system, clean"] = {**measure(sys_root), "file_gb": round(sys_file.stat().st_size / 1e9, 2),
                                        "records": records}
            print(json.dumps(results["system, clean"]), flush=True)
        if "bad" in only:
            if not _bad_tail_len(sys_file):
                with open(sys_file, "ab") as fh:
                    fh.write(BAD_TAIL)
            results["system, 3 bad lines"] = {**measure(sys_root), "file_gb": round(sys_file.stat().st_size / 1e9, 2),
                                              "records": records}
            print(json.dumps(results["system, 3 bad lines"]), flush=True)
    if "trace" in only:
        tr_root = args.dir / "trace"
        tr_file = tr_root / "framework" / "pevents" / "2023111422" / f"{T * 1_000_000 + 60_000_000}_27-algo-1_pythontimeline.json"
        if not (tr_root / ".complete").exists():
            t = time.perf_counter()
            n = write_trace(tr_file, args.trace_gb * 1000)
            (tr_root / ".complete").write_text(str(n))
            print(f"wrote {tr_file} ({tr_file.stat().st_size / 1e9:.2f} GB, {n} events) in "
                  f"{time.perf_counter() - t:.0f} s", flush=True)
        results["trace, streamed"] = {**measure(tr_root), "file_gb": round(tr_file.stat().st_size / 1e9, 2),
                                      "events_written": int((tr_root / ".complete").read_text())}
        print(json.dumps(results["trace, streamed"]), flush=True)
    if "small" in only:
        sm_root = args.dir / "small"
        sm_file = sm_root / "framework" / "pevents" / "2023111422" / f"{T * 1_000_000 + 60_000_000}_27-algo-1_pythontimeline.json"
        if not (sm_root / ".complete").exists():
            n = write_trace(sm_file, args.full_load_mb)
            (sm_root / ".complete").write_text(str(n))
        n = int((sm_root / ".complete").read_text())
        mb = round(sm_file.stat().st_size / 1e6)
        results["small trace, streamed"] = {**measure(sm_root, {"REPORTGEN_STREAM_TRACE_MB": "0"}), "file_mb": mb,
                                            "events_written": n}
        print(json.dumps(results["small trace, streamed"]), flush=True)
        results["small trace, loaded whole"] = {**measure(sm_root, {"REPORTGEN_STREAM_TRACE_MB": "100000"}),
                                                "file_mb": mb, "events_written": n}
        print(json.dumps(results["small trace, loaded whole"]), flush=True)
    if "kineto" in only:
        kpath = args.dir / "kineto" / "rank-0.pt.trace.json"
        if not kpath.exists():
            n = write_kineto(kpath, args.trace_gb * 1000)
            (args.dir / "kineto" / ".events").write_text(str(n))
        n = int((args.dir / "kineto" / ".events").read_text())
        results["kineto trace, streamed"] = {**measure_kineto(kpath), "file_gb": round(kpath.stat().st_size / 1e9, 2),
                                             "events_written": n}
        print(json.dumps(results["kineto trace, streamed"]), flush=True)
        small = args.dir / "kineto-small" / "rank-0.pt.trace.json"
        if not small.exists():
            m = write_kineto(small, args.full_load_mb)
            (small.parent / ".events").write_text(str(m))
        m = int((small.parent / ".events").read_text())
        mb = round(small.stat().st_size / 1e6)
        for label, env in (("streamed", "0"), ("loaded whole", "100000")):
            results[f"small kineto trace, {label}"] = {**measure_kineto(small, {"REPORTGEN_STREAM_TRACE_MB": env}),
                                                       "file_mb": mb, "events_written": m}
            print(json.dumps(results[f"small kineto trace, {label}"]), flush=True)
    if "tfgz" in only:
        tf_root = args.dir / "tfgz"
        tf_file = (tf_root / "framework" / "tensorflow" / "detailed_profiling" / "2023111422" / "000000000001" /
                   "plugins" / "profile" / "2023_11_14_22_00_45" / "algo-1.trace.json.gz")
        if not (tf_root / ".complete").exists():
            t = time.perf_counter()
            n, text = write_tf_gz(tf_file, args.gz_mb)
            (tf_root / ".complete").write_text(f"{n} {text}")
            print(f"wrote {tf_file} ({tf_file.stat().st_size / 1e6:.0f} MB, {text / 1e6:.0f} MB of text, {n} events) in "
                  f"{time.perf_counter() - t:.0f} s", flush=True)
        n, text = map(int, (tf_root / ".complete").read_text().split())
        for label, env in (("streamed", None), ("loaded whole", "100000")):
            results[f"TF trace .gz ({text / 1e6:.0f} MB text), {label}"] = {
                **measure(tf_root, {"REPORTGEN_STREAM_TRACE_MB": env} if env else None),
                "file_mb": round(tf_file.stat().st_size / 1e6), "events_written": n}
            print(json.dumps(results[f"TF trace .gz ({text / 1e6:.0f} MB text), {label}"]), flush=True)
    if "kinetogz" in only:
        kgz = args.dir / "kinetogz" / "rank-0.pt.trace.json.gz"
        if not kgz.exists():
            n, text = write_kineto_gz(kgz, args.gz_mb)
            (kgz.parent / ".events").write_text(f"{n} {text}")
        n, text = map(int, (kgz.parent / ".events").read_text().split())
        for label, env in (("streamed", None), ("loaded whole", "100000")):
            name = f"Kineto trace .gz ({text / 1e6:.0f} MB text), {label}"
            results[name] = {**measure_kineto(kgz, {"REPORTGEN_STREAM_TRACE_MB": env} if env else None),
                             "file_mb": round(kgz.stat().st_size / 1e6), "events_written": n}
            print(json.dumps(results[name]), flush=True)
    print("\n| case | file | records / events written | used | wall s | CPU s | peak RSS MB | problems | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        size = f"{r['file_gb']} GB" if "file_gb" in r else f"{r['file_mb']} MB"
        used = r.get("events") if "trace" in name else r.get("values")
        written = r.get("events_written", r.get("records"))
        print(f"| {name} | {size} | {written} | {used} | {r['wall_s']:.0f} | {r['cpu_s']:.0f} | {r['peak_rss_mb']:.0f} | "
              f"{r.get('problems', 'rc=' + str(r['rc']))} | {r['load_1m_before']} |")
    if not args.keep:
        shutil.rmtree(args.dir, ignore_errors=True)


BAD_TAIL = (b'{"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtil\n'
            b'not json at all\n'
            b'{"Type": "cpu", "Name": "cpu1", "Dimension": "CPUUtilization", "Value": NaN, "NodeId": "algo-1", '
            b'"Timestamp": 1700000041.0}\n')


def _bad_tail_len(path: Path) -> int:
    with open(path, "rb") as fh:
        fh.seek(max(0, path.stat().st_size - len(BAD_TAIL)))
        return len(BAD_TAIL) if fh.read() == BAD_TAIL else 0


if __name__ == "__main__":
    main()
