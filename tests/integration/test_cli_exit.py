"""The command line's own process leaves without the interpreter's teardown after generate, analyze and
compare (``cli._leave_without_teardown``): the exit handlers still run, the outputs are whole and the exit
code is the command's; with a thread the interpreter would wait for, or after another command, it ends as
any process does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import SAMPLE_DATA

_SCRIPT = r"""
import atexit, os, sys, threading, time

log = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
atexit.register(os.write, log, b"exit handler\n")


class TornDown:
    def __del__(self, write=os.write, fd=log):
        write(fd, b"torn down\n")


keep = TornDown()  # collected only by the interpreter's teardown
if sys.argv[2] == "thread":  # a thread that is not a daemon: the interpreter waits for it
    threading.Thread(target=time.sleep, args=(3,)).start()
sys.argv = ["reportgen", *sys.argv[3:]]
from reportgen.cli import main

sys.exit(main())
"""


def _run(tmp_path: Path, thread: str, *argv: str) -> tuple[int, list[str]]:
    script, log = tmp_path / "run.py", tmp_path / "exit.log"
    script.write_text(_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(log), thread, *argv], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return done.returncode, log.read_text().splitlines() if log.exists() else []


def test_analyze_ends_without_teardown_outputs_whole(tmp_path):
    out = tmp_path / "out"
    code, log = _run(tmp_path, "none", "analyze", str(SAMPLE_DATA), "-o", str(out), "-q")
    assert code == 0
    assert log == ["exit handler"]  # the handlers ran; the teardown (TornDown.__del__) did not
    written = sorted(p.name for p in out.iterdir())
    assert len(written) == 14 and {"data-quality.json", "timeline.json", "framework-account.json",
                                   "StepOutlier.json"} <= set(written)
    assert all(isinstance(json.loads((out / name).read_text()), dict) for name in written)  # each one whole


def test_the_exit_code_of_a_failed_command_is_kept(tmp_path):
    code, log = _run(tmp_path, "none", "analyze", str(tmp_path / "missing"), "-o", str(tmp_path / "out"), "-q")
    assert code == 2
    assert log == ["exit handler"]


def test_a_running_thread_is_waited_for_as_usual(tmp_path):
    code, log = _run(tmp_path, "thread", "analyze", str(tmp_path / "missing"), "-o", str(tmp_path / "out"), "-q")
    assert code == 2
    assert log == ["exit handler", "torn down"]


def test_other_commands_end_as_usual(tmp_path):
    code, log = _run(tmp_path, "none", "check", str(tmp_path / "missing.json"))
    assert code == 2
    assert log == ["exit handler", "torn down"]
