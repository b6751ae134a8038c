#!/usr/bin/env python
"""PyTorch profiler (Kineto) trace sets at scale: wall time and peak memory of the client and of each Dask
worker, single process against ``--scheduler local:N``, and Holistic Trace Analysis side by side.

    python benchmarks/bench_kineto_scale.py DIR [DIR ...] [--modes single,local:2] [--repeat 1]
        [--command analyze|generate] [--pythonpath CHECKOUT] [--hta-python /tmp/hta/bin/python] [--json FILE]
        [--keep DIR]

Make the sets with ``benchmarks/generate_kineto.py`` (HTA wants one file per rank: ``--cycles 1``).

Each run is a whole fresh process, ``python -m reportgen analyze DIR -o OUT`` (the engine only; ``--command
generate`` renders the report too), so the interpreter and every import count. Measured from outside:

* **wall**: from start to exit;
* **client peak**: the reportgen process's own high-water mark (``VmHWM`` in ``/proc/PID/status``, read
  every 50 ms, so a peak is never missed between samples: the kernel keeps it);
* **worker peak**: the same for every descendant process (Dask's worker processes with ``local:N``; the
  notebook kernel with ``generate``), largest first, by role (from the command line);
* **tree peak**: the largest sum of the resident sizes of the process and its descendants at one sample;
* **CPU**: user + system of the process and its waited-for descendants (``RUSAGE_CHILDREN``);
* **load**: the 1-minute load average before and after (the machine is shared: wall times move with it).

Each row says what the run found (ranks, steps, the straggler and why, data problems; ``--keep`` keeps the
rule outputs). The ``kineto.json`` of every mode is compared with the first mode's: byte-equal, or equal as JSON, or the
first differing key. ``--hta-python``: also run HTA (``TraceAnalysis(trace_dir)``, its temporal breakdown
and kernel breakdown) with that interpreter (a throwaway venv: ``pip install HolisticTraceAnalysis``; it is
not a reportgen dependency), measured the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]

HTA_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
loaded = time.perf_counter() - t0
temporal = analyzer.get_temporal_breakdown(visualize=False)
kernels = analyzer.get_gpu_kernel_breakdown(visualize=False)
print(json.dumps({"ranks": len(analyzer.t.traces), "load_s": round(loaded, 2),
                  "total_s": round(time.perf_counter() - t0, 2),
                  "idle_pct_rank0": float(temporal.iloc[0]["idle_time_pctg"])}))
"""


def _hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _role(proc: psutil.Process) -> str:
    try:
        cmd = " ".join(proc.cmdline())
    except psutil.Error:
        return "?"
    if "ipykernel" in cmd:
        return "notebook kernel"
    if "resource_tracker" in cmd or "semaphore_tracker" in cmd:
        return "resource tracker"
    if "spawn_main" in cmd or "forkserver" in cmd or "distributed" in cmd:
        return "worker"
    return "child"


def measure(argv: list[str], env: dict | None = None, interval: float = 0.05, cwd: Path = ROOT) -> dict:
    """One whole process: wall, client / descendants' peaks, tree peak, CPU, exit code, output tail."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    log = tempfile.TemporaryFile()
    proc = psutil.Popen(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env)
    client_peak, tree_peak = 0.0, 0.0
    others: dict[int, dict] = {}
    while proc.poll() is None:
        hwm = _hwm_mb(proc.pid)
        if hwm is not None:
            client_peak = max(client_peak, hwm)
        try:
            children = proc.children(recursive=True)
        except psutil.Error:
            children = []
        total = 0.0
        for child in children:
            entry = others.setdefault(child.pid, {"role": _role(child), "peak_mb": 0.0})
            peak = _hwm_mb(child.pid)
            if peak is not None:
                entry["peak_mb"] = max(entry["peak_mb"], peak)
            try:
                total += child.memory_info().rss / 2**20
            except psutil.Error:
                pass
        try:
            total += proc.memory_info().rss / 2**20
        except psutil.Error:
            pass
        tree_peak = max(tree_peak, total)
        time.sleep(interval)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    log.seek(0)
    tail = log.read()[-2000:].decode(errors="replace")
    by_role: dict[str, list[float]] = {}
    for entry in others.values():
        by_role.setdefault(entry["role"], []).append(round(entry["peak_mb"], 1))
    return {"rc": proc.returncode, "wall_s": round(wall, 2),
            "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
            "client_peak_mb": round(client_peak, 1), "tree_peak_mb": round(tree_peak, 1),
            "descendants_peak_mb": {role: sorted(v, reverse=True) for role, v in by_role.items()},
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
            "tail": tail if proc.returncode else tail[-300:]}


def set_size(folder: Path) -> dict:
    files = [p for p in folder.iterdir() if p.is_file()]
    return {"files": len(files), "gb": round(sum(p.stat().st_size for p in files) / 1e9, 3)}


def first_difference(a, b, where: str = "") -> str | None:
    if type(a) is not type(b):
        return f"{where or '/'}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                return f"{where}/{key}: only in one"
            found = first_difference(a[key], b[key], f"{where}/{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def reportgen_argv(command: str, folder: Path, out: Path, mode: str) -> list[str]:
    target = [str(out / "report.html")] if command == "generate" else [str(out / "rules")]
    argv = [sys.executable, "-m", "reportgen", command, str(folder), "-o", *target, "-q"]
    if command == "generate":
        argv += ["--rule-outputs", str(out / "rules")]
    if mode != "single":
        argv += ["--scheduler", mode]
    return argv


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="*", type=Path)
    ap.add_argument("--modes", default="single,local:2", help="comma-separated: single, local:N, tcp://...")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--command", choices=("analyze", "generate"), default="analyze")
    ap.add_argument("--pythonpath", type=Path, default=None,
                    help="run another checkout's reportgen (e.g. a git worktree of an older commit)")
    ap.add_argument("--hta-python", type=Path, default=None, help="a Python with HolisticTraceAnalysis installed")
    ap.add_argument("--hta-only", action="store_true", help="run only HTA on the sets")
    ap.add_argument("--json", type=Path, default=None, help="append every result as one JSON line here")
    ap.add_argument("--keep", type=Path, default=None, help="copy each run's rule outputs into a folder here")
    args = ap.parse_args(argv)
    os.environ.setdefault("REPORTGEN_NO_CACHE", "1")  # every run reads its traces: no round warm from the trace cache
    env = dict(os.environ)
    cwd = ROOT
    if args.pythonpath:  # run from there: `python -m` puts the current folder first on sys.path
        cwd = args.pythonpath.resolve()
        env["PYTHONPATH"] = str(cwd)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    results = []

    def emit(row: dict) -> None:
        results.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "tail" or row.get("rc")}), flush=True)
        if args.json:
            with open(args.json, "a") as handle:
                handle.write(json.dumps(row) + "\n")

    for folder in args.sets:
        size = set_size(folder)
        if not args.hta_only:
            outputs: dict[str, bytes] = {}
            for round_ in range(args.repeat):
                for mode in modes:
                    out = Path(tempfile.mkdtemp(prefix="kbench-"))
                    try:
                        row = measure(reportgen_argv(args.command, folder.resolve(), out, mode), env, cwd=cwd)
                        row["reportgen"] = _reportgen_commit(cwd, env)
                        kineto = out / "rules" / "kineto.json"
                        if kineto.is_file():
                            row["found"] = _found(out / "rules")
                            if round_ == 0:
                                outputs[mode] = kineto.read_bytes()
                            if args.keep:
                                keep = args.keep / f"{folder.name}-{mode.replace(':', '')}-{round_}"
                                shutil.rmtree(keep, ignore_errors=True)
                                shutil.copytree(out / "rules", keep)
                    finally:
                        shutil.rmtree(out, ignore_errors=True)
                    emit({"set": str(folder), **size, "command": args.command, "mode": mode, "round": round_,
                          "uptime": _uptime(), **row})
            if len(outputs) > 1:
                base_mode, base = next(iter(outputs.items()))
                for mode, data in outputs.items():
                    if mode == base_mode:
                        continue
                    same_bytes = data == base
                    diff = None if same_bytes else first_difference(json.loads(base), json.loads(data))
                    emit({"set": str(folder), "compare": f"{base_mode} vs {mode}", "kineto_json_byte_equal": same_bytes,
                          "json_equal": same_bytes or diff is None, "first_difference": diff})
        if args.hta_python:
            row = measure([str(args.hta_python), "-c", HTA_SCRIPT, str(folder)],
                          {**os.environ, "HTA_DISABLE_NS_ROUNDING": "1"})
            hta = {}
            for line in reversed(row["tail"].splitlines()):
                if line.startswith("{"):
                    hta = json.loads(line)
                    break
            emit({"set": str(folder), **size, "command": "HTA 0.5.0 TraceAnalysis + temporal/kernel breakdown",
                  "mode": "hta", "uptime": _uptime(), **row, "hta": hta})
    return 0 if all(r.get("rc", 0) == 0 for r in results) else 1


def _reportgen_commit(cwd: Path, env: dict) -> str:
    """Which checkout the measured process imported, and its commit (a wrong sys.path is easy to miss)."""
    try:
        where = subprocess.run([sys.executable, "-c", "import reportgen, os; print(os.path.dirname(reportgen.__file__))"],
                               cwd=cwd, env=env, capture_output=True, text=True, timeout=60).stdout.strip()
        commit = subprocess.run(["git", "-C", where, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip()
        return f"{where} @ {commit}"
    except (OSError, subprocess.SubprocessError):
        return "?"


def _found(rules: Path) -> dict:
    """What the run found: ranks, the straggler and why, the number of data problems."""
    doc = json.loads((rules / "kineto.json").read_text())
    quality = json.loads((rules / "data-quality.json").read_text()) if (rules / "data-quality.json").is_file() else {}
    straggler = doc.get("straggler") or {}
    steps = sum(len(r.get("steps") or []) for r in doc.get("ranks", {}).values())
    return {"ranks": len(doc.get("ranks", {})), "steps": steps, "straggler": straggler.get("rank"),
            "reason": straggler.get("reason"), "data_problems": quality.get("total")}


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


if __name__ == "__main__":
    raise SystemExit(main())
