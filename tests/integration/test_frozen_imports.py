"""The command line's own process (before it runs the engine) and the page's worker (after its warm-up) move
what their imports made out of the garbage collector's scans (``garbage_collector.freeze_imported_objects``);
a caller of ``main(argv)`` (a test, a notebook) keeps its collector as it was."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import SAMPLE_DATA

_SCRIPT = r"""
import atexit, gc, os, sys

atexit.register(lambda: print("frozen", gc.get_freeze_count(), "tracked", len(gc.get_objects()), file=sys.stderr))
args = sys.argv[2:]
from reportgen.cli import main

if sys.argv[1] == "own":
    sys.argv = ["reportgen", *args]
    sys.exit(main())
sys.exit(main(args))
"""


def _frozen_and_tracked(tmp_path: Path, how: str, *argv: str) -> tuple[int, int]:
    script = tmp_path / "run.py"
    script.write_text(_SCRIPT)
    done = subprocess.run([sys.executable, str(script), how, *argv], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    line = [x for x in done.stderr.splitlines() if x.startswith("frozen ")][-1].split()
    return int(line[1]), int(line[3])


def test_the_command_lines_own_process_freezes_its_imports_a_caller_keeps_its_collector(tmp_path):
    argv = ("analyze", str(SAMPLE_DATA), "-o", str(tmp_path / "o"), "-q")
    frozen, tracked = _frozen_and_tracked(tmp_path, "own", *argv)
    assert frozen > 10_000  # numpy's, the standard library's and the command line's objects
    shutil.rmtree(tmp_path / "o")
    caller_frozen, caller_tracked = _frozen_and_tracked(tmp_path, "caller", *argv)
    assert caller_frozen == 0
    assert caller_tracked > tracked + 10_000  # the caller's collector walks the imports' objects too


def test_the_page_worker_freezes_what_its_warm_up_imported():
    # serve() with no request: the warm-up ran, the objects it made were frozen, then end of input
    probe = ("import gc, io, sys\nfrom reportgen.render.worker import serve\n"
             "code = serve(io.StringIO(''), sys.stdout)\nprint(code, gc.get_freeze_count(), 'nbconvert' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    code, frozen, warmed = done.stdout.split()
    assert (code, warmed) == ("0", "True")
    assert int(frozen) > 50_000  # IPython's, nbconvert's, plotly's and pandas' objects (~78 thousand here)
