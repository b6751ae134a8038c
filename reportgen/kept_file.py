"""The one guard for reading back a file reportgen keeps for itself: cache entries, the digest memo, compiled
templates, the page cache's forecasts.

Why: a cache folder is shared between runs and may be restored from a CI artifact, so what lies there is not
trusted: an entry replaced by a link is not followed (it could name any file the user can read), a FIFO put
under an entry's name must not hang the run, and an entry grown past its bound is not read whole. Each cache
used to read its entries its own way (three private copies of this, the rank entries and the trace entries
with no guard at all); ``user_file.py`` is the same policy for files the user names, which may be links.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def open_kept(where: Path, limit: int | None = None) -> BinaryIO | None:
    """``where`` opened for reading when it is a regular file of at most ``limit`` bytes (a link is not followed,
    a FIFO not waited on); None when it is absent, no regular file, too large or unreadable."""
    try:
        fd = os.open(where, _FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (limit is not None and info.st_size > limit):
            os.close(fd)
            return None
        return open(fd, "rb")
    except OSError:
        os.close(fd)
        return None


def read_kept(where: Path, limit: int | None = None) -> bytes | None:
    """The bytes of ``where`` under ``open_kept``'s rules; None too when it grew past ``limit`` while read."""
    handle = open_kept(where, limit)
    if handle is None:
        return None
    try:
        with handle:
            raw = handle.read() if limit is None else handle.read(limit + 1)
    except OSError:
        return None
    return raw if limit is None or len(raw) <= limit else None


def regular_or_absent(where: Path) -> bool:
    """Whether a kept file may be written under ``where``: nothing is there, or a regular file (a link, a FIFO or a
    folder someone put under the name is left alone)."""
    try:
        return stat.S_ISREG(os.lstat(where).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


__all__ = ["open_kept", "read_kept", "regular_or_absent"]
