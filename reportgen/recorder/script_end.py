"""When a recorded Python command's script finished, before the interpreter's teardown: ``child_site`` goes first on
the command's PYTHONPATH as its ``sitecustomize`` and writes the moment from an ``atexit`` hook into a private temp
folder, read here once the command has exited (the folder is then removed). Without a child process to mark the
training loop's end, the command's exit would count the teardown (1.6-7.4 s on the planted runs) as training."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from reportgen.recorder.child_site import END_FILE, PATH_BEFORE

SITE = Path(__file__).with_name("child_site.py")
MARK = "script-end"
SLACK_S = 1.0  # a mark this far outside the command's own run is no mark of it (a clock step)


@contextlib.contextmanager
def marked_env(base: dict[str, str] | None = None) -> Iterator[tuple[dict[str, str] | None, Path | None]]:
    """(the environment to run the command with, the mark's file): ``(None, None)`` (the command's own
    environment, no mark) where the temp folder cannot be made; the folder is removed on leaving."""
    env = dict(os.environ if base is None else base)
    try:
        folder = Path(tempfile.mkdtemp(prefix="reportgen-script-end-"))
    except OSError:
        yield None, None
        return
    try:
        try:
            shutil.copyfile(SITE, folder / "sitecustomize.py")
        except OSError:
            yield None, None
            return
        before = env.get("PYTHONPATH")
        if before is not None:
            env[PATH_BEFORE] = before
        env["PYTHONPATH"] = str(folder) + (os.pathsep + before if before else "")
        env[END_FILE] = str(folder / MARK)
        yield env, folder / MARK
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def read_mark(path: Path | None, pid: int, started: float, ended: float) -> float | None:
    """Epoch seconds at which the command's own process (``pid``: not a Python it started) finished its script, or
    None: no mark (not Python, ``-S``/``-E``, ``os._exit``, killed), another process's, or outside the run."""
    if path is None:
        return None
    try:
        fields = path.read_text(encoding="ascii").split()
        at, writer = float(fields[0]), int(fields[1])
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return None
    if writer != pid or not started - SLACK_S <= at <= ended + SLACK_S:
        return None
    return min(max(at, started), ended)
