#!/usr/bin/env python
"""Does ``--scheduler`` make a PyTorch trace job faster? One process against ``local:2`` and against a
``tcp://`` cluster of two worker processes, on copies of a real GPU rank, interleaved (issue #33).

    python benchmarks/bench_dask_ranks.py [--copies 24,96] [--distinct] [--rounds 3]
        [--modes single,local:2,tcp,halves] [--base CHECKOUT] [--json FILE]

The sets are built under ``benchmarks/data/`` (git-ignored) from ``../shared/fixtures/raw/hta-resnet-v100-1gpu``
(found as the tests find it: ``$REPORTGEN_FIXTURES`` elsewhere; one real rank: 68,692 events, 1.15 MB gzip'd,
15.4 MB of JSON):

* ``hta-copies-N``: N byte-identical copies named ``rank-<i>.<...>.pt.trace.json.gz`` (the issue's set). Every
  copy says ``distributedInfo.rank`` 0, so the job is **one rank of N cycles**: N files to read, one merge;
* ``hta-ranks-N`` (``--distinct``): the same copies with ``distributedInfo.rank`` set to ``i`` (``world_size``
  N): N ranks of one file each.

Each run is a whole fresh ``python -m reportgen analyze SET -o OUT`` process (interpreter, imports and, for
``local:2``, the cluster's start all count). Rounds are interleaved (each round runs every mode once, the
order rotating), since the machine may be shared. Per run:

* **wall**; **CPU** (user + system) of the client process alone (its last ``psutil`` sample) and of the
  workers (``local:2``: every descendant, from ``RUSAGE_CHILDREN`` less the client: this process is the
  children's subreaper, so the fork server and whatever it forked are reparented here and reaped when the
  client ends; ``tcp``: the worker processes' CPU counters before and after the run);
* **client peak** (``VmHWM``, the kernel's high-water mark) and each worker's peak;
* the workers' CPU split by thread (``psutil``'s per-thread times, each thread's last sample, kept after the
  thread ends): the thread that ran the
  tasks (a worker's busiest) and the rest (Dask's event loop: heartbeats, memory monitor, transfers);
* the samples are taken every 0.25 s (``SAMPLE_SECONDS``): every 50 ms, walking the process tree and each
  worker's threads cost this process 0.57 CPU s over a 10 s ``local:2`` run, taken from the two cores the
  workers use, while ``single`` leaves a core idle for it (a bias of ~3 % of the wall against ``local:2``);
* the 1-minute load average before the run (``uptime``), the machine's number of cores.

``halves`` is the control without Dask: two one-process runs at once, each on half of the set's files (symlinked
into two temporary folders), wall until both end, CPU of both. It is what two processes cost on this machine
with nothing shared (where two busy cores cost more CPU per unit of work than one, that share is the
machine's, not Dask's); its outputs describe half a job each, so they are not compared.

The reportgen trees measured are byte-compiled first, as ``pip install`` leaves a package: where
``PYTHONDONTWRITEBYTECODE`` is set (this machine), a source checkout would otherwise compile every module it
imports in every process, and ``local:2`` has three of them (the client and two workers).

The ``tcp`` mode starts ``dask scheduler`` and ``dask worker --nworkers 2 --nthreads 1`` on 127.0.0.1 once
(not timed: an existing cluster), with the Dask settings ``local:N`` gives its workers
(``reportgen.cluster.client.LOCAL_CLUSTER_CONFIG`` written to a ``DASK_CONFIG`` YAML file, as
docs/distributed.md advises for a remote cluster), and runs ``--scheduler tcp://127.0.0.1:PORT``. ``--base CHECKOUT``
also runs another checkout's reportgen (``base-single``, ``base-local:2``: e.g. ``git worktree add
/tmp/base main``). At the end: the medians, the ratio of each mode's median wall to ``single``'s, and
whether ``kineto.json``, ``StepOutlier.json`` and ``data-quality.json`` are byte-equal across modes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reportgen.cluster.client import LOCAL_CLUSTER_CONFIG  # noqa: E402
from tests.support.paths import RAW  # noqa: E402  (the fixtures where the tests find them: REPORTGEN_FIXTURES)

FIXTURE = RAW / "hta-resnet-v100-1gpu"
DATA = ROOT / "benchmarks" / "data"
OUTPUTS = ("kineto.json", "StepOutlier.json", "data-quality.json")
SAMPLE_SECONDS = 0.25  # the module docstring: a sampler that competes with the workers for the cores is a bias
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants (Linux): orphans (a fork server, the workers it
    forked, a resource tracker) are reparented here, so their CPU reaches ``RUSAGE_CHILDREN`` once reaped."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans(keep: set[int], deadline_s: float = 15.0) -> None:
    """Wait for every child of this process but ``keep`` (the tcp cluster) to end, and reap it: after a run,
    those are the client's orphaned descendants (a fork server ends when its client does)."""
    stop = time.monotonic() + deadline_s
    while time.monotonic() < stop:
        left = [c.pid for c in psutil.Process().children() if c.pid not in keep]
        if not left:
            return
        for pid in left:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.02)


def _source() -> Path:
    found = sorted(FIXTURE.glob("*.pt.trace.json.gz"))
    if not found:
        raise SystemExit(f"no trace in {FIXTURE} (the shared fixtures)")
    return found[0]


def build_set(copies: int, distinct: bool) -> Path:
    """The set's folder under benchmarks/data/, made once (see the module docstring)."""
    src = _source()
    folder = DATA / f"hta-{'ranks' if distinct else 'copies'}-{copies}"
    stem = src.name.split(".", 1)[1]  # Apr_03_18_51_38.1102.pt.trace.json.gz
    names = [folder / f"rank-{i}.{stem}" for i in range(copies)]
    if all(p.is_file() for p in names) and len(list(folder.iterdir())) == copies:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    raw = src.read_bytes()
    text = gzip.decompress(raw) if distinct else b""
    pattern = rb'"distributedInfo": \{"backend": "nccl", "rank": 0, "world_size": 1,'
    info = re.search(pattern, text[:65536]) if distinct else None
    if distinct and info is None:
        raise SystemExit("the fixture's distributedInfo is not where this benchmark expects it")
    for i, path in enumerate(names):
        if not distinct:
            path.write_bytes(raw)
            continue
        header = info.group(0).replace(b'"rank": 0, "world_size": 1', b'"rank": %d, "world_size": %d' % (i, copies))
        path.write_bytes(gzip.compress(text[:info.start()] + header + text[info.end():], 6, mtime=0))
    return folder


def _hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _cpu(proc: psutil.Process) -> float | None:
    try:
        t = proc.cpu_times()
        return t.user + t.system
    except psutil.Error:
        return None


def _nested(dotted: dict) -> dict:
    """``{"a.b": 1}`` -> ``{"a": {"b": 1}}`` (a Dask config file's shape)."""
    out: dict = {}
    for key, value in dotted.items():
        *parents, last = key.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return out


class TcpCluster:
    """``dask scheduler`` and ``dask worker --nworkers 2 --nthreads 1`` on 127.0.0.1, for the whole benchmark."""

    def __init__(self, workers: int = 2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{port}"
        bin_dir = Path(sys.executable).parent
        dask = str(bin_dir / "dask") if (bin_dir / "dask").exists() else "dask"
        self.log = tempfile.TemporaryFile()
        self.config = tempfile.TemporaryDirectory(prefix="bench-dask-config-")
        env = {**os.environ, "DASK_CONFIG": self.config.name}
        Path(self.config.name, "reportgen.yaml").write_text(json.dumps(_nested(LOCAL_CLUSTER_CONFIG)))  # JSON is YAML
        self.procs = [psutil.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                    "--dashboard-address", ":0", "--no-show"], stdout=self.log,
                                   stderr=subprocess.STDOUT, env=env)]
        time.sleep(1.0)
        self.procs.append(psutil.Popen([dask, "worker", self.address, "--nworkers", str(workers), "--nthreads", "1",
                                        "--host", "127.0.0.1", "--no-dashboard"], stdout=self.log,
                                       stderr=subprocess.STDOUT, env=env))
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)

    def workers(self) -> list[psutil.Process]:
        try:
            return [p for p in self.procs[1].children(recursive=True)] + [self.procs[1]]
        except psutil.Error:
            return []

    def cpu(self) -> float:
        return sum(c for p in self.workers() if (c := _cpu(p)) is not None)

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(20)
            except psutil.TimeoutExpired:
                proc.kill()
        self.config.cleanup()


def _thread_times(proc: psutil.Process, seen: dict) -> None:
    """Each thread's CPU into ``seen`` (thread id -> CPU s): a thread that has ended keeps its last value
    (a worker's task thread ends before the process when the cluster closes)."""
    try:
        for t in proc.threads():
            seen[t.id] = t.user_time + t.system_time
    except psutil.Error:
        pass


def _split_threads(threads: dict) -> tuple[float, float]:
    """(CPU of each worker's busiest thread, summed; CPU of their other threads) from :func:`_sample`'s
    ``threads``; processes of one thread (the fork server, the resource tracker) are left out."""
    busy = rest = 0.0
    for seen in threads.values():
        if len(seen) > 1:
            times = sorted(seen.values())
            busy += times[-1]
            rest += sum(times[:-1])
    return busy, rest


def _sample(proc: psutil.Popen, tcp: TcpCluster | None, worker_peaks: dict, client: list, worker_cpu: dict,
            threads: dict | None = None) -> None:
    """Until ``proc`` exits, every ``SAMPLE_SECONDS``: its CPU and peak (``client``: [cpu, peak]), its workers' peaks,
    each descendant's own CPU (``worker_cpu``: the last value seen per pid) and, in ``threads``, each
    descendant's threads' CPU (pid -> thread id -> the last value seen)."""
    while proc.poll() is None:
        client[0] = _cpu(proc) or client[0]
        client[1] = max(client[1], _hwm_mb(proc.pid) or 0.0)
        try:
            children = tcp.workers() if tcp is not None else proc.children(recursive=True)
        except psutil.Error:
            children = []
        for child in children:
            peak = _hwm_mb(child.pid)
            if peak is not None:
                worker_peaks[child.pid] = max(worker_peaks.get(child.pid, 0.0), peak)
            if tcp is None and (used := _cpu(child)) is not None:
                worker_cpu[child.pid] = used
            if tcp is None and threads is not None:
                _thread_times(child, threads.setdefault(child.pid, {}))
        time.sleep(SAMPLE_SECONDS)


def _halves(folder: Path, into: Path) -> list[Path]:
    """The set's files split in two folders of symlinks (the first half of the sorted names, the rest)."""
    files = sorted(folder.resolve().iterdir())
    halves = []
    for part, chunk in enumerate((files[: len(files) // 2], files[len(files) // 2:])):
        half = into / f"half-{part}"
        half.mkdir(parents=True)
        for path in chunk:
            (half / path.name).symlink_to(path)
        halves.append(half)
    return halves


def run_halves(folder: Path, out: Path) -> dict:
    """Two one-process runs at once, each on half the files (``halves`` in the module docstring)."""
    parts = _halves(folder, out / "in")
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    logs = [tempfile.TemporaryFile() for _ in parts]
    started = time.perf_counter()
    procs = [psutil.Popen([sys.executable, "-m", "reportgen", "analyze", str(part), "-o", str(out / part.name), "-q"],
                          cwd=ROOT, stdout=log, stderr=subprocess.STDOUT) for part, log in zip(parts, logs)]
    peaks = [0.0 for _ in procs]
    try:
        while any(p.poll() is None for p in procs):
            for i, p in enumerate(procs):
                peaks[i] = max(peaks[i], _hwm_mb(p.pid) or 0.0)
            time.sleep(SAMPLE_SECONDS)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rc = max(p.returncode for p in procs)
    tail = b"".join(log.seek(0) or log.read()[-700:] for log in logs).decode(errors="replace")
    return {"mode": "halves", "rc": rc, "wall_s": round(wall, 2), "cpu_s": round(total, 2), "client_cpu_s": round(total, 2),
            "workers_cpu_s": 0.0, "client_peak_mb": round(max(peaks)), "worker_peaks_mb": [],
            "load1_before": round(load, 2), **({"tail": tail} if rc else {})}


def run_once(folder: Path, mode: str, out: Path, base: Path | None, tcp: TcpCluster | None) -> dict:
    """One whole ``reportgen analyze`` process (see the module docstring for what is measured)."""
    if mode == "halves":
        return run_halves(folder, out)
    code_mode = mode.removeprefix("base-")
    cwd, env = ROOT, dict(os.environ)
    if mode.startswith("base-"):
        cwd = base
        env["PYTHONPATH"] = str(base)
    argv = [sys.executable, "-m", "reportgen", "analyze", str(folder.resolve()), "-o", str(out), "-q"]
    if code_mode == "tcp":
        argv += ["--scheduler", tcp.address]
    elif code_mode != "single":
        argv += ["--scheduler", code_mode]
    load = os.getloadavg()[0]
    tcp_before = tcp.cpu() if tcp is not None and code_mode == "tcp" else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = tempfile.TemporaryFile()
    started = time.perf_counter()
    proc = psutil.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    client, worker_peaks, worker_cpu, threads = [0.0, 0.0], {}, {}, {}
    try:
        _sample(proc, tcp if code_mode == "tcp" else None, worker_peaks, client, worker_cpu, threads)
    finally:
        if proc.poll() is None:  # the benchmark was stopped: so is the run
            proc.terminate()
    client_cpu, client_peak = client
    wall = time.perf_counter() - started
    reap_orphans({p.pid for p in tcp.procs} if tcp is not None else set())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if tcp_before is not None:
        workers_cpu = tcp.cpu() - tcp_before
        total += workers_cpu
    else:
        # reaped by the client (spawned workers) or by the fork server, which is reaped here once it ends
        # (become_subreaper): in RUSAGE_CHILDREN; without a subreaper, each descendant's last sample
        workers_cpu = max(total - client_cpu, sum(worker_cpu.values()), 0.0)
        total = client_cpu + workers_cpu
    log.seek(0)
    tail = log.read()[-1500:].decode(errors="replace")
    # the worker processes are the big ones (a resource tracker or the nanny stays small)
    peaks = sorted((round(p) for p in worker_peaks.values() if p > 100), reverse=True)
    return {"mode": mode, "rc": proc.returncode, "wall_s": round(wall, 2), "cpu_s": round(total, 2),
            "client_cpu_s": round(client_cpu, 2), "workers_cpu_s": round(workers_cpu, 2),
            # the workers' busiest threads (the tasks) and their other threads; 0 when no worker
            "task_threads_cpu_s": round(_split_threads(threads)[0], 2),
            "other_threads_cpu_s": round(_split_threads(threads)[1], 2),
            "client_peak_mb": round(client_peak), "worker_peaks_mb": peaks, "load1_before": round(load, 2),
            **({"tail": tail} if proc.returncode else {})}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", default="24,96", help="set sizes, comma-separated (files per set)")
    ap.add_argument("--distinct", action="store_true", help="N ranks of one file (default: one rank of N cycles)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="single,local:2,tcp", help="single, local:N, tcp, base-single, base-local:N")
    ap.add_argument("--base", type=Path, default=None, help="another checkout, for the base-* modes")
    ap.add_argument("--json", type=Path, default=None, help="append every row as one JSON line here")
    args = ap.parse_args(argv)
    os.environ.setdefault("REPORTGEN_NO_CACHE", "1")  # every run reads its traces: no round warm from the trace cache
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if any(m.startswith("base-") for m in modes) and args.base is None:
        ap.error("base-* modes need --base CHECKOUT")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed benchmark still stops its tcp cluster
    subreaper = become_subreaper()
    for tree in [ROOT] + ([args.base] if args.base else []):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "reportgen")], check=True)
    print(f"# {os.cpu_count()} cores; subreaper: {subreaper}; "
          f"{subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}", flush=True)
    tcp = TcpCluster() if "tcp" in modes else None
    ok = True
    try:
        for copies in [int(c) for c in args.copies.split(",") if c.strip()]:
            folder = build_set(copies, args.distinct)
            rows: list[dict] = []
            outputs: dict[str, dict[str, bytes]] = {}
            for round_ in range(args.rounds):
                order = modes[round_ % len(modes):] + modes[: round_ % len(modes)]
                for mode in order:
                    out = Path(tempfile.mkdtemp(prefix="bench-ranks-"))
                    try:
                        row = {"set": folder.name, "round": round_, **run_once(folder, mode, out, args.base, tcp)}
                        if mode != "halves" and (round_ == 0 or mode not in outputs):
                            outputs[mode] = {n: (out / n).read_bytes() for n in OUTPUTS if (out / n).is_file()}
                    finally:
                        shutil.rmtree(out, ignore_errors=True)
                    ok &= row["rc"] == 0
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    if args.json:
                        with open(args.json, "a") as handle:
                            handle.write(json.dumps(row) + "\n")
            print(f"\n{folder.name}: median of {args.rounds} interleaved rounds")
            print("| mode | wall s | ratio to single | CPU s | CPU s (client + workers) | CPU ratio | workers: task "
                  "threads + other threads | client peak MB | worker peaks MB |")
            print("|---|---|---|---|---|---|---|---|---|")
            cpu = {m: statistics.median(r["cpu_s"] for r in rows if r["mode"] == m) for m in modes}
            med = {m: statistics.median(r["wall_s"] for r in rows if r["mode"] == m) for m in modes}
            for mode in modes:
                mine = [r for r in rows if r["mode"] == mode]
                client = statistics.median(r["client_cpu_s"] for r in mine)
                workers = statistics.median(r["workers_cpu_s"] for r in mine)
                ratio = f"{med[mode] / med['single']:.2f}" if "single" in med else "-"
                cpu_ratio = f"{cpu[mode] / cpu['single']:.2f}" if "single" in cpu else "-"
                tasks = statistics.median(r.get("task_threads_cpu_s", 0.0) for r in mine)
                other = statistics.median(r.get("other_threads_cpu_s", 0.0) for r in mine)
                print(f"| {mode} | {med[mode]:.2f} | {ratio} | {cpu[mode]:.1f} | {client:.1f} + {workers:.1f} | {cpu_ratio} | "
                      f"{tasks:.1f} + {other:.1f} | "
                      f"{statistics.median(r['client_peak_mb'] for r in mine):.0f} | "
                      f"{max((r['worker_peaks_mb'] for r in mine), key=len, default=[])} |")
            first = next(iter(outputs.values()), {})
            for mode, got in outputs.items():
                same = got == first and len(got) == len(OUTPUTS)
                ok &= same
                print(f"{mode}: {', '.join(OUTPUTS)} byte-equal to {next(iter(outputs))}'s: {same}")
            print(flush=True)
    finally:
        if tcp is not None:
            tcp.close()
    print(f"# {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
