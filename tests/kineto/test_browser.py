"""A report made from real PyTorch profiler traces, opened in a real headless Chromium."""

from __future__ import annotations

import pytest

from reportgen.pipeline import generate
from tests.browser import visit
from tests.conftest import RAW, need

PROBE = """() => ({
  charts: Array.from(document.querySelectorAll('#sec-gpu-kernels-operators figure.chart')).map(f => f.id),
  drawn: Array.from(document.querySelectorAll('figure.chart')).filter(f => f.querySelector('.chart-canvas .main-svg')).length,
  all: document.querySelectorAll('figure.chart').length,
  tables: Array.from(document.querySelectorAll('table.data-table')).map(t => t.id),
})"""


@pytest.mark.browser
def test_kineto_report_draws_without_errors_or_network(tmp_path):
    out = tmp_path / "report.html"
    generate(str(need(RAW / "hta-sampled-128rank")), out)
    page = visit(out, probe=PROBE)
    assert page.console_errors == []
    assert page.requests == [out.resolve().as_uri()]
    assert page.dom["drawn"] == page.dom["all"] > 0
    assert {"kineto-ranks", "kineto-kernels-0", "kineto-kernels-1", "kineto-ops-0", "kineto-ops-1",
            "step-durations-rank-0"} <= set(page.dom["tables"])
    assert {"kineto-step-by-rank", "kineto-step-hist", "kineto-gpu-mix-0", "kineto-precision-0"} <= set(page.dom["charts"])
