"""Single-machine vs Dask system ingest (``generate --scheduler``), and the ``--incremental`` cache.

Usage:
    PYTHONPATH=. python benchmarks/bench_dask.py [--workers 2] [--repeat 1] [--modes single,dask,incremental]
                                                 [--json OUT.json] RAW_DIR [RAW_DIR ...]

For each raw folder and mode, one fresh child process runs the engine exactly as ``analyze`` does
(system ingest, framework traces, 11 rules, timeline, JSON files) and reports:

* ``setup_s``: starting the local Dask cluster ``--scheduler local:N`` starts (``--workers`` processes, 1
  thread each, reportgen's settings for them: ``cluster.client.dask_client``);
* ``ingest_s``: the system-metrics ingest (``read_system_metrics``), the step Dask distributes;
* ``rest_s``: framework traces + rules + timeline + writing, always on the client;
* CPU seconds (user + system) of the ingest alone, in the client and summed over the workers (each
  worker's own ``RUSAGE_SELF`` before and after, so worker start-up is not counted); the whole run's
  CPU of the client process and of the workers (every descendant's own CPU, read just before the
  cluster is closed: start-up and the overhead probe included; forked workers are reaped by the fork
  server, so ``RUSAGE_CHILDREN`` no longer sees them), and peak RSS of the client and of the largest worker.

Modes: ``single`` (no Dask), ``dask`` (``--scheduler local:N``), ``incremental`` (two runs with
``--incremental`` into a fresh cache: the second one's ingest is what a report of an unchanged
live job costs). The rule JSONs, data-quality.json and timeline.json of every mode are compared
byte for byte with the single-machine ones and the verdict is printed.

It also measures the scheduler's overhead per task (1000 empty tasks through the same cluster)
and the size of what a worker ships back per node (the tick tables), for the projection in
benchmarks/README.md.
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

_CHILD = r"""
import json, logging, os, resource, sys, time
from pathlib import Path
mode, root, out, workers, cache = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), sys.argv[5]

def main():
    from reportgen.engine import write_json_atomic, run_rules
    from reportgen.readers.framework import read_framework
    from reportgen.engine.model import AnalysisData, time_axis
    from reportgen.problems import ProblemLog
    from reportgen.readers.ingest import read_system_metrics
    from reportgen.engine.timeline import build_timeline
    res = {"mode": mode}
    t = time.perf_counter()
    client = cluster = None
    if mode == "dask":  # the cluster `--scheduler local:N` starts (its settings, its fork server)
        from reportgen.cluster.client import dask_client
        from reportgen.cluster.scheduler import parse_scheduler
        cluster = dask_client(parse_scheduler(f"local:{workers}"))
        client = cluster.__enter__()
    res["setup_s"] = time.perf_counter() - t
    problems = ProblemLog()
    cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])  # noqa: E731  user + system
    workers_cpu = lambda: sum(client.run(cpu).values()) if client is not None else 0.0  # noqa: E731
    c0, w0 = cpu(), workers_cpu()
    t = time.perf_counter()
    cache_root = Path(cache) if mode == "incremental" else None
    system = read_system_metrics(root, problems, client=client, cache_root=cache_root)
    res["ingest_s"] = time.perf_counter() - t
    res["ingest_client_cpu_s"], res["ingest_workers_cpu_s"] = cpu() - c0, workers_cpu() - w0
    res["files"], res["files_read"] = system.files, system.files_read
    res["table_mb"] = sum(n.nbytes for n in system.nodes.values()) / 1e6
    res["values"] = sum(n.shape[0] * n.shape[1] for n in system.nodes.values())
    if client is not None:
        # per-task scheduler overhead: 1000 empty tasks, submitted and gathered together
        t = time.perf_counter()
        client.gather(client.map(lambda i: i, range(1000), pure=False))
        res["task_overhead_ms"] = (time.perf_counter() - t) / 1000 * 1e3
        ru = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        res["worker_peak_rss_mb"] = max(ru.values()) / 1024
    t = time.perf_counter()
    events = read_framework(root, problems)
    t0, n_windows = time_axis(system.nodes, events, system.first_file_key_us)
    data = AnalysisData(nodes=system.nodes, events=events, t0_us=t0, n_windows=n_windows)
    rules = run_rules(data)
    for name, doc in rules.items():
        write_json_atomic(out / "profiler-reports" / f"{name}.json", doc)
    write_json_atomic(out / "data-quality.json", problems.to_json())
    write_json_atomic(out / "timeline.json", build_timeline(data.nodes, data.events))
    res["rest_s"] = time.perf_counter() - t
    tree = 0.0
    if client is not None:
        # every descendant's own CPU before the close (forked workers are reaped by the fork server, not here)
        import psutil
        for proc in psutil.Process().children(recursive=True):
            try:
                tree += sum(proc.cpu_times()[:2])
            except psutil.Error:
                pass
        cluster.__exit__(None, None, None)
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    res["client_cpu_s"] = me.ru_utime + me.ru_stime
    res["client_peak_rss_mb"] = me.ru_maxrss / 1024
    res["workers_cpu_s"] = max(kids.ru_utime + kids.ru_stime, tree)
    if "worker_peak_rss_mb" not in res and mode == "dask":
        res["worker_peak_rss_mb"] = kids.ru_maxrss / 1024
    print("RESULT " + json.dumps(res))

if __name__ == "__main__":
    main()
"""


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def run_child(mode: str, root: Path, out: Path, workers: int, cache: Path) -> dict:
    script = Path(tempfile.gettempdir()) / "reportgen_bench_dask_child.py"
    script.write_text(_CHILD)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    load = _load()
    t = time.perf_counter()
    p = subprocess.run([sys.executable, str(script), mode, str(root), str(out), str(workers), str(cache)],
                       capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not line:
        raise SystemExit(f"{mode} on {root} failed (rc {p.returncode}):\n{p.stderr[-3000:]}")
    res = json.loads(line[-1][7:])
    res.update(wall_s=wall, load_before=load, load_after=_load())
    return res


def outputs(folder: Path) -> dict[str, bytes]:
    got = {f.name: f.read_bytes() for f in sorted((folder / "profiler-reports").glob("*.json"))}
    for name in ("data-quality.json", "timeline.json"):
        got[name] = (folder / name).read_bytes()
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--modes", default="single,dask,incremental")
    ap.add_argument("--json", type=Path, default=None, help="append every result as a JSON line here")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    rows = []
    for root in args.roots:
        with tempfile.TemporaryDirectory(prefix="bench-dask-") as tmp:
            tmp = Path(tmp)
            ref = None
            for mode in modes:
                runs = []
                for i in range(args.repeat):
                    out = tmp / f"{mode}-{i}"
                    cache = tmp / f"cache-{i}"
                    if mode == "incremental":
                        first = run_child(mode, root, out, args.workers, cache)
                        first["mode"] = "incremental (1st run)"
                        if ref is not None:
                            first["byte_equal"] = outputs(out) == ref
                        runs.append(first)
                        shutil.rmtree(out)
                    runs.append(run_child(mode, root, out, args.workers, cache))
                    if mode == "incremental":
                        runs[-1]["mode"] = "incremental (2nd run)"
                    same = None
                    if ref is None and mode == "single":
                        ref = outputs(out)
                    elif ref is not None:
                        got = outputs(out)
                        same = got == ref
                        runs[-1]["differs"] = sorted(k for k in ref if got.get(k) != ref[k])
                    runs[-1]["byte_equal"] = same
                    for r in runs[-2 if mode == "incremental" else -1:]:
                        r["root"] = str(root)
                        print(json.dumps(r), flush=True)
                        if args.json:
                            with args.json.open("a") as fh:
                                fh.write(json.dumps(r) + "\n")
                by_mode: dict[str, list[dict]] = {}
                for r in runs:
                    by_mode.setdefault(r["mode"], []).append(r)
                for label, rs in by_mode.items():
                    rows.append((root.name, label, rs))
    print()
    print("| data | mode | wall s | setup s | ingest s | ingest CPU s (client + workers) | rest s | client CPU s "
          "| workers CPU s | client peak MB | worker peak MB | files read | byte-equal | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, label, rs in rows:
        med = lambda k: statistics.median(r.get(k, 0.0) or 0.0 for r in rs)  # noqa: E731
        eq = {None: "(reference)", True: "yes", False: "NO"}[rs[-1].get("byte_equal")]
        tov = f" (task overhead {med('task_overhead_ms'):.2f} ms)" if any("task_overhead_ms" in r for r in rs) else ""
        wpk = f"{med('worker_peak_rss_mb'):.0f}" if any("worker_peak_rss_mb" in r for r in rs) else "-"
        print(f"| {name} | {label} | {med('wall_s'):.1f} | {med('setup_s'):.1f} | {med('ingest_s'):.1f} | "
              f"{med('ingest_client_cpu_s'):.1f} + {med('ingest_workers_cpu_s'):.1f} | "
              f"{med('rest_s'):.1f} | {med('client_cpu_s'):.1f} | {med('workers_cpu_s'):.1f} | "
              f"{med('client_peak_rss_mb'):.0f} | {wpk} | {rs[-1]['files_read']}/{rs[-1]['files']} | {eq} | "
              f"{rs[0]['load_before']:.1f}-{rs[-1]['load_after']:.1f} |{tov}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
