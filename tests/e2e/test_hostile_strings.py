"""Hostile strings from the data, end to end: HTML, plotly charts and hover text, Markdown, JUnit.

Operator, phase, step, node, kernel, device, folder and job names carry script tags, event handlers,
a table breaker, ``javascript:`` URLs, plotly's pseudo-HTML and a 10,000-character name (tests/support/hostile.py).
A real ``reportgen generate`` (papermill included) writes the report; headless Chromium then checks that
nothing executes (the payloads' ``window.PWNED`` sentinel stays undefined, no dialog, no request, no
console error), that the names are shown as text, and that the page keeps its width.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from tests.support.browser import visit
from tests.support.paths import ROOT
from tests.support.hostile import FILE_NODE, JOB, LONG, PAYLOADS, build


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    folder = build(root)
    out = root / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    proc = subprocess.run([sys.executable, "-m", "reportgen", "generate", str(folder), "-o", str(out / "report.html"),
                           "--job-name", JOB, "--junit", str(out / "junit.xml"), "--markdown", str(out / "summary.md"),
                           "-q"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return out


class _Elements(HTMLParser):
    """Every start tag with its attributes, as a browser's tokenizer sees them."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_html_has_no_markup_from_the_data(hostile):
    page = (hostile / "report.html").read_text(encoding="utf-8")
    for payload in [p for p in PAYLOADS[:8] + [JOB, FILE_NODE] if "<" in p]:
        assert payload not in page, payload
    parser = _Elements()
    parser.feed(page)
    tags = parser.tags
    assert not [t for t, a in tags if t in ("img", "svg", "iframe", "object", "embed", "a") and
                any("PWNED" in (v or "") for v in a.values())]
    assert not [(t, k) for t, a in tags for k in a if k.startswith("on")]  # no event handler attribute at all
    assert not [(t, a) for t, a in tags if any((v or "").strip().lower().startswith("javascript:") for v in a.values())]
    scripts = [a.get("type") for t, a in tags if t == "script"]
    # our own: plotly.js and the chart loader; every chart spec is inert JSON
    assert len([s for s in scripts if s != "application/json"]) == 2
    assert scripts.count("application/json") >= 10


PROBE = """async () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });  // charts in deep dives draw on opening
  await new Promise(r => setTimeout(r, 1500));
  const main = document.querySelector('main').getBoundingClientRect();
  const hover = [];
  for (const gd of document.querySelectorAll('.chart-canvas')) {
    for (let i = 0; i < (gd.data || []).length; i++) {
      const n = Math.min(((gd.data[i].y || gd.data[i].labels || gd.data[i].x || []).length), 15);
      for (let j = 0; j < n; j++) {
        try { Plotly.Fx.hover(gd, [{curveNumber: i, pointNumber: j}]); } catch (e) { continue; }
        const layer = gd.querySelector('.hoverlayer');
        if (layer && layer.textContent) hover.push(layer.textContent);
      }
    }
  }
  await new Promise(r => setTimeout(r, 200));
  return {
    pwned: typeof window.PWNED,
    scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
    mainRight: main.right,
    cellsOverflowing: Array.from(document.querySelectorAll('table.data-table td, table.data-table th'))
      .filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent.slice(0, 40)),
    overflowing: Array.from(document.querySelectorAll('main > *, .report-section > *, .table-wrap, figure.chart'))
      .filter(e => e.getBoundingClientRect().right > main.right + 1).map(e => e.className || e.tagName),
    charts: document.querySelectorAll('figure.chart').length,
    drawn: document.querySelectorAll('figure.chart .main-svg').length > 0 ?
      Array.from(document.querySelectorAll('figure.chart')).filter(f => f.querySelector('.main-svg')).length : 0,
    svgMarkup: document.querySelectorAll('.main-svg a, .main-svg img, .main-svg script, .main-svg foreignObject, .main-svg iframe').length,
    svgText: Array.from(document.querySelectorAll('.main-svg text')).map(t => t.textContent).join('\\n'),
    hover: hover,
    text: document.body.innerText,
    title: document.title,
    h1: document.querySelector('h1').textContent,
  };
}"""


@pytest.mark.browser
def test_nothing_executes_and_layout_holds_in_chromium(hostile, tmp_path):
    report = hostile / "report.html"
    page = visit(report, screenshot=tmp_path / "hostile.png", probe=PROBE)
    dom = page.dom
    assert dom["pwned"] == "undefined"
    assert page.dialogs == []
    assert page.console_errors == []
    assert page.requests == [report.resolve().as_uri()]  # no <img src=x>, nothing fetched
    # shown as text, verbatim
    assert dom["h1"] == JOB
    assert JOB in dom["title"]
    for payload in PAYLOADS + [LONG]:
        assert payload in dom["text"], payload[:40]
    # charts drawn, their labels and hover boxes are text too, with no live markup inside the plots
    assert dom["drawn"] == dom["charts"] >= 15
    assert dom["svgMarkup"] == 0
    assert "<script>window.PWNED=1</script>" in dom["svgText"]
    hover = "\n".join(dom["hover"])
    assert len(dom["hover"]) >= 20
    assert "<img src=x onerror=\"window.PWNED=2\">" in hover or "<script>window.PWNED=1</script>" in hover
    # the 10,000-character names wrap or scroll inside their box: the page keeps the window's width
    assert dom["scrollWidth"] <= dom["innerWidth"]
    assert dom["overflowing"] == []
    assert dom["cellsOverflowing"] == []  # no name runs over the next cells of its table


@pytest.mark.browser
def test_nothing_loads_without_javascript(hostile):
    report = hostile / "report.html"
    page = visit(report, javascript=False, probe="() => ({w: document.documentElement.scrollWidth, iw: window.innerWidth})")
    assert page.requests == [report.resolve().as_uri()]
    assert page.console_errors == [] and page.dialogs == []
    assert page.dom["w"] <= page.dom["iw"]


def test_report_json_keeps_the_names_verbatim(hostile):
    data = json.loads((hostile / "report.json").read_text(encoding="utf-8"))
    assert data["job"]["name"] == JOB
    text = json.dumps(data, ensure_ascii=False)
    for payload in (PAYLOADS[0], PAYLOADS[1], PAYLOADS[2], LONG):
        assert json.dumps(payload, ensure_ascii=False)[1:-1] in text


def test_markdown_summary_is_inert(hostile):
    summary = (hostile / "summary.md").read_text(encoding="utf-8")
    for raw in ("<script", "<img", "<svg", "</table", "<a ", "[x](javascript:"):
        assert raw not in summary, raw
    assert "\\[x\\](javascript:window.PWNED=8)" in summary  # link syntax escaped: plain text
    table = [line for line in summary.splitlines() if line.startswith("| ") and "36.75" in line]
    assert table and all(line.count(" | ") - line.count("\\|") == 6 for line in table)  # pipes in names escaped
    assert "&lt;img src=x onerror=&quot;window.PWNED=2&quot;&gt;" in summary


def test_junit_parses_and_carries_the_job_name_as_text(hostile):
    tree = ET.parse(hostile / "junit.xml")
    props = {p.get("name"): p.get("value") for p in tree.getroot().iter("property")}
    assert props["job"] == JOB
