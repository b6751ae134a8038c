"""Advisory locks between reportgen processes that share an output folder or a download cache.

``folder_lock(path)`` holds an exclusive ``flock`` on the folder itself (no lock file is left behind)
for the duration of a ``with`` block; a second process blocks until the first leaves it. The lock
is released by the kernel when a process dies, so a crashed run never blocks the next one.
On systems without ``fcntl`` (Windows) it is a no-op: there the atomic renames alone apply.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]  # no such module: the lock is skipped


@contextlib.contextmanager
def folder_lock(path: Path) -> Iterator[None]:
    path = Path(path)
    if fcntl is None:
        yield
        return
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
