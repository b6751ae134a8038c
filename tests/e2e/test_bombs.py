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
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support import bombs

GB = 1 << 30


# A small Python process limits the address space, starts the command and writes its exit status and wait4
# peak RSS to a file: the command's ru_maxrss counts its address space before its exec too, which is then a
# copy of this few-MB process rather than of the pytest process (a pytest worker reached 831 MB in one run).
SPAWN = """
import os, resource, sys
limit, result, *argv = sys.argv[1:]
resource.setrlimit(resource.RLIMIT_AS, (int(limit), int(limit)))
pid = os.fork()
if pid == 0:
    os.execv(argv[0], argv)
_, status, usage = os.wait4(pid, 0)
with open(result, "w") as handle:
    handle.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def run_measured(args: list[str], log: Path, timeout: float = 600) -> tuple[int, int]:
    """Exit status and peak RSS in bytes of a child under a 6 GB address-space limit, as the kernel reports
    it to its parent (``os.wait4``); the child is killed after ``timeout`` seconds (a hang guard, not a
    measure)."""
    result = log.with_name(log.name + ".rusage")
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", SPAWN, str(6 * GB), str(result), *args],
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    timer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL))
    timer.start()
    try:
        assert proc.wait() == 0, log.read_text(errors="replace")
    finally:
        timer.cancel()
    code, maxrss = result.read_text().split()
    return int(code), int(maxrss) * 1024


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
