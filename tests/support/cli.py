"""Run the command line as a user does: ``python -m reportgen ...`` in a child process, with this checkout
first on the path and without the CI's ``$GITHUB_STEP_SUMMARY`` (a test must not append to the real one)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.paths import ROOT


def run_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    environ["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "reportgen", *args], capture_output=True, text=True, env=environ,
                          cwd=cwd)
