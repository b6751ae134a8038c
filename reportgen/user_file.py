"""The one guard for reading a file nobody vouches for: a regular file, within a size bound.

Why: the JSON documents had this guard, the TOML and YAML inputs did not: ``--config`` or ``--prices`` naming
a FIFO hung the run for ever, and a symlink to ``/dev/zero`` read 2.5 GB in seconds before failing. Every
reader of a user's file (JSON documents, ``--config``, ``--prices``, XSpace protobufs, and whatever format
comes next) opens it here: non-blocking, so a FIFO cannot hang the open; refused unless it is a regular
file; read at most ``max_bytes`` (a file that grows while read is caught too). Each refusal is a
``UserFileError`` whose text says why in a few words; the caller adds the file's name.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


# --config, --prices: a few KB each; a larger "settings" file is a wrong path (a trace, /dev/zero's kin)
SETTINGS_MAX_BYTES = 16 << 20


class UserFileError(ValueError):
    """Why a file could not be used, in a few words (the caller adds the file name)."""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def open_user_file(path: Path):
    """``path`` opened for reading in binary; ``UserFileError`` unless it is a regular file (``OSError``
    for I/O errors: a missing file, no permission). For readers that stream or bound the size themselves."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens at once instead of waiting for a writer
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UserFileError(f"{_kind(mode)}, not a regular file; not read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_user_file(path: Path, max_bytes: int, what: str, setting: str = "") -> bytes:
    """The bytes of ``path``, a regular file of at most ``max_bytes``; ``what`` names the kind of file in
    the message ("a JSON file"), ``setting`` the environment variable that sets the bound, if any."""
    more = f" ({setting})" if setting else ""
    with open_user_file(Path(path)) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise UserFileError(f"{size / 1e6:.0f} MB, above the {max_bytes / 1e6:.0f} MB {what} may have{more}")
        chunks, total = [], 0
        while True:  # at most max_bytes + 1
            chunk = handle.read(min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise UserFileError(f"above the {max_bytes / 1e6:.0f} MB {what} may have{more}")
        return b"".join(chunks)
