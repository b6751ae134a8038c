"""Fuzzing what users download from other people's jobs, end to end (issue #20):

* mutated rule outputs (a real job's eleven, one field or subtree replaced by a hostile value: wrong
  types, NaN, 401-digit integers, nesting 100,000 deep, a BOM, hostile strings) are loaded, the report is
  built, **every section is rendered to HTML** (the blocks the notebook renders), and report.json is
  written: no exception but a one-line ``InputError``; report.json stays valid JSON;
* mutated report.json files go through ``reportgen check --junit --markdown`` (the real CLI entry, in
  process): exit 0 or 1, or 2 with one line on stderr, never 3.

Each property reports how many cases it ran (``-s`` shows it; the numbers are in docs/reliability.md).
Bounded for CI by ``REPORTGEN_FUZZ_EXAMPLES`` (default 40 per property); run longer with e.g.
``REPORTGEN_FUZZ_EXAMPLES=2000``.
"""

from __future__ import annotations

import io
import json
import os
import contextlib
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from reportgen.errors import InputError  # noqa: E402
from tests.support.corpus.make_corpus import rule_outputs  # noqa: E402

EXAMPLES = int(os.environ.get("REPORTGEN_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
DEEP = "__DEEP_NESTING__"
HOSTILE = ["", "@everyone https://evil.example www.evil.example", "<script>window.PWNED=1</script>",
           "line\nbreak \u202eevil", "\ufeff", "/home/user/secret/path", "| --- |", "NaN"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.sampled_from([10**400, -10**400]),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12), st.sampled_from(HOSTILE),
                    st.just(DEEP))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=8)


def _paths(doc, prefix=()):
    """Every path to a value in ``doc`` (the whole document included)."""
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, prefix + (i,))


def _replace(doc, path, value):
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return doc


def _dump(doc) -> bytes:
    """JSON text of ``doc`` as a writer with no scruples writes it: NaN bare, the deep marker as 100,000
    nested arrays."""
    text = json.dumps(doc, allow_nan=True)
    return text.replace(json.dumps(DEEP), "[" * 100_000 + "]" * 100_000).encode("utf-8")


def _mutate(doc, data) -> object:
    paths = list(_paths(doc))
    for _ in range(data.draw(st.integers(1, 3))):
        path = paths[data.draw(st.integers(0, len(paths) - 1))]
        doc = _replace(doc, path, data.draw(values))
        paths = list(_paths(doc))
    return doc


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    """A real job's rule outputs (made by reportgen's engine) and its report.json."""
    from reportgen.notebook import open_report

    root = tmp_path_factory.mktemp("fuzz-job")
    folder = rule_outputs(root)
    open_report(str(folder), standalone=True).save_json(root / "report")
    return root


def _render_everything(folder: Path) -> None:
    from reportgen.notebook import open_report
    from reportgen.render.blocks import render_header, render_section

    session = open_report(str(folder), standalone=True)
    page = [render_header(session.report, session.generated_at, "fuzz")]
    page += [render_section(s) for s in session.report.sections]
    assert all(isinstance(part, str) and part for part in page)
    out = folder.parent / "out"
    report_json = session.save_json(out)
    json.loads(report_json.read_text(encoding="utf-8"))  # valid JSON (NaN is not: allow_nan=False)


def test_rendering_mutated_rule_outputs_never_crashes(job, tmp_path_factory):
    originals = {p.name: json.loads(p.read_text()) for p in sorted((job / "profiler-reports").glob("*.json"))}
    counts = {"cases": 0, "rendered": 0, "input_error": 0}

    @FUZZ
    @given(data=st.data())
    def case(data):
        counts["cases"] += 1
        root = tmp_path_factory.mktemp("case")
        folder = root / "profiler-reports"
        folder.mkdir()
        victims = data.draw(st.lists(st.sampled_from(sorted(originals)), min_size=1, max_size=3, unique=True))
        for name, doc in originals.items():
            if name in victims:
                raw = _dump(_mutate(json.loads(json.dumps(doc)), data))
                if data.draw(st.booleans()):
                    raw = b"\xef\xbb\xbf" + raw
            else:
                raw = json.dumps(doc).encode()
            (folder / name).write_bytes(raw)
        try:
            _render_everything(folder)
        except InputError as err:
            assert "\n" not in str(err)
            counts["input_error"] += 1
            return
        counts["rendered"] += 1

    case()
    print(f"mutated rule outputs: {counts['cases']} cases, {counts['rendered']} rendered to HTML, "
          f"{counts['input_error']} one-line input errors")
    assert counts["cases"] >= min(EXAMPLES, 10) and counts["rendered"] > 0


def test_check_on_mutated_report_json_never_exits_3(job, tmp_path_factory):
    from reportgen import cli

    original = json.loads((job / "report" / "report.json").read_text())
    counts = {"cases": 0, 0: 0, 1: 0, 2: 0}

    @FUZZ
    @given(data=st.data())
    def case(data):
        counts["cases"] += 1
        root = tmp_path_factory.mktemp("check")
        raw = _dump(_mutate(json.loads(json.dumps(original)), data))
        if data.draw(st.booleans()):
            raw = b"\xef\xbb\xbf" + raw
        (root / "report.json").write_bytes(raw)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = cli.main(["check", str(root / "report.json"), "--junit", str(root / "j.xml"), "--markdown",
                             str(root / "s.md"), "--no-step-summary", "--fail-on", "any", "-q"])
        assert code in (0, 1, 2), err.getvalue()
        if code == 2:
            assert len(err.getvalue().splitlines()) == 1 and err.getvalue().startswith("reportgen: error: ")
            assert not (root / "j.xml").exists() and not (root / "s.md").exists()
        else:
            assert (root / "j.xml").is_file() and (root / "s.md").is_file()
        counts[code] += 1

    case()
    print(f"mutated report.json through check: {counts['cases']} cases, exit 0: {counts[0]}, exit 1: {counts[1]}, "
          f"exit 2: {counts[2]}")
    assert counts["cases"] >= min(EXAMPLES, 10)


DAMAGED = {  # issue #20 item 4: 5 of 8 such cases exited 3
    "job is a list": lambda d: d.update(job=[]),
    "job is a string": lambda d: d.update(job="x"),
    "a section is a list": lambda d: d["sections"].update({"rules-summary-section": [1, 2]}),
    "generator is a number": lambda d: d.update(generator=7),
    "diagnosis is a string": lambda d: d.update(diagnosis="x"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_check_on_damaged_report_json_is_one_line_exit_2(job, tmp_path, damage, capsys):
    from reportgen import cli

    data = json.loads((job / "report" / "report.json").read_text())
    DAMAGED[damage](data)
    (tmp_path / "report.json").write_text(json.dumps(data))
    code = cli.main(["check", str(tmp_path / "report.json"), "--junit", str(tmp_path / "j.xml"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "damaged report.json" in err, err
    assert not (tmp_path / "j.xml").exists()


@pytest.mark.parametrize("raw", ["huge", "deep"])
def test_check_on_report_json_with_a_401_digit_count_or_deep_nesting_is_exit_2(job, tmp_path, raw, capsys):
    from reportgen import cli

    text = (job / "report" / "report.json").read_text()
    if raw == "huge":
        text = text.replace('"times_triggered": ', '"times_triggered": 1' + "0" * 400 + ', "was": ', 1)
        want = "an integer of 401 digits"
    else:
        text = text.rstrip()[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
        want = "nested deeper than 64 levels"
    (tmp_path / "report.json").write_text(text)
    code = cli.main(["check", str(tmp_path / "report.json"), "--markdown", str(tmp_path / "s.md"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and want in err, err


def test_check_reads_a_report_json_with_a_byte_order_mark(job, tmp_path, capsys):
    """Issue #20 item 5: a report.json saved with a UTF-8 BOM was 'malformed JSON'."""
    from reportgen import cli

    (tmp_path / "report.json").write_bytes(b"\xef\xbb\xbf" + (job / "report" / "report.json").read_bytes())
    assert cli.main(["check", str(tmp_path / "report.json"), "--markdown", str(tmp_path / "s.md"), "-q"]) == 0
    assert (tmp_path / "s.md").read_text().startswith("## Profiling report")
