"""One signal policy (issue #30 item 1): SIGINT, SIGTERM and SIGHUP stop every command the same way.

Real processes, real signals. Before: SIGTERM (CI cancellation, ``timeout``) and SIGHUP (a closed terminal)
killed ``generate`` at once, leaving ``reportgen-events-*`` spill folders in ``$TMPDIR`` and
``.reportgen-tmp-*`` files in the output folder; SIGHUP to ``record`` left the training command running,
unrecorded, without ``recording.json`` or the end marker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.support.paths import ROOT
from tests.support.signals import STOP_SIGNALS, default_stop_signals

REPO = ROOT
SAMPLE = REPO / "sample_data"
STOP = list(STOP_SIGNALS)


def _env(tmp: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}


def _line(signum: int) -> str:
    what = "" if signum == signal.SIGINT else f" by {signal.Signals(signum).name}"
    return f"reportgen: interrupted{what}; nothing was written"


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    tmp.mkdir()
    return out, tmp


def _run_script(script: str, tmp: Path, *, ignore_hup: bool = False, timeout: int = 180):
    def preexec():
        default_stop_signals()
        if ignore_hup:  # as nohup leaves it
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout,
                          env=_env(tmp), preexec_fn=preexec)


# The signal arrives while the framework traces' spill folder (reportgen-events-*) exists in $TMPDIR: once the
# system metrics are read (in this process, or by the forked child the command line starts: its result has
# come back), the main thread waits for the folder, then the process signals itself.
_WHILE_SPILLED = """
import os, signal, sys, time, tempfile
from pathlib import Path
from reportgen.readers import forked_call, ingest
def then_signal(real):
    def read_then_signal(*args, **kwargs):
        result = real(*args, **kwargs)
        if getattr(read_then_signal, "done", False):  # the forked rules lane's result: no signal there
            return result
        read_then_signal.done = True
        for _ in range(400):
            if any(p.name.startswith("reportgen-events-") for p in Path(tempfile.gettempdir()).iterdir()):
                break
            time.sleep(0.025)
        else:
            raise AssertionError("no spill folder")
        os.kill(os.getpid(), {signum})
        time.sleep(5)  # the handler raises here
        return result
    return read_then_signal
ingest.read_system_metrics = then_signal(ingest.read_system_metrics)
forked_call.ForkedCall.result = then_signal(forked_call.ForkedCall.result)
from reportgen.cli import main
from tests.support.paths import ROOT
sys.argv = ["reportgen"] + {argv!r}
raise SystemExit(main())
"""


@pytest.mark.parametrize("signum", STOP, ids=lambda s: signal.Signals(s).name)
def test_generate_signalled_while_the_traces_are_spilled_leaves_nothing(tmp_path, signum):
    out, tmp = _folders(tmp_path)
    argv = ["generate", str(SAMPLE), "-o", str(out / "r.html"), "-q"]
    proc = _run_script(_WHILE_SPILLED.format(signum=int(signum), argv=argv), tmp)
    assert proc.returncode == 128 + signum, proc.stderr
    assert proc.stderr.strip().splitlines() == [_line(signum)]
    assert sorted(os.listdir(out)) == [] and sorted(os.listdir(tmp)) == []


@pytest.mark.parametrize("command", ["analyze", "compare"])
def test_every_command_follows_the_same_policy(tmp_path, command):
    out, tmp = _folders(tmp_path)
    argv = ([command, str(SAMPLE), "-o", str(out / "rules")] if command == "analyze"
            else [command, str(SAMPLE), str(SAMPLE), "-o", str(out / "c.html")]) + ["-q"]
    proc = _run_script(_WHILE_SPILLED.format(signum=int(signal.SIGTERM), argv=argv), tmp)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert proc.stderr.strip().splitlines() == [_line(signal.SIGTERM)]
    assert sorted(os.listdir(out)) == [] and sorted(os.listdir(tmp)) == []


def test_sighup_ignored_by_nohup_stays_ignored(tmp_path):
    out, tmp = _folders(tmp_path)
    argv = ["generate", str(SAMPLE), "-o", str(out / "r.html"), "-q"]
    proc = _run_script(_WHILE_SPILLED.format(signum=int(signal.SIGHUP), argv=argv), tmp, ignore_hup=True)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(out)) == ["r.html", "r.json"] and sorted(os.listdir(tmp)) == []


_WHILE_COMMITTING = """
import os, signal, sys
from reportgen import output_set
real = output_set._write_temp
calls = []
def write_then_signal(final, payload):
    tmp = real(final, payload)
    calls.append(tmp)
    if len(calls) == 2:  # the second output's temporary file is written: signal now
        os.kill(os.getpid(), {signum})
    return tmp
output_set._write_temp = write_then_signal
from reportgen.cli import main
sys.argv = ["reportgen", "generate", {sample!r}, "-o", {out!r}, "--junit", {junit!r}, "-q"]
raise SystemExit(main())
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: signal.Signals(s).name)
def test_signal_while_the_outputs_are_committed_leaves_no_temporary_file(tmp_path, signum):
    out, tmp = _folders(tmp_path)
    (out / "r.html").write_text("old page")
    script = _WHILE_COMMITTING.format(signum=int(signum), sample=str(SAMPLE), out=str(out / "r.html"),
                                      junit=str(out / "junit.xml"))
    proc = _run_script(script, tmp)
    assert proc.returncode == 128 + signum, proc.stderr
    assert sorted(os.listdir(out)) == ["r.html"] and (out / "r.html").read_text() == "old page"
    assert sorted(os.listdir(tmp)) == []


def _records(out: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in (out / "system").rglob("*.json")) if out.exists() else 0


@pytest.mark.parametrize("signum", STOP, ids=lambda s: signal.Signals(s).name)
def test_record_signalled_stops_the_command_and_keeps_the_recording(tmp_path, signum):
    """SIGHUP used to kill the recorder at once: the command ran on, re-parented to init, unrecorded."""
    import psutil

    out, pid_file = tmp_path / "rec", tmp_path / "child.pid"
    child = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    proc = subprocess.Popen([sys.executable, "-m", "reportgen", "record", "--interval", "100ms", "--out", str(out),
                             "--", sys.executable, "-c", child], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(Path(os.environ.get("TMPDIR", "/tmp"))), preexec_fn=default_stop_signals)
    deadline = time.time() + 30
    while time.time() < deadline and (_records(out) < 100 or not pid_file.exists()):
        time.sleep(0.1)
    child_pid = int(pid_file.read_text())
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signum, err
    assert not psutil.pid_exists(child_pid) or psutil.Process(child_pid).status() == psutil.STATUS_ZOMBIE
    meta = json.loads((out / "recording.json").read_text())
    assert meta["interrupted"] is True and meta["exit_code"] == 128 + signum and meta["samples"] >= 2
    assert (out / "system" / "training_job_end.ts").is_file()
