"""The page cache through ``generate`` and ``compare`` (render/page_cache.py): the run that fills it and the run it
serves write the page and report.json (compare.json) of a run without it, byte for byte but for each run's own
time, and the served run executes no notebook and, told by the forecast, starts no worker; a changed input of the
page makes it again."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from reportgen import pipeline
from reportgen.pipeline import GenerateOptions, SourceOptions, generate
from reportgen.render.process import NotebookProcess
from tests.support.paths import ROOT

TRACES = sorted((ROOT / "tests" / "recordings" / "gpu-input").glob("w*/*.pt.trace.json.gz"))
STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")


def _run(source: Path, out: Path, cache: Path, job_name: str = "") -> tuple[str, str]:
    out.mkdir()
    generate(str(source), out / "report.html", GenerateOptions(source=SourceOptions(cache_dir=cache),
                                                               job_name=job_name))
    html, report = (out / "report.html").read_text(), (out / "report.json").read_text()
    times = set(STAMP.findall(report))
    assert len(times) == 1 and f"Generated {times.pop()}" in html  # the run's own time, the same in both
    return STAMP.sub("TIME", html), STAMP.sub("TIME", report)


def test_a_served_page_is_the_made_one_and_executes_no_notebook(tmp_path, monkeypatch):
    source = tmp_path / "job"
    source.mkdir()
    for trace in TRACES:
        shutil.copyfile(trace, source / trace.name)
    monkeypatch.setenv("REPORTGEN_PAGE_CACHE", "0")
    reference = _run(source, tmp_path / "off", tmp_path / "cache")
    monkeypatch.delenv("REPORTGEN_PAGE_CACHE")
    assert _run(source, tmp_path / "filled", tmp_path / "cache") == reference
    entries = list((tmp_path / "cache" / "traces").glob("*.page"))
    assert len(entries) == 1

    def refuse(self, *args, **kwargs):
        raise AssertionError("a served page executed the notebook")
    started: list = []

    def recording(work_dir, notice=None, in_process=False, template_folder=None):
        started.append(in_process)
        return NotebookProcess(work_dir, notice, in_process, template_folder)
    with monkeypatch.context() as patched:
        patched.setattr(NotebookProcess, "render", refuse)
        patched.setattr(pipeline, "NotebookProcess", recording)
        assert _run(source, tmp_path / "served", tmp_path / "cache") == reference
        with pytest.raises(AssertionError, match="executed the notebook"):  # another job name: made again
            _run(source, tmp_path / "renamed", tmp_path / "cache", job_name="other")
    assert started == [True, False]  # the forecast: no worker where the page is kept, one for another job name
    renamed = _run(source, tmp_path / "renamed2", tmp_path / "cache", job_name="other")
    assert renamed != reference and len(list((tmp_path / "cache" / "traces").glob("*.page"))) == 2


def _compare(a: Path, b: Path, out: Path, cache: Path, force: bool = False) -> tuple[str, str]:
    from reportgen.compare.run import CompareOptions, compare

    out.mkdir()
    compare(str(a), str(b), out / "compare.html", CompareOptions(source=SourceOptions(cache_dir=cache), force=force))
    html, data = (out / "compare.html").read_text(), (out / "compare.json").read_text()
    times = set(STAMP.findall(data))
    assert len(times) == 1 and times <= set(STAMP.findall(html))  # the run's own time, the same in both
    return STAMP.sub("TIME", html), STAMP.sub("TIME", data)


def test_a_served_comparison_is_the_made_one_and_executes_no_notebook(tmp_path, monkeypatch):
    """compare's page and compare.json, kept as generate's are: the sides' traces read through the trace cache, the
    page from the page cache, no notebook executed and, told by the forecast, no worker started."""
    a, b = tmp_path / "a", tmp_path / "b"
    for side, trace in ((a, TRACES[0]), (b, TRACES[1])):
        side.mkdir()
        shutil.copyfile(trace, side / trace.name)
    monkeypatch.setenv("REPORTGEN_PAGE_CACHE", "0")
    reference = _compare(a, b, tmp_path / "off", tmp_path / "cache")
    monkeypatch.delenv("REPORTGEN_PAGE_CACHE")
    assert _compare(a, b, tmp_path / "filled", tmp_path / "cache") == reference
    assert len(list((tmp_path / "cache" / "traces").glob("*.page"))) == 1

    def refuse(self, *args, **kwargs):
        raise AssertionError("a served comparison executed the notebook")
    started: list = []

    def recording(work_dir, notice=None, in_process=False):
        started.append(in_process)
        return NotebookProcess(work_dir, notice, in_process)
    with monkeypatch.context() as patched:
        patched.setattr(NotebookProcess, "render", refuse)
        patched.setattr("reportgen.render.process.NotebookProcess", recording)
        assert _compare(a, b, tmp_path / "served", tmp_path / "cache") == reference
        with pytest.raises(AssertionError, match="executed the notebook"):  # --force: another page, made again
            _compare(a, b, tmp_path / "forced", tmp_path / "cache", force=True)
        with pytest.raises(AssertionError, match="executed the notebook"):  # the sides swapped: made again
            _compare(b, a, tmp_path / "swapped", tmp_path / "cache")
    assert started == [True, False, False]  # no worker where the page is kept, one for each other page


def _compare_md(a: Path, b: Path, out: Path, cache: Path, force: bool = False) -> tuple[str, str]:
    from reportgen.compare.run import CompareOptions, compare

    out.mkdir()
    compare(str(a), str(b), out / "compare.md", CompareOptions(source=SourceOptions(cache_dir=cache), fmt="md",
                                                               force=force))
    text, data = (out / "compare.md").read_text(), (out / "compare.json").read_text()
    times = set(STAMP.findall(data))
    assert len(times) == 1 and f"Generated {times.pop()}" in text  # the run's own time, the same in both
    return STAMP.sub("TIME", text), STAMP.sub("TIME", data)


def test_a_served_markdown_comparison_is_the_made_one_and_builds_nothing(tmp_path, monkeypatch):
    """``compare --format md`` kept as the HTML page is: the run filling the cache and the run it serves write what a
    run without it writes; the served one builds no comparison; --force or the sides swapped make it again; the
    HTML page of the same sides is another entry."""
    from reportgen.compare import session

    a, b = tmp_path / "a", tmp_path / "b"
    for side, trace in ((a, TRACES[0]), (b, TRACES[1])):
        side.mkdir()
        shutil.copyfile(trace, side / trace.name)
    monkeypatch.setenv("REPORTGEN_PAGE_CACHE", "0")
    reference = _compare_md(a, b, tmp_path / "off", tmp_path / "cache")
    monkeypatch.delenv("REPORTGEN_PAGE_CACHE")
    assert "## Comparison:" in reference[0] and '"generated_at": "TIME"' in reference[1]
    assert _compare_md(a, b, tmp_path / "filled", tmp_path / "cache") == reference
    assert len(list((tmp_path / "cache" / "traces").glob("*.page"))) == 1
    assert not list((tmp_path / "cache" / "traces").glob("*.page-hint"))  # no worker to forecast for Markdown

    def refuse(*args, **kwargs):
        raise AssertionError("a served comparison was built")
    with monkeypatch.context() as patched:
        patched.setattr(session, "open_comparison", refuse)
        assert _compare_md(a, b, tmp_path / "served", tmp_path / "cache") == reference
        with pytest.raises(AssertionError, match="was built"):  # --force: another comparison, built again
            _compare_md(a, b, tmp_path / "forced", tmp_path / "cache", force=True)
        with pytest.raises(AssertionError, match="was built"):  # the sides swapped: built again
            _compare_md(b, a, tmp_path / "swapped", tmp_path / "cache")
    html, data = _compare(a, b, tmp_path / "html", tmp_path / "cache")  # the HTML page: its own entry
    assert data == reference[1] and len(list((tmp_path / "cache" / "traces").glob("*.page"))) == 2
