"""One sanitiser for text from the data (issue #30 item 3) and a ``check`` that fails closed (item 4).

Terminal control sequences planted in the data (a node id holding ``ESC]0;...BEL``, ``ESC[2J``, an OSC 52
clipboard write, a bidi override) were printed raw by ``check`` (stdout), ``generate --markdown -``, the
``--fail-on`` line on stderr and ``compare --format md``. Every one runs here as a real command.
"""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import pytest

from reportgen.terminal_text import has_unsafe, printable
from tests.support.cli import run_cli
from tests.support.paths import ROOT

REPO = ROOT
SAMPLE = REPO / "sample_data"
TITLE = "\x1b]0;pwned\x07"  # retitles the terminal
CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;ZXZpbA==\x07"  # OSC 52: writes the clipboard
BIDI = "\u202egnp.exe"
C1 = "\x9b31m"  # CSI as one C1 byte


_reportgen = functools.partial(run_cli, timeout=240)


def _clean(text: str) -> bool:
    return not any(c in text for c in ("\x1b", "\x07", "\u202e", "\x9b"))


def test_printable_shows_every_control_and_bidi_character():
    assert printable(TITLE + CLEAR) == "\\x1b]0;pwned\\x07\\x1b[2J"
    assert printable(BIDI) == "\\u202egnp.exe" and printable(C1) == "\\x9b31m"
    assert printable("a\tb\nc\r") == "a\\x09b\\x0ac\\x0d"
    assert printable("a\tb\nc\r", lines=True) == "a\tb\nc\\x0d"  # a document keeps its lines
    assert printable("naïve 训练 ✓") == "naïve 训练 ✓"  # printable text is left alone
    for code in [*range(0x20), *range(0x7f, 0xa0), 0x200e, 0x200f, 0x2028, 0x2029, *range(0x202a, 0x202f),
                 *range(0x2066, 0x206a), 0x061c]:
        assert has_unsafe(chr(code)) and not has_unsafe(printable(chr(code))), hex(code)


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory, sample_report) -> Path:
    """A real report.json (the sample's, made once per session) whose job name, node and rule rows hold
    terminal control sequences."""
    folder = tmp_path_factory.mktemp("hostile")
    data = json.loads(sample_report.with_suffix(".json").read_text())
    data["job"]["name"] = TITLE + "job" + BIDI
    rows = data["sections"]["rules-summary-section"]["rows"]
    rows[0]["rule"] = rows[0]["rule"] + CLIPBOARD
    rows[0]["recommendation"] = CLEAR + "do this" + C1
    for row in data["sections"]["system-usage-statistics"]["rows"]:
        row["node"] = CLEAR + str(row["node"])
    path = folder / "hostile.json"
    path.write_text(json.dumps(data))
    return path


def test_check_prints_the_summary_with_the_controls_shown(hostile_report):
    proc = _reportgen("check", hostile_report)
    assert proc.returncode == 0, proc.stderr
    assert _clean(proc.stdout) and _clean(proc.stderr)
    assert "\\\\x1b\\]0;pwned\\\\x07job\\\\u202egnp.exe" in proc.stdout  # shown (and Markdown-escaped)
    assert "\\\\x1b\\[2J" in proc.stdout and "\\\\x1b\\]52;c;ZXZpbA==\\\\x07" in proc.stdout


def test_fail_on_line_on_stderr_shows_the_controls(hostile_report, tmp_path):
    proc = _reportgen("check", hostile_report, "--fail-on", "any", "--junit", tmp_path / "j.xml",
                      "--markdown", tmp_path / "s.md")
    assert proc.returncode == 1, proc.stderr
    assert _clean(proc.stderr) and "\\x1b]52;c;ZXZpbA==\\x07" in proc.stderr.splitlines()[-1]
    assert _clean((tmp_path / "j.xml").read_text()) and _clean((tmp_path / "s.md").read_text())


def test_generate_markdown_to_stdout_and_progress_lines(tmp_path):
    job = tmp_path / ("job" + TITLE + BIDI)
    job.symlink_to(SAMPLE)
    proc = _reportgen("generate", job, "-o", tmp_path / "r.html", "--markdown", "-", "--job-name", "job" + TITLE + BIDI)
    assert proc.returncode == 0, proc.stderr
    assert _clean(proc.stdout) and _clean(proc.stderr)
    assert "job\\\\x1b\\]0;pwned\\\\x07\\\\u202egnp.exe" in proc.stdout
    assert "job\\x1b]0;pwned\\x07\\u202egnp.exe" in proc.stderr  # the progress lines name the folder, shown


def test_compare_markdown_shows_the_controls(tmp_path):
    a, b = tmp_path / ("a" + CLEAR), tmp_path / ("b" + CLIPBOARD + BIDI)
    shutil.copytree(SAMPLE, a)  # a copy: a job is named after its folder's real name
    shutil.copytree(SAMPLE, b)
    out = tmp_path / "c.md"
    proc = _reportgen("compare", a, b, "--format", "md", "-o", out)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text(encoding="utf-8")
    assert _clean(text) and _clean(proc.stderr)
    assert "a\\\\x1b\\[2J" in text and "\\u202e" in text
    assert " -0 s" not in text


# ---------------------------------------------------------------------------------------- check fails closed


def _damaged(tmp_path: Path, hostile_report: Path, change) -> Path:
    data = json.loads(hostile_report.read_text())
    change(data)
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(data))
    return path


def _rows(data):
    return data["sections"]["rules-summary-section"]


@pytest.mark.parametrize("change, words", [
    (lambda d: _rows(d).__setitem__("rows", [1, "x", None]), "rules summary row 1 is a number, not an object"),
    (lambda d: d["sections"].pop("rules-summary-section"), "rules-summary-section) is missing"),
    (lambda d: _rows(d).__setitem__("rows", []), "has no rows"),
    (lambda d: _rows(d).pop("rows"), "has no rows"),
    (lambda d: _rows(d)["rows"][1].__setitem__("times_triggered", "20"), 'times_triggered is "20", not a count'),
    (lambda d: _rows(d)["rows"][1].__setitem__("times_triggered", -1), "times_triggered is -1, not a count"),
    (lambda d: _rows(d)["rows"][1].__setitem__("datapoints", None), "datapoints is null, not a count"),
    (lambda d: _rows(d)["rows"][2].__setitem__("rule", ""), "row 3 has no rule name"),
    (lambda d: _rows(d)["rows"][2].__setitem__("status", "maybe"), 'unknown status "maybe"'),
], ids=["rows-garbage", "section-removed", "rows-empty", "rows-removed", "count-string", "count-negative",
        "count-null", "rule-empty", "status-unknown"])
def test_check_fails_closed_on_a_damaged_rules_table(tmp_path, hostile_report, change, words):
    path = _damaged(tmp_path, hostile_report, change)
    proc = _reportgen("check", path, "--fail-on", "any", "--junit", tmp_path / "j.xml")
    assert proc.returncode == 2, proc.stderr  # was 0, with a JUnit file of 0 tests
    line, = proc.stderr.strip().splitlines()
    assert line.startswith(f"reportgen: error: {path}: damaged report.json: ") and words in line, line
    assert not (tmp_path / "j.xml").exists()


def test_a_rules_table_that_says_it_is_unavailable_is_not_damaged(tmp_path, hostile_report):
    path = _damaged(tmp_path, hostile_report, lambda d: d["sections"].__setitem__(
        "rules-summary-section", {"available": False}))
    proc = _reportgen("check", path, "--fail-on", "any")
    assert proc.returncode == 0, proc.stderr
    assert "No rule outputs were found." in proc.stdout


def test_a_cause_delta_below_a_second_is_in_ms_and_zero_is_0_s():
    from reportgen.compare.sections.causes import delta_text

    assert [delta_text(d) for d in (-0.3, -0.0, 0.0, 0.4, 12.6, -3.2, 0.0123)] == [
        "-300 ms", "0 s", "0 s", "+400 ms", "+13 s", "-3 s", "+12.3 ms"]
