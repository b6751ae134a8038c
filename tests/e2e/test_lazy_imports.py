"""What a fresh interpreter imports: the engine leaves pandas and DuckDB for later, a local source never
imports the AWS SDK (a child ``python -c``, so that nothing this test process imported counts)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT
from tests.support.sources_testlib import raw_profile

REPO = ROOT


def test_engine_import_leaves_pandas_for_later():
    code = "import sys, reportgen.engine; print('pandas' in sys.modules, 'duckdb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_local_source_does_not_import_boto3(tmp_path):
    raw_profile(tmp_path / "profiler-output")
    code = (
        "import sys; from reportgen.sources import resolve_source; "
        f"r = resolve_source({str(tmp_path)!r}); "
        "assert r.raw_dir is not None; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore', 's3transfer')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]"
