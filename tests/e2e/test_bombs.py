"""Gzip bombs (issue 20, item 1): a file of at most 10 MB on disk keeps memory bounded whatever it
decompresses to, and the report says what was not read.

Each bomb of ``tests/support/bombs.py`` is turned into a report by ``reportgen generate`` in a child process;
its peak RSS is measured from outside (``os.wait4``'s rusage of the child) and must stay under 1 GB.
The child runs under a 6 GB address-space limit so that a regression fails the test instead of
taking the machine's memory. The time each bomb takes is a benchmark figure
(``benchmarks/bench_bombs.py``, reported in benchmarks/README.md), not asserted here; the child is
only given a generous ceiling against a hang.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support import bombs

GB = 1 << 30


def _limit_memory():  # in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (6 * GB, 6 * GB))


def run_measured(args: list[str], log: Path, timeout: float = 600) -> tuple[int, int]:
    """Exit status and peak RSS in bytes of a child, as the kernel reports it to the parent
    (``os.wait4``); the child is killed after ``timeout`` seconds (a hang guard, not a measure)."""
    with open(log, "wb") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=_limit_memory)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss * 1024


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(bombs.KINDS))
def test_gzip_bomb_keeps_memory_bounded_and_says_what_was_not_read(kind, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    path = bombs.KINDS[kind](src)
    assert path.stat().st_size <= 10 * (1 << 20)
    out = tmp_path / "report.html"
    log = tmp_path / "stderr.txt"
    rc, peak = run_measured([sys.executable, "-m", "reportgen", "generate", str(src), "-o", str(out), "-q"], log)
    assert peak < GB, f"{kind}: peak RSS {peak / GB:.2f} GB"
    if kind == "two-members":  # the events sit after the cut: nothing usable is left, so no report (exit 2, #30)
        assert rc == 2 and not out.exists()
        assert "the rest was not read" in log.read_text(errors="replace")
        return
    assert rc == 0, log.read_text(errors="replace")
    text = out.with_suffix(".json").read_text()
    assert "the rest was not read" in text
