"""Atomic file writes: a reader (or a crashed run) never sees half a file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: Path, text: str, *, durable: bool = False) -> None:
    """Write to a temporary file in the same folder, then rename it over ``path``; ``durable``: fsync the
    file before the rename (a cache that must survive a crash whole or not at all). An ``OSError`` names
    ``path`` (a write that fails on a full disk has no file name of its own)."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        # backslashreplace: a file name that is not UTF-8 (kept by Python as lone surrogates) is shown as
        # \udcff in the text instead of failing the run
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are meant to be shared
        os.replace(tmp, path)
    except BaseException as err:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError) and not err.filename:
            err.filename = str(path)
        raise
