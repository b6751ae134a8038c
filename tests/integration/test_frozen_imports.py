"""The command line's own process (before it runs the engine) and the page's worker (after its warm-up) move
what their imports made out of the garbage collector's scans (``garbage_collector.freeze_imported_objects``);
a caller of ``main(argv)`` (a test, a notebook) keeps its collector as it was."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from reportgen.blas_threads import BLAS_THREAD_VARIABLES
from tests.support.paths import SAMPLE_DATA

_SCRIPT = r"""
import atexit, gc, sys


def report():
    import numpy
    from reportgen import cli

    tracked = gc.get_objects()  # not the frozen ones
    print("frozen", gc.get_freeze_count(), "scanned", any(o is cli.__dict__ for o in tracked),
          any(o is numpy.__dict__ for o in tracked), file=sys.stderr)


atexit.register(report)
args = sys.argv[2:]
from reportgen.cli import main

if sys.argv[1] == "own":
    sys.argv = ["reportgen", *args]
    sys.exit(main())
sys.exit(main(args))
"""


def _collector_after(tmp_path: Path, how: str, *argv: str, blas_threads: str | None = None) -> tuple[int, bool, bool]:
    """(objects frozen, the command line module's globals still scanned, numpy's still scanned) at exit."""
    script = tmp_path / "run.py"
    script.write_text(_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}  # an earlier Dask test sets them
    if blas_threads is not None:
        env["OMP_NUM_THREADS"] = blas_threads
    done = subprocess.run([sys.executable, str(script), how, *argv], capture_output=True, text=True, timeout=300,
                          env={**env, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    line = [x for x in done.stderr.splitlines() if x.startswith("frozen ")][-1].split()
    return int(line[1]), line[3] == "True", line[4] == "True"


def test_the_command_lines_own_process_freezes_its_imports_a_caller_keeps_its_collector(tmp_path):
    argv = ("analyze", str(SAMPLE_DATA), "-o", str(tmp_path / "o"), "-q")
    for blas_threads in (None, "1"):  # numpy is frozen whether or not the user set a BLAS thread count
        frozen, cli_scanned, numpy_scanned = _collector_after(tmp_path, "own", *argv, blas_threads=blas_threads)
        assert frozen > 5_000  # the standard library's, numpy's and the command line's objects
        assert (cli_scanned, numpy_scanned) == (False, False)  # imported before the engine ran: frozen
        shutil.rmtree(tmp_path / "o")
    assert _collector_after(tmp_path, "caller", *argv) == (0, True, True)


def test_the_page_worker_freezes_what_its_warm_up_imported():
    # serve() with no request: the warm-up ran, the objects it made were frozen, then end of input
    probe = ("import gc, io, sys\nfrom reportgen.render.worker import serve\n"
             "code = serve(io.StringIO(''), sys.stdout)\nprint(code, gc.get_freeze_count(), 'nbconvert' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    code, frozen, warmed = done.stdout.split()
    assert (code, warmed) == ("0", "True")
    assert int(frozen) > 50_000  # IPython's, nbconvert's, plotly's and pandas' objects (~78 thousand here)
