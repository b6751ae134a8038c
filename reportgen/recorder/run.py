"""``reportgen record``: run a command and record the host's (and GPUs') metrics while it runs.

The sampler runs in this process's main thread, waking every ``interval`` (it waits on the child,
so the child's exit is seen at once). SIGINT, SIGTERM and SIGHUP are forwarded to the child once; the recording
stops when the child has exited (or after a grace period, when it is terminated), and what was
recorded is kept. The sampler's own cost is measured as this process's CPU time over the wall time
of the recording, and written to ``recording.json``.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from reportgen import interrupts
from reportgen.errors import InputError, naming
from reportgen.output_set import OutputSet
from reportgen.recorder.sampler import ProcessTree, Sampler, load_nvml
from reportgen.recorder.script_end import marked_env, read_mark
from reportgen.recorder.writer import MetricsWriter
from reportgen.sources.layout import XSPACE_SUFFIXES

GRACE_S = 10.0
JOB_METRICS = "job-metrics.jsonl"  # the command's process tree at each tick (ProcessTree.sample's records)
SHARED_POINTS = 5.0  # the host's CPU this many points above the command's: the host is shared
TRACE_FOLDER = "pytorch-traces"
# A trace last modified this long before the command started is left from an earlier run (the slack
# covers file systems with coarse timestamps and clocks that differ slightly, e.g. on NFS).
MTIME_SLACK_S = 2.0
_TRACE_WORKER = re.compile(r"^(?P<host>.+)_(?P<pid>\d+)\.\d{10,}\.pt\.trace\.json(?:\.gz)?$")
_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s)?\s*$", re.I)


def parse_interval(text: str) -> float:
    """``500ms``, ``0.5s``, ``2s`` or ``200`` (milliseconds) -> seconds (at least 50 ms)."""
    match = _INTERVAL.match(str(text))
    if not match:
        raise InputError(f"--interval {text!r}: expected a duration like 500ms or 1s")
    value = float(match.group(1))
    seconds = value if (match.group(2) or "ms").lower() == "s" else value / 1000.0
    if seconds < 0.05:
        raise InputError(f"--interval {text!r}: at least 50ms")
    return seconds


@dataclass
class RecordResult:
    out_dir: str
    command: list[str]
    exit_code: int
    interrupted: bool
    interval_s: float
    samples: int
    started: float
    ended: float
    wall_s: float
    sampler_cpu_s: float
    sampler_cpu_pct_of_one_core: float
    gpus: int
    gpu_note: str
    metric_files: list[str] = field(default_factory=list)
    traces_copied: list[str] = field(default_factory=list)
    # each copied trace's last write (epoch s; copies keep it): with the time stamp torch puts in a trace's name
    # when its handler starts, the span of the profiler's own export (the diagnosis leaves it out of the loop)
    traces_written_s: dict = field(default_factory=dict)
    traces_skipped: list[str] = field(default_factory=list)  # in --trace-dir, not written by this command
    traces_skipped_why: dict = field(default_factory=dict)  # reason -> count
    # The command's own process tree (ProcessTree): CPU seconds, mean share of the host's cores (%), the
    # host's mean CPU (%) over the same ticks, peak RSS (bytes); host_shared when the host was busier than
    # the command by more than SHARED_POINTS.
    cpu_cores: int = 0
    job_cpu_s: float = 0.0
    job_cpu_pct_of_host: float | None = None
    job_cpu_pct_of_host_p50: float | None = None  # over the ticks, as the system usage table's percentiles
    job_cpu_pct_of_host_p95: float | None = None
    host_cpu_pct: float | None = None
    job_rss_peak_bytes: int = 0
    host_shared: bool | None = None
    # The tree's threads runnable but waiting for a core (the scheduler's run queue, /proc/<pid>/task/*/schedstat):
    # seconds over the recording and their mean as a share of the host's cores (%); None where the kernel does not
    # say. High on a starved process (its neighbours hold the cores), low on one that sleeps (I/O waits).
    job_run_queue_s: float | None = None
    job_run_queue_pct_of_host: float | None = None
    job_metrics_file: str = JOB_METRICS
    # When the command's own Python process finished its script (its atexit hooks began), epoch seconds: before
    # the interpreter's teardown, the training loop's end where no child process marks it (script_end.py); None
    # when the command is no Python, or it ended without running its atexit hooks (os._exit, a signal)
    script_end_s: float | None = None


def _exit_code(returncode: int | None) -> int:
    if returncode is None:
        return 1
    return 128 - returncode if returncode < 0 else returncode  # killed by signal N -> 128 + N


def _written_by_another_process(name: str, pids: set[int]) -> bool:
    """torch's default trace name ``<host>_<pid>.<ns>.pt.trace.json`` names the writer: on this host, a pid
    that was never among the command's processes means another run wrote it."""
    match = _TRACE_WORKER.match(name)
    if not match or not pids or match.group("host") != socket.gethostname():
        return False
    return int(match.group("pid")) not in pids


def copy_traces(trace_dir: Path, out_dir: Path, *, since: float | None = None,
                pids: set[int] | None = None) -> tuple[list[str], list[str], dict]:
    """Copy the traces the recorded command wrote: files modified since ``since`` (the command's start,
    less ``MTIME_SLACK_S``) and, for torch's ``<host>_<pid>`` names on this host, by one of ``pids``.
    Returns (copied, skipped, skipped count per reason)."""
    if not trace_dir.is_dir():
        return [], [], {}
    target = out_dir / TRACE_FOLDER
    copied, skipped, why = [], [], {}
    for path in sorted(trace_dir.rglob("*")):
        if not path.name.endswith((".json", ".json.gz", *XSPACE_SUFFIXES)):  # JAX/TF write .xplane.pb
            continue
        try:
            if not path.is_file():
                continue
            mtime = path.stat().st_mtime
        except OSError:
            continue
        reason = None
        if since is not None and mtime < since - MTIME_SLACK_S:
            reason = "written before the command started"
        elif _written_by_another_process(path.name, pids or set()):
            reason = "written by a process that is not the command's"
        if reason is not None:
            skipped.append(str(path.relative_to(trace_dir)))
            why[reason] = why.get(reason, 0) + 1
            continue
        dest = target / path.relative_to(trace_dir)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
        copied.append(str(dest.relative_to(out_dir)))
    return copied, skipped, why


def _percentile(values: list[float], q: float) -> float | None:
    """numpy's default (linear) percentile, as the engine computes the system usage table's."""
    if not values:
        return None
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=float), q))


def _reaped_cpu_s() -> float:
    """CPU seconds (user + system) of this process's children that have exited and were waited for."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def record(command: list[str], out_dir: Path, *, interval_s: float = 0.5, trace_dir: Path | None = None,
           nvml=None, progress=lambda message: None) -> RecordResult:
    """Run ``command`` and record until it exits; ``nvml``: a pynvml-like module (None: try to load it)."""
    if not command:
        raise InputError("record: give the command to run after --, e.g. reportgen record -- python train.py")
    out_dir = Path(out_dir)
    OutputSet().add_folder("--out", out_dir, whole=False)  # never an input folder nor inside one (--trace-dir)
    if (out_dir / "system").exists():
        raise InputError(f"{out_dir} already holds a recording (system/); choose another --out")
    out_dir.mkdir(parents=True, exist_ok=True)
    gpu_note = ""
    if nvml is None:
        nvml, gpu_note = load_nvml()
    sampler = Sampler(nvml)
    writer = MetricsWriter(out_dir)
    stop = {"signal": None}

    def on_signal(signum, _frame):
        stop["signal"] = signum

    # SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh session) alike, unless ignored (nohup): the
    # command is signalled and the recording finished and kept. The handler stays until recording.json
    # is written, so a second signal cannot cut the ending short.
    previous = {s: signal.signal(s, on_signal) for s in interrupts.handled_signals()}
    try:
        with marked_env() as (env, mark):
            return _record_child(command, out_dir, interval_s, trace_dir, sampler, writer, stop, gpu_note, progress,
                                 env, mark)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _record_child(command, out_dir: Path, interval_s: float, trace_dir, sampler, writer, stop: dict, gpu_note: str,
                  progress, env: dict[str, str] | None, mark: Path | None) -> RecordResult:
    started = time.time()
    wall0, cpu0 = time.monotonic(), time.process_time()
    reaped0 = _reaped_cpu_s()
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as err:
        sampler.close()
        raise InputError(f"record: cannot run {command[0]!r} ({err.strerror or err})") from None
    progress(f"recording {' '.join(command)} (pid {child.pid}) every {interval_s * 1000:.0f} ms into {out_dir}")
    forwarded_at = None
    tree = ProcessTree(sampler.psutil, child.pid)
    job_file = open(out_dir / JOB_METRICS, "a", encoding="utf-8")
    host_busy = []  # (tick seconds, host CPU %) for the mean over the same ticks as the tree's
    job_shares = []  # the tree's share of the host's cores at each tick (%)
    next_tick = time.monotonic() + interval_s
    last_sample = time.monotonic()
    try:
        while True:
            if stop["signal"] is not None and forwarded_at is None:
                forwarded_at = time.monotonic()
                progress("interrupted: stopping the command and keeping what was recorded")
                try:
                    child.send_signal(stop["signal"])
                except ProcessLookupError:
                    pass
            if forwarded_at is not None and time.monotonic() - forwarded_at > GRACE_S and child.poll() is None:
                child.kill()
            try:
                child.wait(timeout=max(next_tick - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                pass
            due = time.monotonic() >= next_tick
            # A last sample when the child exits, unless one was just taken (the engine would merge
            # two samples a few ms apart into one tick and count the pair as duplicates).
            final = child.poll() is not None and time.monotonic() - last_sample >= interval_s / 2
            if due or final:
                writer.write(sampler.sample())
                job = tree.sample(sampler.host_cpu_pct, sampler.last_ts)
                with naming(out_dir / JOB_METRICS):
                    job_file.write(json.dumps(job, separators=(",", ":")) + "\n")
                    job_file.flush()
                job_shares.append(job["CPUPercentOfHost"])
                if sampler.host_cpu_pct is not None:
                    host_busy.append((time.monotonic() - last_sample, sampler.host_cpu_pct))
                last_sample = time.monotonic()
                next_tick += interval_s
                if next_tick < time.monotonic():  # fell behind (suspended machine): skip, do not burst
                    next_tick = time.monotonic() + interval_s
            if child.poll() is not None:
                break
    finally:
        wall = time.monotonic() - wall0
        cpu = time.process_time() - cpu0
        ended = time.time()
        try:
            with naming(out_dir / JOB_METRICS):
                job_file.close()
            writer.close(ended)
        finally:
            sampler.close()
    pids = tree.pids
    # What the kernel counted for the command and the descendants it reaped, once it exited: exact, and
    # it includes the part after the last tick, which the tree's samples cannot see.
    job_cpu_s = max(tree.cpu_s, _reaped_cpu_s() - reaped0) if child.returncode is not None else tree.cpu_s
    job_pct = 100.0 * job_cpu_s / wall / tree.cores if wall > 0 else None
    weight = sum(w for w, _ in host_busy)
    host_pct = sum(w * v for w, v in host_busy) / weight if weight > 0 else None
    traces, skipped, why = (copy_traces(Path(trace_dir), out_dir, since=started, pids=pids)
                            if trace_dir is not None else ([], [], {}))
    written = {}
    for rel in traces:
        try:
            written[rel] = (out_dir / rel).stat().st_mtime
        except OSError:
            continue
    result = RecordResult(
        out_dir=str(out_dir), command=list(command), exit_code=_exit_code(child.returncode),
        interrupted=stop["signal"] is not None, interval_s=interval_s, samples=writer.samples, started=started,
        ended=ended, wall_s=wall, sampler_cpu_s=cpu, sampler_cpu_pct_of_one_core=100.0 * cpu / wall if wall else 0.0,
        gpus=len(sampler.gpus), gpu_note=gpu_note, metric_files=[str(p.relative_to(out_dir)) for p in writer.files],
        traces_copied=traces, traces_written_s=written, traces_skipped=skipped, traces_skipped_why=why,
        cpu_cores=tree.cores,
        job_cpu_s=job_cpu_s, job_cpu_pct_of_host=job_pct, job_cpu_pct_of_host_p50=_percentile(job_shares, 50),
        job_cpu_pct_of_host_p95=_percentile(job_shares, 95), host_cpu_pct=host_pct, job_rss_peak_bytes=tree.rss_peak,
        host_shared=None if job_pct is None or host_pct is None else host_pct - job_pct > SHARED_POINTS,
        job_run_queue_s=tree.run_queue_s, script_end_s=read_mark(mark, child.pid, started, ended),
        job_run_queue_pct_of_host=(100.0 * tree.run_queue_s / wall / tree.cores
                                   if tree.run_queue_s is not None and wall > 0 else None))
    with naming(out_dir / "recording.json"):
        (out_dir / "recording.json").write_text(json.dumps(asdict(result), indent=1))
    return result


def no_traces_advice(trace_dir) -> list[str]:
    """What ``record`` says when ``--trace-dir`` stayed empty: the three lines that make PyTorch write traces
    there (the profiled steps then come with the system metrics)."""
    return [f"no profiler traces were written into {trace_dir}; to record some, add these three lines around "
            "the training loop (PyTorch):",
            "    from torch.profiler import profile, schedule, tensorboard_trace_handler",
            f"    with profile(schedule=schedule(wait=1, warmup=1, active=3), "
            f"on_trace_ready=tensorboard_trace_handler({str(trace_dir)!r})) as prof:",
            "        ...  # the loop as it is, with prof.step() after each step"]


def main(args, say) -> int:
    """The CLI handler of ``reportgen record``."""
    command = list(args.cmd)
    if command and command[0] == "--":
        command = command[1:]
    interval = parse_interval(args.interval)
    out = Path(args.out) if args.out else Path(time.strftime("reportgen-recording-%Y%m%d-%H%M%S"))
    result = record(command, out, interval_s=interval, trace_dir=Path(args.trace_dir) if args.trace_dir else None,
                    progress=say)
    gpus = f"{result.gpus} GPU(s)" if result.gpus else f"no GPU metrics: {result.gpu_note}"
    say(f"recorded {result.samples} samples over {result.wall_s:.1f} s into {result.out_dir}; {gpus}")
    if result.traces_copied or result.traces_skipped:
        why = "; ".join(f"{count} {reason}" for reason, count in result.traces_skipped_why.items())
        say(f"{len(result.traces_copied)} trace file(s) copied into {TRACE_FOLDER}/"
            + (f", {len(result.traces_skipped)} left in {args.trace_dir} as not from this run ({why})"
               if result.traces_skipped else ""))
    elif args.trace_dir:
        for line in no_traces_advice(args.trace_dir):
            say(line)
    if result.job_cpu_pct_of_host is not None:
        host = (f"; the host {result.host_cpu_pct:.0f} %" if result.host_cpu_pct is not None else "")
        shared = (f": the host is shared (its CPU {result.host_cpu_pct - result.job_cpu_pct_of_host:.0f} points "
                  "above the command's; the command's own figures are in " + JOB_METRICS + ")"
                  if result.host_shared else "")
        say(f"the command's processes used {result.job_cpu_pct_of_host:.0f} % of the host's CPU "
            f"({result.job_cpu_s:.1f} CPU s, {result.job_cpu_s / result.wall_s if result.wall_s else 0:.2f} of "
            f"{result.cpu_cores} cores on average){host}{shared}; peak memory (RSS) "
            f"{result.job_rss_peak_bytes / 1e6:.0f} MB")
        if result.job_run_queue_s is not None:
            say(f"its threads waited {result.job_run_queue_s:.1f} s for a core while runnable (the scheduler's run "
                f"queue: {result.job_run_queue_s / result.wall_s if result.wall_s else 0:.2f} of a core on average)")
    say(f"sampler cost: {result.sampler_cpu_pct_of_one_core:.2f} % of one core "
        f"({result.sampler_cpu_s:.3f} s CPU over {result.wall_s:.1f} s); "
        f"command exit code {result.exit_code}; next: reportgen generate {result.out_dir}")
    with contextlib.suppress(Exception):  # the terminal may be gone (SIGHUP)
        sys.stderr.flush()
    return result.exit_code
