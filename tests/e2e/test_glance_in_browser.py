"""At a glance, as a reader sees it: status, the top finding and its fix on the first screen (1400×900)."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import visit

FIRST_SCREEN = 900
GLANCE_PROBE = """() => {
  const box = e => e ? e.getBoundingClientRect() : null;
  const g = document.querySelector('#at-a-glance');
  const first = g && g.querySelector('.glance-finding');
  const parts = first ? ['.gf-title', '.gf-impact', '.gf-evidence', '.gf-fix'].map(s => first.querySelector(s)) : [];
  return {
    width: document.documentElement.clientWidth,
    glanceTop: g ? box(g).top : null,
    firstSection: box(document.querySelector('section.report-section')).top,
    status: g ? g.querySelector('.glance-status').dataset.status : null,
    statusText: g ? g.querySelector('.badge').innerText : '',
    statusBottom: g ? box(g.querySelector('.glance-status')).bottom : null,
    cause: first ? first.dataset.cause : null,
    bottoms: parts.map(p => p ? box(p).bottom : null),
    fix: first ? first.querySelector('.gf-fix').innerText : '',
    visible: parts.every(p => p && p.offsetHeight > 0),
    links: first ? Array.from(first.querySelectorAll('.gf-links a')).map(a => a.getAttribute('href')) : [],
    targets: first ? Array.from(first.querySelectorAll('.gf-links a')).every(
      a => document.getElementById(a.getAttribute('href').slice(1))) : false,
  };
}"""


@pytest.mark.browser
@pytest.mark.parametrize("javascript", [True, False])
def test_status_top_finding_and_fix_fit_the_first_screen(sample_report, tmp_path, javascript):
    page = visit(sample_report, javascript=javascript, probe=GLANCE_PROBE, screenshot=tmp_path / "glance.png")
    dom = page.dom
    assert page.console_errors == [] and dom["width"] <= 1400
    data = json.loads(sample_report.with_suffix(".json").read_text(encoding="utf-8"))
    assert dom["status"] == data["diagnosis"]["status"] == "problems" and dom["statusText"] == "Problems found"
    assert dom["cause"] == data["diagnosis"]["findings"][0]["cause"] == "input-pipeline"
    assert dom["visible"]
    assert dom["glanceTop"] < dom["firstSection"]  # above every section of the report
    assert max(dom["bottoms"] + [dom["statusBottom"]]) <= FIRST_SCREEN, dom["bottoms"]
    assert dom["fix"].startswith("Fix: The cores are the limit: 4 cores per node leave 1 data-loading worker to each of 2 training processes")
    assert dom["links"] and dom["targets"]  # the deep dives it names exist on the page


STORY_PROBE = """() => {
  const advice = Array.from(document.querySelectorAll('section.report-section p.text'))
    .filter(p => /smaller instance/i.test(p.innerText) && !p.classList.contains('tone-note'));
  const unmarked = advice.filter(p => !/\\[Superseded by At a glance: [^\\]]+\\]/.test(p.innerText)).map(p => p.innerText);
  const links = [];
  document.querySelectorAll('#at-a-glance .glance-finding').forEach(f => {
    const title = f.querySelector('.gf-title strong').innerText;
    f.querySelectorAll('.gf-links a').forEach(a => {
      const target = document.getElementById(a.getAttribute('href').slice(1));
      const notes = target ? Array.from(target.querySelectorAll('p.tone-note')).map(n => n.innerText) : [];
      const noted = notes.some(n => n.startsWith('At a glance links here for \u201c' + title + '\u201d'));
      const fired = !!(target && target.querySelector('.verdict-finding'));  // a rule's deep dive that fired
      const data = !!(target && !target.classList.contains('deep-dive') && target.querySelector('figure.chart, table'));
      links.push({title, href: a.getAttribute('href'), shows: noted || fired || data, noted});
    });
  });
  return {advice: advice.length, unmarked, links};
}"""


@pytest.mark.browser
def test_the_page_below_tells_the_same_story(sample_report, tmp_path):
    """No advice that contradicts At a glance without the note beside it, and every "See ..." link of every
    finding lands on a section that shows its evidence: its data (charts, tables), the deep dive of a rule that
    fired for it, or a deep dive that opens with the finding's evidence where its rule did not fire."""
    page = visit(sample_report, javascript=True, probe=STORY_PROBE)
    dom = page.dom
    assert dom["advice"] >= 1 and dom["unmarked"] == []  # LowGPUUtilization's "smaller instance" is marked
    assert len(dom["links"]) >= 6 and all(link["shows"] for link in dom["links"]), dom["links"]
    # GPU memory's deep dive: GPUMemoryIncrease fired there, so it shows the jumps itself; step durations: the
    # StepOutlier deep dive shows the slow steps too
    assert {link["href"] for link in dom["links"]} >= {"#sec-gpu-memory", "#sec-step-duration-analysis"}
