"""What a Dask worker reports of the task it ran, beside the task's result: for the command's own
progress line (files, bytes, seconds, the worker's process and its peak memory)."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass
class TaskStats:
    """What a worker reports of one task: its files, their bytes, its seconds, its process and peak memory."""

    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    worker_pid: int = 0
    peak_rss: int = 0


def peak_rss() -> int:
    try:
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(kb) * (1 if os.uname().sysname == "Darwin" else 1024)
    except (ImportError, AttributeError, OSError):
        return 0
