"""Time the analysis engine (and smdebug's system-metrics reader) on generated raw profiler folders.

Usage:
    python benchmarks/bench_engine.py [--sizes small,medium] [--data-dir DIR] [--repeat N]
                                      [--smdebug | --no-smdebug] [--smdebug-venv DIR] [RAW_DIR ...]

* For each size the data is generated once with ``benchmarks/generate_data.py`` (seed 0) under
  ``--data-dir`` (default ``/tmp/reportgen-bench/<size>``) and reused on later runs (a
  ``.complete`` marker is written after a successful generation). ``large`` needs ~12.5 GB on disk.
  Extra RAW_DIR arguments are measured as they are.
* Each run is a fresh child process (``python -c 'analyze(...)'``), so the figures are
  whole-process: interpreter start, imports, ingest, all 11 rules, the JSON writing. Wall time is
  measured by the parent; peak RSS is the child's ``ru_maxrss`` and CPU time its user + system time
  (``resource.getrusage(RUSAGE_CHILDREN)`` in a short-lived intermediate process per run, since
  RUSAGE_CHILDREN only ever grows). We report the median of N runs and the 1-minute load average
  before the runs: the machine may be shared, and CPU time is the steadier figure there.
* ``--smdebug`` (default for the medium size) creates a throwaway virtualenv (default
  ``/tmp/smdebug-venv``; NOT a project dependency) with ``smdebug==1.0.34`` plus the modules it
  imports without declaring them (requests, pandas, psutil), and times its
  ``LocalSystemMetricsReader(root).get_events(0, end)`` on the same medium data: the whole-process
  time to read every system record into smdebug's event objects (what the original rule container
  does before any rule runs). Ours is printed next to it with the ratio. If the venv cannot be
  built, the reason is printed instead.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SMDEBUG_VERSION = "1.0.34"
# smdebug 1.0.34 imports these without declaring them as install requirements.
SMDEBUG_EXTRA = ("requests", "pandas", "psutil")

# Runs the command in argv[1:] and reports its wall time, peak RSS and CPU time as JSON.
_RUSAGE_CHILD = r"""
import json, os, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "wall_s": wall, "peak_rss_mb": ru.ru_maxrss / 1024,
                  "cpu_s": ru.ru_utime + ru.ru_stime, "stdout": p.stdout[-2000:], "stderr": p.stderr[-2000:]}))
"""

_ANALYZE = ("import sys; from pathlib import Path; from reportgen.engine import analyze; "
            "analyze(Path(sys.argv[1]), Path(sys.argv[2]))")

_SMDEBUG = r"""
import logging, sys
logging.disable(logging.CRITICAL)
from smdebug.profiler.system_metrics_reader import LocalSystemMetricsReader
reader = LocalSystemMetricsReader(sys.argv[1])
end = reader.get_timestamp_of_latest_available_file()
events = reader.get_events(0, end + 3600 * 10**6)
print(len(events))
"""


def run_measured(cmd: list[str], env: dict | None = None) -> dict:
    r = subprocess.run([sys.executable, "-c", _RUSAGE_CHILD, *cmd], capture_output=True, text=True,
                       env=env, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def measure_engine(raw: Path) -> dict:
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        return run_measured([sys.executable, "-c", _ANALYZE, str(raw), out], env)


def prewarm(raw: Path) -> tuple[float, float]:
    """Read every file under ``raw`` once (into the OS page cache): ``(seconds, GB)``. On this VM the
    cache does not keep a 12 GB profile between runs, so without this the large figures mix disk
    reads into the engine's time."""
    t = time.perf_counter()
    total = 0
    for p in raw.rglob("*"):
        if p.is_file():
            with open(p, "rb") as fh:
                while chunk := fh.read(16 << 20):
                    total += len(chunk)
    return time.perf_counter() - t, total / 1e9


def size_mb(raw: Path, sub: str) -> float:
    d = raw / sub
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) / 1e6 if d.is_dir() else 0.0


def ensure_data(size: str, data_dir: Path) -> Path:
    out = data_dir / size
    if (out / ".complete").exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"generating {size} data under {out} ...", flush=True)
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "generate_data.py"), "--size", size, "--out", str(out)],
                   check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    (out / ".complete").write_text("ok\n")
    return out


def smdebug_python(venv: Path) -> tuple[Path | None, str]:
    """Python of a venv with smdebug installed (created when missing), or (None, why not)."""
    py = venv / "bin" / "python"
    probe = [str(py), "-c", "import logging; logging.disable(50); "
             "from smdebug.profiler.system_metrics_reader import LocalSystemMetricsReader"]
    if py.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return py, ""
    print(f"creating {venv} with smdebug=={SMDEBUG_VERSION} (throwaway, not a project dependency) ...", flush=True)
    r = subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], capture_output=True, text=True)
    if r.returncode:
        return None, f"python -m venv failed: {r.stderr.strip()[-500:]}"
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", f"smdebug=={SMDEBUG_VERSION}", *SMDEBUG_EXTRA],
                       capture_output=True, text=True)
    if r.returncode:
        err = "\n".join(x for x in r.stderr.splitlines() if not x.startswith("WARNING"))
        return None, f"pip install smdebug=={SMDEBUG_VERSION} failed on Python {sys.version.split()[0]}: {err[-800:]}"
    r = subprocess.run(probe, capture_output=True, text=True)
    if r.returncode:
        return None, f"smdebug=={SMDEBUG_VERSION} installed but does not import: {r.stderr.strip()[-800:]}"
    return py, ""


def summarize(runs: list[dict]) -> dict:
    return {
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "min_wall_s": min(r["wall_s"] for r in runs),
        "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "runs": len(runs),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", nargs="*", type=Path, help="extra raw profiler folders to measure as they are")
    ap.add_argument("--sizes", default="small,medium", help="comma-separated generator sizes (small,medium,large); '' for none")
    ap.add_argument("--data-dir", type=Path, default=Path("/tmp/reportgen-bench"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smdebug", dest="smdebug", action="store_true", default=None,
                    help="also time smdebug's reader on the medium data (default when medium is measured)")
    ap.add_argument("--no-smdebug", dest="smdebug", action="store_false")
    ap.add_argument("--smdebug-venv", type=Path, default=Path("/tmp/smdebug-venv"))
    ap.add_argument("--smdebug-repeat", type=int, default=1, help="smdebug runs (each takes ~30-60 s on medium)")
    ap.add_argument("--json", type=Path, help="also write the results to this JSON file")
    ap.add_argument("--prewarm", action="store_true",
                    help="read every input file once before each run (page cache warm; the read is timed apart)")
    args = ap.parse_args(argv)

    sizes = [s for s in args.sizes.split(",") if s]
    datasets = [(s, ensure_data(s, args.data_dir)) for s in sizes] + [(p.name, p) for p in args.raw]
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min) at start, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    results: dict = {"engine": {}, "smdebug": None}
    hdr = f"{'dataset':<12}{'system MB':>10}{'framework MB':>13}{'median wall s':>14}{'min wall s':>11}{'median CPU s':>13}{'peak RSS MB':>12}"
    print(hdr)
    for name, raw in datasets:
        runs = []
        for _ in range(args.repeat):
            if args.prewarm:
                secs, gb = prewarm(raw)
                print(f"{name:<12} prewarm: read {gb:.2f} GB in {secs:.1f} s", flush=True)
            r = measure_engine(raw)
            if r["rc"]:
                print(f"{name:<12} FAILED (exit {r['rc']}): {r['stderr'][-500:]}")
                break
            runs.append(r)
        if len(runs) < args.repeat:
            continue
        s = summarize(runs)
        s.update(system_mb=size_mb(raw, "system"), framework_mb=size_mb(raw, "framework"), path=str(raw))
        results["engine"][name] = s
        print(f"{name:<12}{s['system_mb']:>10.0f}{s['framework_mb']:>13.1f}{s['median_wall_s']:>14.2f}"
              f"{s['min_wall_s']:>11.2f}{s['median_cpu_s']:>13.2f}{s['peak_rss_mb']:>12.0f}", flush=True)

    want_smdebug = args.smdebug if args.smdebug is not None else "medium" in results["engine"]
    if want_smdebug:
        medium = results["engine"].get("medium")
        raw = Path(medium["path"]) if medium else ensure_data("medium", args.data_dir)
        py, why = smdebug_python(args.smdebug_venv)
        print()
        if py is None:
            print(f"smdebug comparison NOT run: {why}")
            results["smdebug"] = {"error": why}
        else:
            runs = [run_measured([str(py), "-c", _SMDEBUG, str(raw)]) for _ in range(args.smdebug_repeat)]
            bad = [r for r in runs if r["rc"]]
            if bad:
                why = f"smdebug's reader failed (exit {bad[0]['rc']}): {bad[0]['stderr'][-800:]}"
                print(f"smdebug comparison NOT run: {why}")
                results["smdebug"] = {"error": why}
            else:
                s = summarize(runs)
                s["records"] = int(runs[0]["stdout"].split()[-1])
                results["smdebug"] = s
                print(f"medium system metrics, whole process ({s['records']:,} records):")
                print(f"{'':<34}{'median wall s':>14}{'median CPU s':>13}{'peak RSS MB':>12}")
                print(f"{'smdebug 1.0.34 reader only':<34}{s['median_wall_s']:>14.2f}{s['median_cpu_s']:>13.2f}{s['peak_rss_mb']:>12.0f}")
                if medium:
                    print(f"{'reportgen: ingest + 11 rules':<34}{medium['median_wall_s']:>14.2f}"
                          f"{medium['median_cpu_s']:>13.2f}{medium['peak_rss_mb']:>12.0f}")
                    print(f"ratio smdebug / reportgen: wall {s['median_wall_s'] / medium['median_wall_s']:.1f}x, "
                          f"CPU {s['median_cpu_s'] / medium['median_cpu_s']:.1f}x, "
                          f"peak RSS {s['peak_rss_mb'] / medium['peak_rss_mb']:.1f}x")
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
