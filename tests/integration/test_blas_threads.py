"""reportgen's processes import numpy with one BLAS thread (``reportgen.blas_threads``), and leave the
environment as the user had it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.blas_threads import BLAS_THREAD_VARIABLES

TASKS = Path("/proc/self/task")
REPORT = ("import json, os, sys; print(json.dumps([len(os.listdir('/proc/self/task')), 'numpy' in sys.modules, "
          "{k: os.environ.get(k) for k in ('OPENBLAS_NUM_THREADS', 'GOTO_NUM_THREADS', 'OMP_NUM_THREADS')}]))")

pytestmark = pytest.mark.skipif(not TASKS.is_dir(), reason="counts threads in /proc (Linux)")


def _run(code: str, **env_vars: str) -> list:
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    env.update(env_vars)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def default_threads() -> int:
    """Threads of a process that imported numpy with no variable set: more than one where OpenBLAS
    starts its own (else there is nothing to tell apart here)."""
    threads = _run("import numpy; " + REPORT)[0]
    if threads < 2:
        pytest.skip("numpy's BLAS starts no thread of its own here (one core, or not OpenBLAS)")
    return threads


def test_numpy_imported_with_one_thread_and_the_environment_restored(default_threads):
    threads, imported, env = _run("from reportgen.blas_threads import import_numpy_with_one_blas_thread; "
                                  "import_numpy_with_one_blas_thread(); " + REPORT)
    assert imported is True
    assert threads == 1 < default_threads
    assert env == {"OPENBLAS_NUM_THREADS": None, "GOTO_NUM_THREADS": None, "OMP_NUM_THREADS": None}


def test_a_thread_count_the_user_set_is_kept(default_threads):
    threads, imported, env = _run("from reportgen.blas_threads import import_numpy_with_one_blas_thread; "
                                  "import_numpy_with_one_blas_thread(); " + REPORT, OMP_NUM_THREADS="2")
    assert imported is True  # imported all the same (the command line freezes it next)
    assert threads == 2  # OpenBLAS's own thread count, as the user asked
    assert env == {"OPENBLAS_NUM_THREADS": None, "GOTO_NUM_THREADS": None, "OMP_NUM_THREADS": "2"}


def test_the_command_line_imports_numpy_with_one_thread(default_threads, tmp_path):
    # a command that fails on its input still went through main's start: numpy is there, one thread
    code = ("import sys; from reportgen.cli import main; "
            f"rc = main(['analyze', {str(tmp_path / 'missing')!r}, '-o', {str(tmp_path / 'out')!r}, '-q']); "
            "print(rc); " + REPORT)
    threads, imported, env = _run(code)
    assert imported is True
    assert threads == 1
    assert env["OPENBLAS_NUM_THREADS"] is None
