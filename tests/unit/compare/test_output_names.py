"""An explicit --format writes a file named for that format, never over another format's page (#49)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen import cli
from reportgen.compare.output_name import page_path
from reportgen.errors import InputError


def test_the_default_page_is_named_for_its_format():
    assert page_path(None, "html", "compare") == Path("compare.html")
    assert page_path(None, "md", "compare") == Path("compare.md")
    assert page_path(None, "md", "trend") == Path("trend.md")
    assert page_path("-", "md", "trend") == "-" and page_path("out/c.txt", "md", "compare") == Path("out/c.txt")
    assert page_path("c.MD", "md", "compare") == Path("c.MD")


@pytest.mark.parametrize("name, fmt", [("compare.html", "md"), ("t.HTM", "md"), ("c.md", "html"),
                                       ("c.markdown", "html")])
def test_a_name_for_the_other_format_is_refused(name, fmt):
    with pytest.raises(InputError, match=f"-o {name}: --format {fmt} writes"):
        page_path(name, fmt, "compare")


def _report(path: Path) -> str:
    path.write_text(json.dumps({"schema_version": "1.1", "job": {"name": path.stem},
                                "sections": {"rules-summary-section": {"available": False},
                                             "training-job-summary": {"job_duration_s": 60}}}), encoding="utf-8")
    return str(path)


def test_trend_md_next_to_trend_html_leaves_the_page_alone(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    reports = [_report(tmp_path / "a.json"), _report(tmp_path / "b.json")]
    assert cli.main(["trend", *reports, "-q"]) == 0
    page = (tmp_path / "trend.html").read_text(encoding="utf-8")
    assert cli.main(["trend", *reports, "--format", "md", "-q"]) == 0
    assert (tmp_path / "trend.html").read_text(encoding="utf-8") == page
    assert (tmp_path / "trend.md").read_text(encoding="utf-8").startswith("## Trend of 2 runs")
    assert cli.main(["trend", *reports, "--format", "md", "-o", "trend.html"]) == 2
    assert "give a .md name" in capsys.readouterr().err
    assert (tmp_path / "trend.html").read_text(encoding="utf-8") == page


def test_compare_refuses_markdown_into_an_html_name_before_any_work(tmp_path, capsys):
    code = cli.main(["compare", str(tmp_path / "missing-a"), str(tmp_path / "missing-b"), "-o",
                     str(tmp_path / "compare.html"), "--format", "md"])
    err = capsys.readouterr().err
    assert code == 2 and "--format md writes Markdown" in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
