"""Private work folders that a killed run cannot leave in the user's folder.

A run works (rule outputs, the executed notebook, report.json before it is committed) in a folder of
its own. It used to be ``.reportgen-XXXXXXXX/`` inside the output folder, and a SIGKILL (an OOM kill,
a CI timeout) left it there for good, to be uploaded with a CI artifact folder. Now it is
``reportgen-work-XXXXXXXX/`` in the system's temporary folder (``$TMPDIR``, else ``/tmp``), and the
run holds an exclusive ``flock`` on it while it exists. A run starting later removes every such folder
of its user whose lock it can take: the kernel drops a dead process's locks, so a folder with a free
lock belongs to no live run, however young it is (age is never the test). The folder is made under
another name and renamed once locked, so no run can see it unlocked.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locks, the folder is still removed on exit
    fcntl = None

PREFIX = "reportgen-work-"
_NEW = "reportgen-new-"


def remove_stale(base: Path) -> list[str]:
    """Remove this user's work folders under ``base`` that no live run holds; returns their names."""
    if fcntl is None:
        return []
    removed = []
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


@contextlib.contextmanager
def work_folder(base: Path | None = None):
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
        yield path
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
        if fd is not None:
            os.close(fd)
