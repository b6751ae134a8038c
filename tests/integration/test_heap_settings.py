"""From the rules on, the command line's own process serves numpy's big temporaries from a heap it keeps
(``readers.heap.reuse_freed_heap``) instead of mapping and unmapping each; a caller of ``main(argv)`` (a test, a
notebook) keeps glibc's defaults, and so does a process that was not allowed to change them. Seen from inside each
process: where a fresh 24 MB array lies (glibc's ``mallinfo2``: blocks mapped on their own)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import SAMPLE_DATA

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(ctypes.CDLL(None), "mallinfo2"),
                                reason="glibc 2.33+ only (mallopt, mallinfo2)")

_PROBE = r"""
import ctypes, os, sys


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def where_a_big_array_lies(who=""):
    import numpy  # not before the command line's own import: with OpenBLAS's threads started it would not fork

    info = ctypes.CDLL("libc.so.6").mallinfo2
    info.restype = MallInfo2
    before = info().hblks
    big = numpy.ones(3 << 20)  # 24 MB: above glibc's default threshold, below the one set
    mapped = info().hblks - before
    del big
    # written straight to the descriptor: a forked child leaves with os._exit, without flushing sys.stderr
    os.write(2, f"{who}mapped {mapped} {who}kept {info().keepcost >> 20}\n".encode())


if sys.argv[1] == "direct":
    from reportgen.readers.heap import allow_heap_reuse, reuse_freed_heap

    if sys.argv[2] == "allowed":
        allow_heap_reuse()
    print("applied", reuse_freed_heap(), file=sys.stderr)
    where_a_big_array_lies()
else:
    import atexit

    atexit.register(where_a_big_array_lies)
    from reportgen.cli import main
    from reportgen.readers import ingest

    read_here = ingest._read_system_here
    parent = os.getpid()

    def read_and_probe(*args, **kwargs):  # the system read's forked child: probed before it reads
        if os.getpid() != parent:
            where_a_big_array_lies("child-")
        return read_here(*args, **kwargs)

    ingest._read_system_here = read_and_probe

    args = sys.argv[2:]
    if sys.argv[1] == "own":
        sys.argv = ["reportgen", *args]
        sys.exit(main())
    sys.exit(main(args))
"""


def _probe(tmp_path: Path, *argv: str) -> dict:
    script = tmp_path / "probe.py"
    script.write_text(_PROBE)
    done = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    found = {}
    for line in done.stderr.splitlines():
        words = line.split()
        for key, value in zip(words[::2], words[1::2]):
            found[key] = value
    return found


def test_a_big_array_comes_from_the_heap_and_stays_there_for_the_next(tmp_path):
    # not allowed: glibc's defaults, the array mapped on its own and unmapped when freed
    assert _probe(tmp_path, "direct", "not-allowed") == {"applied": "False", "mapped": "1", "kept": "0"}
    set_ = _probe(tmp_path, "direct", "allowed")
    assert set_["applied"] == "True" and set_["mapped"] == "0"
    assert int(set_["kept"]) >= 24  # freed, and still mapped at the heap's top for the next array


def test_the_command_lines_own_process_reuses_its_heap_a_caller_keeps_the_defaults(tmp_path):
    argv = ("analyze", str(SAMPLE_DATA), "-o", str(tmp_path / "o"), "-q")
    own = _probe(tmp_path, "own", *argv)
    assert own["mapped"] == "0"  # from the rules on
    if len(os.sched_getaffinity(0)) >= 2:  # the system metrics read in a forked child, which reuses its heap too
        assert own["child-mapped"] == "0"
    assert _probe(tmp_path, "caller", *argv)["mapped"] == "1"  # never forked, never changed
