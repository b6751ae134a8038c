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


def test_a_module_of_trace_analysis_leaves_the_readers_and_the_task_plan_for_later():
    """The page's worker imports ``trace_analysis.account`` (the diagnosis' step-time account); the package's API
    (``analyze_job``, ``write_kineto_outputs``, ``read_trace``...) is imported when first asked for."""
    code = ("import sys, reportgen.trace_analysis.account; "
            "print(sorted(m for m in ('reportgen.trace_analysis.job', 'reportgen.trace_analysis.outputs', "
            "'reportgen.readers.kineto_trace', 'msgspec') if m in sys.modules)); "
            "from reportgen.trace_analysis import analyze_job, read_trace, KINETO_JSON; "
            "print(KINETO_JSON, analyze_job.__module__, read_trace.__module__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "kineto.json reportgen.trace_analysis.outputs reportgen.readers.kineto_trace"]
