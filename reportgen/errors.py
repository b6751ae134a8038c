"""Errors that end a run with a one-line message instead of a traceback.

Exit codes of ``reportgen generate`` and ``reportgen check`` (also in README.md and docs/ci.md):

====  ==========================================================================================
code  meaning
====  ==========================================================================================
0     done: every requested output was written (rules may have fired; ``--fail-on none``)
1     a rule listed in ``--fail-on`` fired (``any``: any rule); every output was written first
2     no report could be made: usage or input error (bad source, nothing usable in it, unreadable
      or damaged report.json, unknown rule in ``--fail-on``) or an error of the environment (an
      OSError in any phase: disk full, read-only output folder, a file vanished; a UnicodeError; an
      unknown ~user; an unreachable or foreign scheduler); one line on stderr naming the path or
      address, nothing half-written (an unwritable $GITHUB_STEP_SUMMARY is found after the report
      was written)
3     internal error (a bug, or the notebook/HTML conversion failed); nothing half-written
128+n stopped by signal n: 130 Ctrl-C (SIGINT), 143 SIGTERM, 129 SIGHUP; nothing written
====  ==========================================================================================
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
import os
from pathlib import Path

EXIT_OK = 0
EXIT_RULE_FIRED = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3


class ReportgenError(Exception):
    """A failure the user can act on; ``str(err)`` is the whole message (one line)."""

    exit_code = EXIT_INPUT

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(" ".join(str(message).split()))
        if exit_code is not None:
            self.exit_code = exit_code


class InputError(ReportgenError):
    """The source is missing, empty, or not something we can read."""


class RenderError(ReportgenError):
    """The notebook or the HTML conversion failed."""

    exit_code = EXIT_INTERNAL


def environment_message(err: BaseException) -> str | None:
    """The one line for an error caused by the environment or the input rather than by reportgen, or None
    for a bug (exit 3). The one mapping the command line applies to whatever reaches it: an ``OSError`` in
    any phase (a full disk or ``$TMPDIR``, a read-only folder, a vanished file, the current folder
    deleted), a ``UnicodeError`` (a path that is not valid in the file system's encoding, a terminal that
    cannot show a character), a home folder that cannot be looked up (``~unknown-user/``), a memory limit."""
    if isinstance(err, FileNotFoundError) and not err.filename and not _cwd_exists():
        return "the current folder no longer exists (deleted or moved away): relative paths cannot be used"
    if isinstance(err, OSError):
        where = [str(name) for name in (err.filename, err.filename2) if name]
        return f"{err.strerror or err}" + (f": {' -> '.join(where)}" if where else "")
    if isinstance(err, UnicodeError):
        text = getattr(err, "object", None)
        if isinstance(text, bytes):
            text = text.decode("utf-8", "backslashreplace")
        what = f" in {text[:200]!r}" if isinstance(text, str) else ""
        return (f"text that cannot be encoded or decoded{what} ({getattr(err, 'reason', err)}): a file or folder "
                "name not valid in this system's encoding, or a terminal that cannot show it")
    if isinstance(err, RuntimeError) and "home directory" in str(err):  # Path.expanduser
        return f"{err} (a path starting with ~ names an unknown user, or HOME is not set)"
    if isinstance(err, MemoryError):
        return "out of memory"
    return None


@contextlib.contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """An ``OSError`` raised inside without a file name gets ``path``: a write or a flush through an open
    file (a full disk, a quota) says only "No space left on device", and its one line must name the path
    that is full, not leave the user to guess (or name a work-folder file that has room)."""
    try:
        yield
    except OSError as err:
        if not err.filename:
            err.filename = os.fspath(path)
        raise


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except OSError:
        return False
    return True


def expanduser(path: str | os.PathLike[str]) -> "Path":
    """``Path(path).expanduser()``, but a ``~user`` that names no user (or no HOME) is an ``InputError``
    naming the path (exit 2), not a ``RuntimeError`` (exit 3)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        raise InputError(f"{path}: cannot find the home folder its ~ names (no such user, or HOME not set)") \
            from None
