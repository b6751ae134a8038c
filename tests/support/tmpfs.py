"""A small real tmpfs for full-disk tests (needs root; skips the test where it cannot be mounted)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(mnt: Path, size: str):
    """``mnt`` (made here) as a tmpfs of ``size`` (``1100k``) while the block runs; unmounted after."""
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def fill(folder: Path) -> None:
    """Fill the file system of ``folder`` to the last byte (unbuffered: nothing is left to fail on close)."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"x" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
