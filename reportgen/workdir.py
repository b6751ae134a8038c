"""Private work folders that a killed run cannot leave in the user's folder.

A run works (rule outputs, the executed notebook, report.json before it is committed) in a folder of
its own. It used to be ``.reportgen-XXXXXXXX/`` inside the output folder, and a SIGKILL (an OOM kill,
a CI timeout) left it there for good, to be uploaded with a CI artifact folder. Now it is
``reportgen-work-XXXXXXXX/`` in the system's temporary folder (``$TMPDIR``, else ``/tmp``), and the
run holds an exclusive ``flock`` on it while it exists. A run starting later removes every such folder
of its user whose lock it can take: the kernel drops a dead process's locks, so a folder with a free
lock belongs to no live run, however young it is (age is never the test). The folder is made under
another name and renamed once locked, so no run can see it unlocked.

The scratch space of the libraries a run uses lives there too (``scratch_env``): IPython's profile
(``IPYTHONDIR``; it wrote ``~/.ipython`` on every run, and with an unwritable HOME leaked a new temporary
folder into ``$TMPDIR`` per run) and Dask's ``dask-scratch-space/`` (``DASK_TEMPORARY_DIRECTORY``, which
``--scheduler local`` left in ``$TMPDIR``). Nothing is left in HOME or ``$TMPDIR`` after a run.
Dask reads every ``DASK_*`` variable as a Python literal, so its folder is given as one (``repr``).
"""

from __future__ import annotations

import ast
import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locks, the folder is still removed on exit
    fcntl = None  # type: ignore[assignment]  # no such module: no locks

PREFIX = "reportgen-work-"
_NEW = "reportgen-new-"
# A Unix socket's path holds at most 107 bytes; multiprocessing names its listeners
# <tempdir>/pymp-XXXXXXXX/listener-XXXXXXXX (32 bytes after the folder), so a longer folder cannot hold one.
SOCKET_PATH_MAX = 107
_SOCKET_NAME_BYTES = 32
_SHORT_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")


def socket_folder() -> str:
    """Where multiprocessing places its Unix sockets (the fork server's listener for ``--scheduler local``):
    in ``$TMPDIR`` when their paths fit there, else in the first short temporary folder that is writable.
    With a long ``$TMPDIR`` (a CI runner's nested work folder) every ``--scheduler local:N`` run died with
    "OSError: AF_UNIX path too long". Set once per process, before the first socket is made (multiprocessing
    keeps the folder it made and removes it at exit)."""
    import multiprocessing.util

    base = tempfile.gettempdir()
    fits = len(os.fsencode(base)) + _SOCKET_NAME_BYTES <= SOCKET_PATH_MAX
    short = next((f for f in _SHORT_FOLDERS if os.access(f, os.W_OK | os.X_OK)), None)
    if fits or short is None:
        return multiprocessing.util.get_temp_dir()
    saved = tempfile.tempdir
    tempfile.tempdir = short
    try:
        return multiprocessing.util.get_temp_dir()  # made now, under the short folder, and kept for the process
    finally:
        tempfile.tempdir = saved


def remove_stale(base: Path) -> list[str]:
    """Remove this user's work folders under ``base`` that no live run holds; returns their names."""
    if fcntl is None:
        return []
    removed: list[str] = []
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(PREFIX) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return removed
    for entry in entries:
        try:
            if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # held by a live run
            continue
        try:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.name)
        finally:
            os.close(fd)
    return removed


SCRATCH_VARIABLES = {"IPYTHONDIR": "ipython", "DASK_TEMPORARY_DIRECTORY": "dask"}


def _scratch_value(name: str, folder: Path) -> str:
    """The variable's text for ``folder``. Dask parses each ``DASK_*`` value with ``ast.literal_eval``
    (the raw text where that fails), in this process and in its workers: a raw path can parse as something
    else, and one with a number run into a keyword (``/tmp/9if/``, a temporary name like
    ``reportgen-work-0xcfor``) made the tokenizer print ``SyntaxWarning: invalid decimal literal`` on
    stderr, in a CI run. A string literal (``repr``) parses back to the path, silently, whatever it holds."""
    return repr(str(folder)) if name.startswith("DASK_") else str(folder)


def dask_scratch() -> str | None:
    """Dask's scratch folder that ``scratch_env`` set, as a path (None outside a run)."""
    value = os.environ.get("DASK_TEMPORARY_DIRECTORY")
    if not value:
        return None
    try:
        parsed = ast.literal_eval(value) if value[:1] in "'\"" else value
    except (SyntaxError, ValueError):
        return value
    return parsed if isinstance(parsed, str) else value


@contextlib.contextmanager
def scratch_env(work_dir: Path) -> Iterator[None]:
    """While the block runs, the environment points IPython and Dask (and the processes started meanwhile:
    the page's worker, Dask's workers) at folders inside ``work_dir``; restored after."""
    saved = {name: os.environ.get(name) for name in SCRATCH_VARIABLES}
    for name, sub in SCRATCH_VARIABLES.items():
        os.environ[name] = _scratch_value(name, Path(work_dir) / sub)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def work_folder(base: Path | None = None) -> Iterator[Path]:
    """A fresh, locked work folder (removed on exit), after clearing stale ones."""
    base = Path(base) if base is not None else Path(tempfile.gettempdir())
    remove_stale(base)
    fresh = Path(tempfile.mkdtemp(prefix=_NEW, dir=base))
    fd = None
    try:
        if fcntl is not None:
            fd = os.open(fresh, os.O_RDONLY | os.O_DIRECTORY)
            fcntl.flock(fd, fcntl.LOCK_EX)
        path = fresh.with_name(PREFIX + fresh.name[len(_NEW):])
        os.rename(fresh, path)
        fresh = path
        with scratch_env(path):
            yield path
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
        if fd is not None:
            os.close(fd)
