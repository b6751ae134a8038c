"""The system metrics read, and the rules' pool shared with a forked child, in forked children (``readers.forked_call``),
as the command line runs them.

Each ``ForkedCall`` case runs in a fresh ``python -c`` process (one OS thread, as the command line
forks), which prints what it saw as one JSON line. The command-line cases compare the forked run's
outputs with the same analysis made in this process, where nothing forks.
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

from reportgen.engine import analyze
from reportgen.trace_analysis.framework_account import write_framework_account
from tests.support.corpus.make_corpus import good_framework, good_system
from tests.support.paths import ROOT
from tests.support.signals import default_stop_signals

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks only on Linux")

PRELUDE = """
import json, os, signal, sys, time, threading
import contextlib
from reportgen.readers.forked_call import ForkedCall
STACK = contextlib.ExitStack()  # closes every child at the end
def forked(fn, *args, **kwargs):
    return ForkedCall(fn, *args, stack=STACK, **kwargs)
def show(**seen):
    print(json.dumps(seen)); sys.stdout.flush()
"""


def _script(body: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", PRELUDE + body], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_result_comes_from_the_child():
    seen = _script("""
call = forked(lambda notice, a, b: (os.getpid(), a + b), 40, 2)
pid, value = call.result(lambda: (os.getpid(), -1))
show(child=pid != os.getpid(), value=value, reaped=call.pid is None)
""")
    assert seen == {"child": True, "value": 42, "reaped": True}


def test_an_exception_in_the_child_is_raised_here_with_its_type_and_message():
    seen = _script("""
from reportgen.errors import InputError
def fails(notice):
    raise InputError("no usable profiler data under x")
call = forked(fails)
try:
    call.result(lambda: "fallback")
except InputError as err:
    show(kind="InputError", text=str(err))
""")
    assert seen == {"kind": "InputError", "text": "no usable profiler data under x"}


def test_an_exception_that_does_not_pickle_arrives_as_a_runtime_error_with_its_traceback():
    seen = _script("""
class Odd(Exception):
    def __reduce__(self):
        raise TypeError("no pickling")
def fails(notice):
    raise Odd("deep inside")
try:
    forked(fails).result(lambda: "fallback")
except RuntimeError as err:
    show(text=str(err))
""")
    assert seen["text"].startswith("in the forked child: Traceback") and "Odd: deep inside" in seen["text"]


@pytest.mark.parametrize("how", ["killed", "exits", "unpicklable"])
def test_a_child_that_ends_without_an_answer_costs_time_not_the_result(how):
    """Killed from outside (the OOM killer), gone with os._exit (a crash), or a result that does not pickle:
    the fallback computes the result here."""
    work = {"killed": "os.kill(os.getpid(), signal.SIGKILL)", "exits": "os._exit(3)",
            "unpicklable": "return threading.Lock()"}[how]
    seen = _script(f"""
def work(notice):
    {work}
call = forked(work)
show(value=call.result(lambda: "computed here"), reaped=call.pid is None)
""")
    assert seen == {"value": "computed here", "reaped": True}


def test_a_child_stopped_by_a_stop_signal_stops_the_run():
    seen = _script("""
def work(notice):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
try:
    forked(work).result(lambda: "computed here")
except KeyboardInterrupt:
    show(stopped=True)
""")
    assert seen == {"stopped": True}


def test_notify_reaches_the_child_and_close_kills_and_reaps_it():
    seen = _script("""
def waits(notice):
    return notice.wait(20)
call = forked(waits)
time.sleep(0.2)
call.notify()
noticed = call.result(lambda: None)
def sleeps(notice):
    time.sleep(60)
slow = forked(sleeps)
pid = slow.pid
started = time.monotonic()
slow.close()
try:
    os.kill(pid, 0)
    alive = True
except ProcessLookupError:
    alive = False
show(noticed=noticed, alive=alive, quick=time.monotonic() - started < 5)
""")
    assert seen == {"noticed": True, "alive": False, "quick": True}


def test_shared_objects_come_back_as_this_process_s_own():
    """The spill file of the tick tables is made before the fork: the tables the child sends refer to it by
    name, and read back here from this process's open file, written by the child."""
    seen = _script("""
import numpy as np
from reportgen.readers.tick_table import ColumnSpill
spill = ColumnSpill()
def writes(notice, spill):
    return [spill.write(np.arange(5, dtype=np.int32) * k) for k in (1, 3)]
refs = forked(writes, spill, shared={"spill": spill}).result(lambda: [])
show(same=all(r.spill is spill for r in refs), values=[r.load().tolist() for r in refs])
""")
    assert seen == {"same": True, "values": [[0, 1, 2, 3, 4], [0, 3, 6, 9, 12]]}


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    prof = tmp_path_factory.mktemp("forked") / "p"
    good_system(prof)
    good_framework(prof)
    return prof


def _outputs(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.rglob("*.json"))}  # the command line lays them flat


@pytest.fixture(scope="module")
def in_process(profile, tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("in-process")
    result = analyze(profile, out)  # a library call: nothing forks
    # and the framework events' step-time account, as the command line's pipeline writes it beside the rules'
    assert write_framework_account(result.node_traces, out) is not None
    found = _outputs(out)
    assert len(found) == 14 and json.loads(found["LoadBalancing.json"])["Datapoints"] > 0
    assert json.loads(found["framework-account.json"])["source"] == "SageMaker framework events"
    return found


@pytest.mark.parametrize("budget_mb", ["64", "0"])
def test_the_command_line_s_forked_children_give_the_same_outputs(profile, in_process, tmp_path, budget_mb):
    """``0``: every tick table spilled to the file made before the first fork, read back by this process and
    by the rules' child."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _watched(profile, tmp_path / "o", "pass", tmp, {"REPORTGEN_TABLES_MEMORY_MB": budget_mb})
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert [line.split()[0] for line in err.splitlines()] == ["forked", "forked"]
    assert _outputs(tmp_path / "o") == in_process


FORK_WATCH = """
import os, signal, sys, time
real_fork = os.fork
def fork():
    pid = real_fork()
    if pid == 0:
        {child}
    else:
        print(f"forked {{pid}}", file=sys.stderr, flush=True)
        {parent}
    return pid
os.fork = fork
from reportgen.cli import main
sys.argv = ["reportgen", "analyze", {profile!r}, "-o", {out!r}, "-q"]
raise SystemExit(main())
"""


def _watched(profile: Path, out: Path, child: str, tmp: Path, env: dict | None = None,
             parent: str = "pass") -> subprocess.Popen:
    """The command line's ``analyze``, each fork printed by the parent (``forked PID``) and followed by ``child``
    in the child and ``parent`` in the parent (both while the fork holds the stop signals back)."""
    script = FORK_WATCH.format(child=child, parent=parent, profile=str(profile), out=str(out))
    return subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), **(env or {})},
                            start_new_session=True, preexec_fn=default_stop_signals)


def test_a_child_killed_before_it_answers_leaves_the_same_outputs(profile, in_process, tmp_path):
    """The OOM killer takes each child (the system read's, then the rules' system lane's): the parent reads
    the system metrics and evaluates those rules itself."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _watched(profile, tmp_path / "o", "os.kill(os.getpid(), signal.SIGKILL)", tmp)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert [line.split()[0] for line in err.splitlines()] == ["forked", "forked"]  # and nothing else printed
    assert _outputs(tmp_path / "o") == in_process
    assert list(tmp.iterdir()) == []


def test_a_child_killed_after_taking_a_task_leaves_the_same_outputs(profile, in_process, tmp_path):
    """The rules' child dies with the task it took from the pool (the timeline or a system rule): the parent
    computes what the child took and did not answer."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dies = ("from reportgen import engine; "
            "engine.rule_module = engine._timeline_text = lambda *a: os.kill(os.getpid(), signal.SIGKILL)")
    proc = _watched(profile, tmp_path / "o", dies, tmp, parent="time.sleep(0.2)")  # the child takes a task first
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert [line.split()[0] for line in err.splitlines()] == ["forked", "forked"]
    assert _outputs(tmp_path / "o") == in_process


def test_ctrl_c_reaching_both_processes_is_exit_130_and_leaves_no_child(profile, tmp_path):
    """A terminal's Ctrl-C signals the whole foreground group: the child dies of it, the parent ends as
    every interrupted run does."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _watched(profile, tmp_path / "o", "time.sleep(0.3)", tmp)  # the child lingers: the signal finds it
    line = proc.stderr.readline()
    assert line.startswith("forked "), line
    child = int(line.split()[1])
    os.killpg(proc.pid, signal.SIGINT)
    rest = proc.stderr.read()
    proc.wait(timeout=120)
    assert (proc.returncode, rest.strip().splitlines()) == (130, ["reportgen: interrupted; nothing was written"])
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # reaped, not a zombie or an orphan
    assert not (tmp_path / "o").exists() and list(tmp.iterdir()) == []


def test_a_signal_to_the_parent_alone_ends_the_child_too(profile, tmp_path):
    """``kill PID`` (a CI timeout) reaches the parent only: it kills and reaps the child on its way out."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _watched(profile, tmp_path / "o", "time.sleep(60)", tmp)
    line = proc.stderr.readline()
    child = int(line.split()[1])
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    rest = proc.stderr.read()
    proc.wait(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, rest
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    assert not (tmp_path / "o").exists() and list(tmp.iterdir()) == []


def test_a_signal_that_comes_while_the_child_is_being_made_ends_both(profile, tmp_path):
    """The signal is held back until the child can be closed: then it interrupts the run, and the child, whose
    stop signals were held back too, is killed and reaped, not left running on its own."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _watched(profile, tmp_path / "o", "time.sleep(60)", tmp, parent="os.kill(os.getpid(), signal.SIGTERM)")
    child = int(proc.stderr.readline().split()[1])
    rest = proc.stderr.read()
    proc.wait(timeout=120)
    assert (proc.returncode, rest.strip().splitlines()) == (
        128 + signal.SIGTERM, ["reportgen: interrupted by SIGTERM; nothing was written"])
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    assert not (tmp_path / "o").exists() and list(tmp.iterdir()) == []


def test_a_child_does_not_outlive_a_parent_killed_with_sigkill(profile, tmp_path):
    """``kill -9`` (the OOM killer) gives the parent no chance to close the child: the kernel kills it."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # the child's reading takes a minute (patched in the child only, so that it runs in the child's own code)
    slow = "from reportgen.readers import ingest; ingest._read_system_here = lambda *a, **k: time.sleep(60)"
    proc = _watched(profile, tmp_path / "o", slow, tmp)
    child = int(proc.stderr.readline().split()[1])
    time.sleep(0.5)
    proc.kill()
    proc.wait(timeout=60)
    for _ in range(200):  # gone, or a zombie of init's (reaping it is init's business): not running
        try:
            with open(f"/proc/{child}/stat") as stat:
                state = stat.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            break
        if state == "Z":
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the child {child} still runs after its parent was killed")


def test_a_fork_the_system_refuses_costs_nothing_but_the_fork(profile, in_process, tmp_path):
    """EAGAIN or ENOMEM (a container's process or memory limit): the work is done here, the outputs are the same,
    and Ctrl-C still works afterwards (the stop signals are not left held back)."""
    out = tmp_path / "o"
    script = f"""
import errno, os, signal, sys
def refused():
    raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
os.fork = refused
from reportgen import engine
real = engine._evaluate
def evaluate(*args, **kwargs):  # after both forks were tried: what the process holds now
    found = real(*args, **kwargs)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    print(sorted(int(s) for s in blocked & {{signal.SIGINT, signal.SIGTERM, signal.SIGHUP}}),
          len(os.listdir("/proc/self/fd")), flush=True)
    return found
engine._evaluate = evaluate
from reportgen.cli import main
sys.argv = ["reportgen", "analyze", {str(profile)!r}, "-o", {str(out)!r}, "-q"]
raise SystemExit(main())
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (proc.returncode, proc.stderr) == (0, "")
    held, fds = proc.stdout.rsplit(maxsplit=1)
    assert held == "[]" and int(fds) < 12  # no stop signal held back, no pipe left open (0-2, a few of Python's)
    assert _outputs(out) == in_process
