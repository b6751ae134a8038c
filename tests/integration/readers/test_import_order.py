"""``analyze`` starts DuckDB on the system metrics before pandas is imported: the files' listing and the
clock-jump span, which come first, import neither pandas nor the framework reader, and DuckDB is imported
before the traces thread starts (imports hold the GIL; pandas then loads beside DuckDB's parsing). Checked in
a fresh interpreter, where nothing is imported yet."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.paths import ROOT, SAMPLE_DATA

_PROBE = """
import json, sys, threading
from pathlib import Path
from reportgen.problems import ProblemLog
import reportgen.engine
from reportgen.readers import ingest
from reportgen.readers.clock import file_time_range_us
from reportgen.readers.framework_files import file_key_us

raw = Path(sys.argv[1])
problems = ProblemLog()
listing = ingest._system_listing(raw, None, problems)
files = ingest._framework_files(raw, None, problems)
span = file_time_range_us([k for k, _ in listing] + [file_key_us(p) for p in files])
seen = {"listed": [len(listing), len(files)], "pandas after the listing": "pandas" in sys.modules}
real = ingest._read_traces

def traces(*args, **kwargs):
    seen["duckdb when the traces thread starts"] = "duckdb" in sys.modules
    return real(*args, **kwargs)

ingest._read_traces = traces
reportgen.engine.analyze(raw, Path(sys.argv[2]))
seen["pandas at the end"] = "pandas" in sys.modules
print(json.dumps(seen))
"""


def test_listing_needs_no_pandas_and_duckdb_comes_first(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(SAMPLE_DATA), str(tmp_path / "out")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["listed"][0] > 0 and seen["listed"][1] > 0  # sample_data's system files and traces
    assert seen["pandas after the listing"] is False
    assert seen["duckdb when the traces thread starts"] is True
    assert seen["pandas at the end"] is True  # the rules' tables: imported, only later
    assert [p.name for p in (tmp_path / "out").rglob("StepOutlier.json")] == ["StepOutlier.json"]
