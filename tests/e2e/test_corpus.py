"""The bad-input corpus (tests/support/corpus/make_corpus.py): every case gives its expected outcome.

For each case: no traceback; the exit code; exit 2 -> exactly one line on stderr naming the reason and
no output left behind; exit 0 -> report.json and the HTML list every problem in "Data quality" (counts by
reason, a capped list with file, line and reason); every valid record planted is used (records lost = 0).
A few cases also run through ``python -m reportgen generate`` in a subprocess, papermill included.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markupsafe import escape

from tests.support.corpus.make_corpus import CASES, build
from tests.support.corpus.runner import records_used, run_cli, run_in_process

MAX_LISTED = 200


def problems_match(found: dict, expected: dict) -> bool:
    """Exact counts by reason; an expected reason ending in ``*`` matches one found reason by prefix."""
    found = dict(found)
    for reason, count in expected.items():
        if reason.endswith("*"):
            hits = [r for r in found if r.startswith(reason[:-1])]
            if len(hits) != 1:
                return False
            reason = hits[0]
        if found.pop(reason, None) != count:
            return False
    return not found


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    return root, build(root)


def test_corpus_has_at_least_40_cases_covering_every_kind(corpus):
    _, manifest = corpus
    assert len(manifest) >= 40
    prefixes = {name.split("_")[0] for name in manifest}
    assert {"sys", "fw", "tf", "kineto", "rules"} <= prefixes
    assert {"vanish", "readonly-output", "disk-full"} <= {(m.get("hook") or "").split(":")[0] for m in manifest.values()}
    assert {0, 2} <= {m["exit"] for m in manifest.values()}
    assert all(m["doc"] for m in manifest.values())


@pytest.mark.parametrize("name", list(CASES))
def test_case(corpus, name, tmp_path):
    root, manifest = corpus
    expected = manifest[name]
    source = root / name
    out = tmp_path / "out" / "report.html"
    outcome = run_in_process(source, out, expected.get("hook"), source, expected.get("args"))

    assert outcome.traceback is None, outcome.traceback
    assert outcome.exit == expected["exit"], outcome.stderr
    if expected["exit"] != 0:
        lines = outcome.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("reportgen: error: "), outcome.stderr
        assert expected["error"] in lines[0]
        assert outcome.report is None and outcome.html is None
        assert outcome.leftovers == []  # no temporary or half-written file
    else:
        assert outcome.stderr == ""
        assert outcome.leftovers == []
        _check_data_quality(outcome, expected)

    used = records_used(source, expected.get("hook"))
    for key in ("system_values", "events", "kineto_events", "rules"):
        if expected.get(key) is not None and expected["exit"] == 0:
            assert used.get(key, 0) == expected[key], (key, used)


def _check_data_quality(outcome, expected):
    dq = outcome.data_quality
    raw = dq.get("raw_data") or {"total": 0, "by_reason": {}, "listed": 0, "problems": []}
    assert problems_match(raw["by_reason"], expected.get("problems", {})), raw["by_reason"]
    total = sum(raw["by_reason"].values())
    assert raw["total"] == total
    # one listed entry per problem found (a run of duplicates found together is one entry), capped
    assert raw["listed"] == len(raw["problems"]) <= min(total, MAX_LISTED)
    if total <= MAX_LISTED:
        assert {p["reason"] for p in raw["problems"]} == set(raw["by_reason"])
    else:
        assert raw["listed"] == MAX_LISTED
    for problem in raw["problems"]:
        assert set(problem) == {"file", "line", "reason"} and problem["reason"] in raw["by_reason"]
        assert problem["line"] is None or problem["line"] >= 1
    for note in expected.get("notes", []):
        assert any(note in n for n in outcome.notes), (note, outcome.notes)
    assert dq["problems"] == total + len(outcome.notes)
    page = outcome.html
    assert 'id="sec-data-quality"' in page
    section = page.split('id="sec-data-quality"', 1)[1]
    for reason, count in raw["by_reason"].items():
        assert f"{escape(reason)}</td><td class=\"fmt-int\">{count}</td>" in section, reason
    if total > MAX_LISTED:
        assert f"The first {MAX_LISTED} of {total} problems" in section
    for note in outcome.notes:
        assert escape(note) in section
    for text in expected.get("html_absent", []):  # impossible numbers must not be shown as facts
        assert text not in page, text
    if not total and not outcome.notes:
        assert "Every input file was read completely" in section


CLI_CASES = [name for name, spec in CASES.items() if spec.get("cli")]


@pytest.mark.parametrize("name", CLI_CASES)
def test_case_through_the_command_line(corpus, name, tmp_path):
    """A real `python -m reportgen generate` (papermill + nbconvert): same outcome as in-process."""
    root, manifest = corpus
    expected = manifest[name]
    out = tmp_path / "out" / "report.html"
    outcome = run_cli(root / name, out)
    assert "Traceback" not in outcome.stderr
    assert outcome.exit == expected["exit"], outcome.stderr
    if expected["exit"] == 0:
        assert outcome.stderr == ""
        raw = outcome.data_quality.get("raw_data") or {"by_reason": {}}
        assert problems_match(raw["by_reason"], expected.get("problems", {}))
        for note in expected.get("notes", []):
            assert any(note in n for n in outcome.notes)
        assert 'id="sec-data-quality"' in outcome.html
        assert outcome.leftovers == []
    else:
        assert len(outcome.stderr.splitlines()) == 1 and expected["error"] in outcome.stderr


def test_corpus_generator_is_deterministic(tmp_path):
    a = build(tmp_path / "a")
    b = build(tmp_path / "b")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    for name in ("sys_non_utf8", "fw_truncated_array", "tf_broken_gz", "kineto_broken_gz"):
        files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a" / name).rglob("*") if p.is_file())
        for rel in files_a:
            assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()


def _gunzipped_bytes(path: Path) -> int:
    from reportgen.traces.gunzip import GunzipStream

    with open(path, "rb") as fh:
        return len(GunzipStream(fh).read())


STREAMABLE = [name for name in CASES if name.split("_")[0] in ("fw", "tf", "kineto") and not CASES[name].get("hook")]


@pytest.mark.parametrize("name", STREAMABLE)
def test_trace_case_streamed(corpus, name, tmp_path, monkeypatch):
    """The same trace cases with every trace, plain or gzip'd, decoded event by event (the path of
    traces above REPORTGEN_STREAM_TRACE_MB): the same problems and the same records used."""
    from reportgen.traces import read as trace_read

    monkeypatch.setenv("REPORTGEN_STREAM_TRACE_MB", "0")
    streamed, whole = [], []  # files the trace layer streamed / read whole
    real_finish = trace_read.TraceRead.finish
    monkeypatch.setattr(trace_read.TraceRead, "finish",
                        lambda self, *a: ((streamed if self.streamed else whole).append(self.path),
                                          real_finish(self, *a))[1])
    root, manifest = corpus
    expected = manifest[name]
    source = root / name
    outcome = run_in_process(source, tmp_path / "out" / "report.html", None, source)
    assert outcome.traceback is None, outcome.traceback
    assert outcome.exit == expected["exit"], outcome.stderr
    _check_data_quality(outcome, expected)
    non_empty = [p for p in source.rglob("*.json*") if p.stat().st_size and p.parent.name != "profiler-reports"]
    traces = {p for p in non_empty if "framework" in p.parts or ".pt.trace.json" in p.name}
    # Every trace with any text is streamed; one whose gzip stream yields nothing is judged whole.
    assert traces <= set(map(Path, streamed)) | set(map(Path, whole))
    assert all(p.name.endswith(".gz") and _gunzipped_bytes(p) == 0 for p in traces - set(map(Path, streamed)))
    if name.startswith("tf_") or name == "kineto_broken_gz":
        assert any(p.name.endswith(".gz") for p in traces)
    used = records_used(source)
    for key in ("events", "kineto_events"):
        if expected.get(key) is not None:
            assert used.get(key, 0) == expected[key], (key, used)
