"""The report as a user sees it: a real Chromium, with and without JavaScript."""

from __future__ import annotations

import time

import pytest

from reportgen.pipeline import generate
from tests.browser import visit
from tests.conftest import REAL, ROOT, need

PROBE = """() => ({
  charts: document.querySelectorAll('figure.chart').length,
  drawn: Array.from(document.querySelectorAll('figure.chart')).filter(f => f.querySelector('.chart-canvas .main-svg')).length,
  fallbacks: Array.from(document.querySelectorAll('.chart-fallback')).filter(e => e.offsetHeight > 0).length,
  tables: Array.from(document.querySelectorAll('table.data-table')).map(t => t.id),
  visibleTableRows: Array.from(document.querySelectorAll('table.data-table tr')).filter(e => e.offsetHeight > 0).length,
  toc: Array.from(document.querySelectorAll('nav.toc a')).map(a => a.textContent),
  disclaimer: document.querySelector('#disclaimer') ? document.querySelector('#disclaimer').innerText : '',
  findings: Array.from(document.querySelectorAll('.tone-finding')).filter(e => e.offsetHeight > 0).length,
  codeCells: document.querySelectorAll('.jp-InputArea, .input_area, .prompt, pre.code').length,
})"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = need(REAL / "beauvilerobed-dd30fc8e")
    out = tmp_path_factory.mktemp("browser") / "report.html"
    generate(str(folder), out)
    return out


def test_no_console_errors_no_network_and_every_chart_drawn(report, tmp_path):
    page = visit(report, screenshot=tmp_path / "report.png", probe=PROBE)
    assert page.console_errors == []
    assert page.requests == [report.resolve().as_uri()]  # the file itself, nothing else
    assert page.dom["charts"] >= 10
    assert page.dom["drawn"] == page.dom["charts"]
    assert page.dom["fallbacks"] == 0  # replaced by the drawn charts
    assert page.dom["codeCells"] == 0
    assert "information only" in page.dom["disclaimer"]
    assert page.dom["toc"][:4] == ["Training job summary", "System usage statistics", "Node utilization over time",
                                   "Framework metrics summary"]
    assert (tmp_path / "report.png").stat().st_size > 50_000


def test_readable_without_javascript(report):
    page = visit(report, javascript=False, probe=PROBE)
    assert page.console_errors == []
    assert page.requests == [report.resolve().as_uri()]
    assert {"job-summary", "system-usage", "cpu-operators", "gpu-operators", "rules-summary",
            "step-durations-algo-1-26"} <= set(page.dom["tables"])
    assert page.dom["drawn"] == 0
    # every chart degrades to its one-line note rather than to blank space
    assert page.dom["fallbacks"] == page.dom["charts"] >= 10
    assert page.dom["visibleTableRows"] > 30
    assert page.dom["findings"] >= 3


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("sample") / "report.html"
    generate(str(ROOT / "sample_data"), out)
    return out


def test_sample_report_from_raw_data_draws_its_time_series(sample_report, tmp_path):
    page = visit(sample_report, screenshot=tmp_path / "sample.png", probe=PROBE)
    assert page.console_errors == []
    assert page.requests == [sample_report.resolve().as_uri()]
    assert page.dom["drawn"] == page.dom["charts"] >= 20
    timeline = visit(sample_report, probe="""() => Array.from(document.querySelectorAll(
        '#sec-utilization-over-time figure.chart')).map(f => f.id)""").dom
    assert {"timeline-util-algo-1", "timeline-util-algo-2", "timeline-cpu_heatmap-algo-1",
            "timeline-gpu_heatmap-algo-2", "timeline-phases"} <= set(timeline)


def test_time_series_and_phases_share_one_time_axis_regression(sample_report):
    """The phases chart spanned the training loop only and every chart sized its own margins (heatmaps
    lost width to their colour bar, the phases to their lane names), so one instant sat at different
    places in the charts said to share "the same time axis". Now each plot area spans the same pixels
    and the same instants: 22:14:00-22:26:59 of sample_data."""
    dom = visit(sample_report, probe="""() => Array.from(document.querySelectorAll(
        '#sec-utilization-over-time figure.chart')).map(f => {
          const box = f.querySelector('.nsewdrag').getBoundingClientRect();
          const gd = f.querySelector('.js-plotly-plot');
          return [f.id, Math.round(box.left), Math.round(box.right), gd.layout.xaxis.range.map(String)];
        })""").dom
    assert len(dom) == 9  # per node: utilization, network, CPU cores, GPUs; then the phases
    assert len({(left, right) for _, left, right, _ in dom}) == 1, dom
    assert len({tuple(r) for *_, r in dom}) == 1, dom
    start, end = (float(v) / 1000.0 for v in dom[0][3])  # epoch ms
    assert (time.strftime("%H:%M:%S", time.gmtime(start)), time.strftime("%H:%M:%S", time.gmtime(end))) == \
        ("22:14:00", "22:26:58")


NO_JS_PROBE = """() => {
  const visible = e => e.offsetHeight > 0 && e.offsetWidth > 0;
  return {
    tables: Array.from(document.querySelectorAll('table.data-table')).filter(visible).map(t => t.id),
    rulesRows: Array.from(document.querySelectorAll('#rules-summary tbody tr')).filter(visible)
      .map(tr => Array.from(tr.cells).map(c => c.innerText.trim())),
    findings: Array.from(document.querySelectorAll('.tone-finding')).map(e => ({text: e.innerText.trim(),
                                                                             visible: visible(e)})),
    charts: Array.from(document.querySelectorAll('figure.chart')).map(f => ({
      id: f.id, height: f.offsetHeight,
      note: Array.from(f.querySelectorAll('.chart-fallback')).filter(visible).map(e => e.innerText.trim())})),
  };
}"""


def test_sample_report_without_javascript_shows_tables_rules_and_findings(sample_report, tmp_path):
    """What a CI artifact viewer that blocks scripts shows: every table, rule and finding; one line per chart."""
    import json

    shot = tmp_path / "sample-nojs.png"
    page = visit(sample_report, javascript=False, screenshot=shot, probe=NO_JS_PROBE)
    assert page.console_errors == []
    assert page.requests == [sample_report.resolve().as_uri()]
    data = json.loads(sample_report.with_suffix(".json").read_text(encoding="utf-8"))
    dom = page.dom
    assert {"job-summary", "system-usage", "cpu-operators", "gpu-operators", "rules-summary", "gpu-distances",
            "step-durations-algo-1-27", "step-durations-algo-2-27"} <= set(dom["tables"])
    # the rules table: every rule of report.json, with its counts and recommendation, readable
    rules = data["sections"]["rules-summary-section"]["rows"]
    assert [row[0] for row in dom["rulesRows"]] == [r["rule"] for r in rules]
    for cells, rule in zip(dom["rulesRows"], rules):
        assert cells[1] == {"fired": "Fired", "passed": "Did not fire"}[rule["status"]]
        assert cells[3] == rule["recommendation"]
        assert (cells[4], cells[5]) == (str(rule["times_triggered"]), str(rule["datapoints"]))
    # every finding is visible, and each rule that fired has its finding in its deep dive
    assert all(f["visible"] and f["text"] for f in dom["findings"])
    texts = [f["text"] for f in dom["findings"]]
    fired = [r for r in rules if r["times_triggered"]]
    assert len(fired) == 6
    for rule in fired:
        assert any(f"The {rule['rule']} rule" in t and f"fired {rule['times_triggered']} times" in t
                   for t in texts), rule["rule"]
    assert texts[0] == ("6 of the 9 evaluated rules fired (LowGPUUtilization, GPUMemoryIncrease, Dataloader, StepOutlier, "
                        "CPUBottleneck, LoadBalancing). Which finding matters most is judged in "
                        "At a glance at the top, by its cost in time, not by how often a rule fired (counts are not "
                        "comparable between rules).")
    # each chart shrinks to its one-line note: no blank space where the plot would be
    assert len(dom["charts"]) >= 20
    for chart in dom["charts"]:
        assert len(chart["note"]) == 1 and len(chart["note"][0]) > 20, chart
        assert chart["height"] < 60, chart
    assert shot.stat().st_size > 100_000
