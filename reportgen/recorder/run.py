"""``reportgen record``: run a command and record the host's (and GPUs') metrics while it runs.

The sampler runs in this process's main thread, waking every ``interval`` (it waits on the child,
so the child's exit is seen at once). Ctrl-C (SIGINT) is forwarded to the child once; the recording
stops when the child has exited (or after a grace period, when it is terminated), and what was
recorded is kept. The sampler's own cost is measured as this process's CPU time over the wall time
of the recording, and written to ``recording.json``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from reportgen.errors import InputError
from reportgen.recorder.sampler import Sampler, load_nvml
from reportgen.recorder.writer import MetricsWriter

GRACE_S = 10.0
TRACE_FOLDER = "pytorch-traces"
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


def _exit_code(returncode: int | None) -> int:
    if returncode is None:
        return 1
    return 128 - returncode if returncode < 0 else returncode  # killed by signal N -> 128 + N


def _copy_traces(trace_dir: Path, out_dir: Path) -> list[str]:
    if not trace_dir.is_dir():
        return []
    target = out_dir / TRACE_FOLDER
    copied = []
    for path in sorted(trace_dir.rglob("*")):
        if path.is_file() and (path.name.endswith(".json") or path.name.endswith(".json.gz")):
            dest = target / path.relative_to(trace_dir)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
            copied.append(str(dest.relative_to(out_dir)))
    return copied


def record(command: list[str], out_dir: Path, *, interval_s: float = 0.5, trace_dir: Path | None = None,
           nvml=None, progress=lambda message: None) -> RecordResult:
    """Run ``command`` and record until it exits; ``nvml``: a pynvml-like module (None: try to load it)."""
    if not command:
        raise InputError("record: give the command to run after --, e.g. reportgen record -- python train.py")
    out_dir = Path(out_dir)
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

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    started = time.time()
    wall0, cpu0 = time.monotonic(), time.process_time()
    try:
        child = subprocess.Popen(command)
    except OSError as err:
        for s, handler in previous.items():
            signal.signal(s, handler)
        sampler.close()
        raise InputError(f"record: cannot run {command[0]!r} ({err.strerror or err})") from None
    progress(f"recording {' '.join(command)} (pid {child.pid}) every {interval_s * 1000:.0f} ms into {out_dir}")
    forwarded_at = None
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
        writer.close(ended)
        sampler.close()
        for s, handler in previous.items():
            signal.signal(s, handler)
    traces = _copy_traces(Path(trace_dir), out_dir) if trace_dir is not None else []
    result = RecordResult(
        out_dir=str(out_dir), command=list(command), exit_code=_exit_code(child.returncode),
        interrupted=stop["signal"] is not None, interval_s=interval_s, samples=writer.samples, started=started,
        ended=ended, wall_s=wall, sampler_cpu_s=cpu, sampler_cpu_pct_of_one_core=100.0 * cpu / wall if wall else 0.0,
        gpus=len(sampler.gpus), gpu_note=gpu_note, metric_files=[str(p.relative_to(out_dir)) for p in writer.files],
        traces_copied=traces)
    (out_dir / "recording.json").write_text(json.dumps(asdict(result), indent=1))
    return result


def main(args, say) -> int:
    """The CLI handler of ``reportgen record``."""
    command = list(args.cmd)
    if command and command[0] == "--":
        command = command[1:]
    interval = parse_interval(args.interval)
    out = Path(args.out) if args.out else Path(time.strftime("reportgen-recording-%Y%m%d-%H%M%S"))
    result = record(command, out, interval_s=interval, trace_dir=Path(args.trace_dir) if args.trace_dir else None,
                    progress=say)
    gpus = f"{result.gpus} GPU(s)" if result.gpus else f"no GPU metrics ({result.gpu_note})"
    say(f"recorded {result.samples} samples over {result.wall_s:.1f} s into {result.out_dir} ({gpus}"
        + (f", {len(result.traces_copied)} trace file(s) copied" if result.traces_copied else "") + ")")
    say(f"sampler cost: {result.sampler_cpu_pct_of_one_core:.2f} % of one core "
        f"({result.sampler_cpu_s:.3f} s CPU over {result.wall_s:.1f} s); "
        f"command exit code {result.exit_code}; next: reportgen generate {result.out_dir}")
    sys.stderr.flush()
    return result.exit_code
