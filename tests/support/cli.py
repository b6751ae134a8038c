"""Run the command line as a user does: ``python -m reportgen ...`` in a child process, with this checkout
first on the path and without the CI's ``$GITHUB_STEP_SUMMARY`` (a test must not append to the real one).
The one place a test starts ``reportgen``; the files' own short names (``run``, ``_reportgen``) are this
function with their defaults."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.paths import ROOT


def run_cli(*args, cwd=None, env: dict | None = None, timeout: float | None = None, text: bool = True,
            **kwargs) -> subprocess.CompletedProcess:
    """``args``: strings, paths or bytes (bytes for names that are not UTF-8). ``env``: variables set on
    top of this environment, a value of None removes one. Output is captured unless ``kwargs`` say how
    (``stderr=subprocess.PIPE`` alone, for instance)."""
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    environ["PYTHONPATH"] = str(ROOT)
    for key, value in (env or {}).items():
        if value is None:
            environ.pop(key, None)
        else:
            environ[key] = value
    if "stdout" not in kwargs and "stderr" not in kwargs:
        kwargs.setdefault("capture_output", True)
    argv = [sys.executable, "-m", "reportgen", *(a if isinstance(a, bytes) else str(a) for a in args)]
    return subprocess.run(argv, cwd=cwd, env=environ, timeout=timeout, text=text, **kwargs)


def main_in_process(*args, capsys, monkeypatch) -> subprocess.CompletedProcess:
    """``reportgen.cli.main(args)`` in this process, its exit code and captured output returned as ``run_cli``
    returns them (text). For the many cases of one behaviour (each ``--fail-on`` list a gate is asked) whose
    child process is tested once beside them: a child process costs about a second of CPU to start and
    import. Without the CI's ``$GITHUB_STEP_SUMMARY``, as ``run_cli``."""
    from reportgen import cli

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    argv = [str(a) for a in args]
    try:
        code = cli.main(argv)
    except SystemExit as leaving:  # argparse's usage errors
        code = leaving.code if isinstance(leaving.code, int) else 2
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["reportgen", *argv], code, out, err)
