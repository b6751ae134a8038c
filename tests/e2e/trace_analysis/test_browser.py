"""A report made from real PyTorch profiler traces, opened in a real headless Chromium."""

from __future__ import annotations

import pytest

from reportgen.pipeline import generate
from tests.support.browser import visit
from tests.support.paths import RAW, need
from tests.support.shared_runs import page_in_this_process

# Charts inside a closed <details> (a deep dive of a rule that did not fire) are drawn when it opens:
# open them all first, then count.
OPEN_ALL = """() => { document.querySelectorAll('details').forEach(d => { d.open = true; }); return {}; }"""
PROBE = """() => ({
  charts: Array.from(document.querySelectorAll('#sec-gpu-kernels-operators figure.chart')).map(f => f.id),
  drawn: Array.from(document.querySelectorAll('figure.chart')).filter(f => f.querySelector('.chart-canvas .main-svg')).length,
  all: document.querySelectorAll('figure.chart').length,
  tables: Array.from(document.querySelectorAll('table.data-table')).map(t => t.id),
})"""


@pytest.fixture(autouse=True)
def page_made_here():
    """Each report's page made in this process (the browser is the point here; the worker process is
    tests/e2e/test_page_worker.py's)."""
    with page_in_this_process():
        yield


@pytest.mark.fixtures
@pytest.mark.browser
def test_kineto_report_draws_without_errors_or_network(tmp_path):
    out = tmp_path / "report.html"
    generate(str(need(RAW / "hta-sampled-128rank")), out)
    page = visit(out, probe=[OPEN_ALL, PROBE])
    assert page.console_errors == []
    assert page.requests == [out.resolve().as_uri()]
    assert page.dom["drawn"] == page.dom["all"] > 0
    assert {"kineto-ranks", "kineto-kernels-0", "kineto-kernels-1", "kineto-ops-0", "kineto-ops-1",
            "step-durations-rank-0"} <= set(page.dom["tables"])
    assert {"kineto-step-by-rank", "kineto-step-hist", "kineto-gpu-mix-0", "kineto-precision-0"} <= set(page.dom["charts"])


CELLS = """() => Array.from(document.querySelectorAll('table.data-table td, table.data-table th'))
  .filter(c => c.scrollWidth > c.clientWidth + 1).map(c => [c.closest('table').id, c.textContent.slice(0, 60)])"""


@pytest.mark.fixtures
@pytest.mark.browser
def test_long_kernel_names_wrap_inside_their_cells_regression(tmp_path):
    """Kernel signatures of 100-450 characters sat in a no-wrap first column capped at 60ch, so
    they ran over the Time / Launches / Mean columns of the kernel tables (18 cells on this trace)."""
    out = tmp_path / "report.html"
    generate(str(need(RAW / "kineto-resnet50-num-workers-0")), out)
    page = visit(out, probe=CELLS)
    assert page.dom == []
    assert "void cudnn::detail::dgrad_engine&lt;float, 512, 6, 5, 3, 3, 3, false&gt;" in out.read_text(encoding="utf-8")


COLUMNS = """() => {
  const table = document.getElementById('kineto-ranks');
  const wrap = table.closest('.table-wrap') || table.parentElement;
  return Array.from(table.querySelectorAll('thead th')).map(th => {
    const r = th.getBoundingClientRect();
    return [th.textContent, Math.round(r.right), Math.round(wrap.getBoundingClientRect().right), window.innerWidth];
  });
}"""


@pytest.mark.fixtures
@pytest.mark.browser
def test_dataloader_column_of_the_ranks_table_is_on_screen_at_1400px(tmp_path):
    """The DataLoader share, the number that shows an input-bound run, was the 10th column behind a long
    trace-file name and off-screen at 1400 px."""
    out = tmp_path / "report.html"
    generate(str(need(RAW / "torch-cpu-record-ddp2")), out)
    page = visit(out, probe=COLUMNS, screenshot=tmp_path / "ranks.png")
    columns = {name: (right, wrap, width) for name, right, wrap, width in page.dom}
    for name in ("DataLoader share", "DataLoader per step (ms)", "Collective wait"):
        right, wrap, width = columns[name]
        assert right <= min(wrap, width), (name, right, wrap, width)
