"""The end of a recorded Python command's script, before the interpreter's teardown: real interpreters run with the
recorder's ``sitecustomize`` first on their PYTHONPATH (what the recorder keeps of it: tests/unit/recorder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from reportgen.recorder.child_site import END_FILE, PATH_BEFORE
from reportgen.recorder.script_end import marked_env, read_mark

SHOW_ENV = (f"import json, os, sys; print(json.dumps([os.environ.get('PYTHONPATH'), os.environ.get({END_FILE!r}), "
            f"os.environ.get({PATH_BEFORE!r}), [p for p in sys.path if 'reportgen-script-end-' in p]]))")


def _run(command: list[str], base: dict[str, str]):
    with marked_env(base) as (env, mark):
        assert env is not None and mark is not None
        folder = mark.parent
        started = time.time()
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
        out, _ = proc.communicate(timeout=60)
        ended = time.time()
        at = read_mark(mark, proc.pid, started, ended)
    assert not folder.exists()  # nothing left behind
    return proc, out, at, (started, ended)


def test_the_script_end_is_marked_before_the_exit_and_nothing_of_the_command_changes(tmp_path):
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    script = SHOW_ENV + "; import time; print(time.time(), flush=True); sys.exit(3)"
    proc, out, at, (started, ended) = _run([sys.executable, "-c", script], base)
    seen, last_line = out.splitlines()
    assert proc.returncode == 3  # its exit code as it was
    # the script sees its own environment: no PYTHONPATH (it had none), no variable of the recorder's, no folder
    assert json.loads(seen) == [None, None, None, []]
    assert at is not None and float(last_line) <= at <= ended


def test_the_users_own_sitecustomize_and_pythonpath_stay(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import builtins\nbuiltins.USER_SITE = 42\n")
    base = {**os.environ, "PYTHONPATH": str(user)}
    proc, out, at, _ = _run([sys.executable, "-c", SHOW_ENV + "; print(USER_SITE)"], base)
    seen, loaded = out.splitlines()
    assert proc.returncode == 0 and loaded == "42"
    assert json.loads(seen) == [str(user), None, None, []]
    assert at is not None


def test_an_error_in_the_users_sitecustomize_is_reported_as_without_the_recorder(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("raise RuntimeError('theirs')\n")
    base = {**os.environ, "PYTHONPATH": str(user)}
    plain = subprocess.run([sys.executable, "-c", "print('ran')"], env=base, capture_output=True, text=True)
    with marked_env(base) as (env, mark):
        proc = subprocess.Popen([sys.executable, "-c", "print('ran')"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate(timeout=60)
        assert read_mark(mark, proc.pid, 0.0, time.time() + 1) is not None
    assert (proc.returncode, out, err) == (plain.returncode, plain.stdout, plain.stderr)
    assert "Error in sitecustomize" in err and "theirs" in err


def test_only_the_commands_own_process_marks(tmp_path):
    """A Python the command starts takes no mark (the top one took it), a forked child writes none, and a command that
    is no Python itself (a shell running Python) has no mark of its own."""
    base = dict(os.environ)
    nested = (f"import subprocess, sys, os, time; subprocess.run([sys.executable, '-c', {SHOW_ENV!r}]); "
              "pid = os.fork()\nif pid == 0: sys.exit(0)\nos.waitpid(pid, 0); time.sleep(0.2); print(time.time())")
    proc, out, at, _ = _run([sys.executable, "-c", nested], base)
    child_seen, after_fork = out.splitlines()
    assert json.loads(child_seen)[1:] == [None, None, []]
    assert at is not None and at >= float(after_fork)  # the top process's end, not its forked child's
    shell, _, at, _ = _run(["sh", "-c", f"{sys.executable} -c 'print(1)'; true"], base)
    assert shell.returncode == 0 and at is None
