"""``generate`` without ``--fail-on`` never imports the CI outputs in the command line's process (they import the
diagnosis's cause registry, ~0.04 CPU s, benchmarks/HISTORY.md "The page's process"); with ``--fail-on`` they are
imported, and an unknown name is still refused before any work starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT, SAMPLE_DATA

_SCRIPT = r"""
import json, sys
from reportgen.cli import main

code = main(sys.argv[1:])
print(json.dumps({"code": code, "ci_outputs": "reportgen.ci_outputs" in sys.modules}))
"""


def _generate(tmp_path: Path, *extra: str) -> dict:
    tmp_path.mkdir()
    out = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-c", _SCRIPT, "generate", "-q", str(SAMPLE_DATA), "-o", str(out), *extra],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "REPORTGEN_NO_CACHE": "1"})
    assert done.stdout.strip(), done.stderr[-2000:]
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "html": out.is_file(), "stderr": done.stderr}


def test_generate_imports_the_ci_outputs_only_for_fail_on(tmp_path):
    plain = _generate(tmp_path / "plain")
    assert plain["code"] == 0 and plain["html"] and plain["ci_outputs"] is False
    gated = _generate(tmp_path / "gated", "--fail-on", "any")
    assert gated["code"] in (0, 1) and gated["html"] and gated["ci_outputs"] is True
    typo = _generate(tmp_path / "typo", "--fail-on", "LowGPUUtilisation")
    assert typo["code"] == 2 and not typo["html"] and "LowGPUUtilisation" in typo["stderr"]
