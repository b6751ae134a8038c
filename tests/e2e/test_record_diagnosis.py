"""A 10-second `reportgen record`: nothing can be judged, and every output says so (no all-clear)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.support.paths import ROOT


@pytest.mark.slow
def test_ten_second_recording_is_insufficient_data_everywhere(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    rec = tmp_path / "rec"
    subprocess.run([sys.executable, "-m", "reportgen", "record", "-q", "--out", str(rec), "--",
                    sys.executable, "-c", "import time; time.sleep(10)"], check=True, env=env, timeout=60)
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "reportgen", "generate", str(rec), "-o", str(out / "report.html"), "-q",
                    "--junit", str(out / "rules.xml"), "--markdown", str(out / "summary.md"), "--no-step-summary"],
                   check=True, env=env, timeout=300)
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["diagnosis"]["status"] == "insufficient-data" and data["diagnosis"]["findings"] == []
    rows = data["sections"]["rules-summary-section"]["rows"]
    assert len(rows) == 9 and {r["status"] for r in rows} == {"not_evaluated"}
    assert all(r["not_evaluated_reason"] for r in rows)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'data-status="insufficient-data"' in html and "Insufficient data" in html
    assert "None of the" not in html and "tone-ok" not in html.split('id="sec-rules-summary-section"')[1][:4000]
    assert "was not evaluated" in html  # each deep dive says so first
    suite = ET.parse(out / "rules.xml").getroot().find("testsuite")
    assert (suite.get("skipped"), suite.get("failures")) == ("9", "0")
    assert all(s.get("message").startswith("not evaluated: ") for s in suite.iter("skipped"))
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "**Status: insufficient data**" in summary and "No rule could be evaluated." in summary
    assert "fired" not in summary.split("No rule could be evaluated.")[0].split("Status")[1]
