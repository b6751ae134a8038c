"""The regression gate fails closed (issue #49 item 3, #50 item 2): what it cannot judge is "cannot judge: why"
and a failed gate unless ``--allow-unjudged``; a small sample is judged with the interval it has; every number
it gates on is checked before it is read (a damaged report.json is one line, exit 2, never a traceback)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from reportgen import cli
from reportgen.ci_outputs import ExtraCase, junit_xml
from reportgen.compare.regression import MIN_STEPS, gated_numbers_problem, judge

EDGES = [round(0.05 + 0.002 * i, 6) for i in range(101)]  # 0.05 s to 0.25 s, 100 bins of 2 ms


def _sections(steps_s=None, duration_s=None, nodes=None) -> dict:
    """A run's report.json sections: each node's step times as StepOutlier's histogram, and the job duration."""
    sections: dict = {"rules-summary-section": {"available": False}}
    if nodes is not None:
        sections["step-duration-analysis"] = {"nodes": nodes}
    elif steps_s is not None:
        per_node = {}
        for i, times in enumerate(steps_s):
            counts, _ = np.histogram(times, bins=EDGES)
            per_node[f"rank-{i}"] = {"histogram": {"counts": counts.tolist(), "edges": EDGES}}
        sections["step-duration-analysis"] = {"nodes": per_node}
    if duration_s is not None:
        sections["training-job-summary"] = {"job_duration_s": duration_s}
    return sections


def _ranks(ms: float, seed: int, ranks: int = 2, steps: int = 6, jitter: float = 0.03) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    return [list(ms / 1000 * (1 + jitter * rng.standard_normal(steps))) for _ in range(ranks)]


def test_two_ranks_of_six_steps_twice_as_long_fail_the_gate():
    """#50's case: trace-only runs, 12 steps a side, no job duration: judged on the steps, not skipped."""
    base, slow = _sections(_ranks(80, 1)), _sections(_ranks(160, 2))
    result = judge(base, slow, 0.05)
    assert result.basis == "mean step time" and not result.unjudged
    assert result.base_steps == result.new_steps == 12 < MIN_STEPS
    assert 1.9 < result.ratio < 2.1 and result.low > 1.5 and result.tripped and result.gate() == "failed"
    assert "small sample" in result.note.lower() and "BASE 12" in result.note


def test_a_small_noise_only_pair_passes():
    result = judge(_sections(_ranks(80, 1)), _sections(_ranks(80, 3)), 0.05)
    assert result.basis == "mean step time" and result.gate() == "passed"
    assert result.low < 1 < result.high and abs(result.ratio - 1) < 0.05


CANNOT = {  # name: (BASE sections, NEW sections, words of the reason)
    "no steps, no durations": (_sections(), _sections(), "no step durations in BASE and NEW"),
    "steps removed from NEW, no durations": (_sections(_ranks(80, 1)), _sections(), "no job duration in BASE and NEW"),
    "two steps a side, no durations": (_sections([[0.08, 0.081]]), _sections([[0.16, 0.161]]), "BASE has 2 steps"),
    "base steps all 0 s": (_sections(nodes={"n": {"histogram": {"counts": [12], "edges": [0.0, 0.0]}}}),
                           _sections(_ranks(80, 1)), "the steps of BASE took 0 s"),
    "negative step times": (_sections(nodes={"n": {"histogram": {"counts": [6, 6], "edges": [-0.2, -0.1, 0.0]}}}),
                            _sections(_ranks(80, 1)), "negative step time"),
    "edges of 1e308": (_sections(nodes={"n": {"histogram": {"counts": [6, 6], "edges": [-1e308, 0.0, 1e308]}}}),
                       _sections(_ranks(80, 1)), "BASE's node n's step histogram"),
    "counts and edges that disagree": (_sections(_ranks(80, 1)),
                                       _sections(nodes={"n": {"histogram": {"counts": [6, 6], "edges": [0.1, 0.2]}}}),
                                       "NEW's node n's step histogram has 2 counts and 2 edges"),
}


@pytest.mark.parametrize("case", sorted(CANNOT))
def test_what_it_cannot_judge_fails_the_gate_unless_allowed(case):
    base, new, words = CANNOT[case]
    result = judge(base, new, 0.05)
    assert result.verdict == "cannot judge" and words in result.unjudged and not result.tripped
    assert result.gate() == "failed" and result.gate(allow_unjudged=True) == "not judged"
    assert result.summary() == f"Regression check: cannot judge: {result.unjudged}."
    assert result.markdown()[0] == "**Regression gate: cannot judge (failed)**"
    assert result.markdown(True)[0] == "**Regression gate: cannot judge (passed: --allow-unjudged)**"
    assert judge(base, new).gate() == ""  # without a threshold there is no gate to fail
    # a damaged histogram is never replaced by the job durations
    if "histogram" in words or "negative" in words:
        assert judge({**base, **_sections(duration_s=100)}, {**new, **_sections(duration_s=100)}, 0.05).unjudged


def test_one_steps_histogram_spans_below_zero_and_is_not_damaged():
    """numpy spans a single step's histogram over its value ± 0.5 s (a real HTA fixture's rank): empty bins below
    0 are no negative step time."""
    counts, edges = np.histogram([0.21], bins=100)
    one = {f"rank-{i}": {"histogram": {"counts": counts.tolist(), "edges": edges.tolist()}} for i in range(4)}
    assert edges[0] < 0 and gated_numbers_problem({"sections": _sections(nodes=one)}) == ""
    result = judge(_sections(nodes=one), _sections(nodes=one), 0.05)
    assert not result.unjudged and result.basis == "mean step time" and result.ratio == pytest.approx(1.0)


def test_labels_name_the_sides_in_the_reason_and_node_names_stay_as_given():
    result = judge(_sections(), _sections(duration_s=10), 0.05, labels=("A", "B"))
    assert result.unjudged.startswith("no step durations in A and B") and "no job duration in A" in result.unjudged
    damaged = _sections(nodes={"NEW-BASE": {"histogram": {"counts": [1], "edges": [-1.0, 0.0]}}})
    result = judge(_sections(_ranks(80, 1)), damaged, 0.05, labels=("A", "B"))
    assert result.unjudged == "B's node NEW-BASE's step histogram has a negative step time (a step in the bin from -1 s)"


def test_the_gate_as_a_junit_case_says_which():
    result = judge(_sections(), _sections(), 0.05)
    case = ExtraCase("reportgen.regression", "regression-gate", "failure", result.summary(), "CannotJudge")
    root = ET.fromstring(junit_xml({"sections": _sections()}, case))
    (suite,) = [s for s in root.iter("testsuite") if s.get("name") == "reportgen.regression"]
    failure = suite.find("testcase/failure")
    assert failure.get("type") == "CannotJudge" and "cannot judge: no step durations" in failure.get("message")
    assert root.get("failures") == "1" and suite.get("tests") == "1"


DAMAGED = {  # what used to end check --base and trend with exit 3
    "histogram edges of ±1e308": lambda d: d["sections"].update(_sections(
        nodes={"n": {"histogram": {"counts": [6, 6], "edges": [-1e308, 0.0, 1e308]}}})),
    "diagnosis.status a list": lambda d: d.update(diagnosis={"status": ["healthy"]}),
    "job duration of 1e308 s": lambda d: d["sections"].update(_sections(duration_s=1e308)),
}


def _report(path, sections: dict, mutate=None) -> str:
    data = {"schema_version": "1.1", "job": {"name": path.stem}, "sections": sections}
    if mutate:
        mutate(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_a_damaged_report_json_is_one_line_exit_2_in_check_base_and_trend(tmp_path, damage, capsys):
    good = _report(tmp_path / "good.json", _sections(_ranks(80, 1)))
    bad = _report(tmp_path / "bad.json", _sections(_ranks(80, 2)), DAMAGED[damage])
    assert gated_numbers_problem(json.loads((tmp_path / "bad.json").read_text()))
    for argv in (["check", good, "--base", bad, "--fail-on-regression", "5%", "--junit", str(tmp_path / "j.xml")],
                 ["check", bad, "--base", good, "--junit", str(tmp_path / "j.xml")],
                 ["trend", good, bad, "-o", str(tmp_path / "t.html")]):
        code = cli.main([*argv, "-q"])
        err = capsys.readouterr().err
        assert code == 2 and len(err.splitlines()) == 1 and "bad.json: damaged report.json: " in err, (argv, err)
        assert not list(tmp_path.glob("[jt].*"))


def test_check_base_cannot_judge_exits_1_and_says_so_unless_allowed(tmp_path, capsys):
    base = _report(tmp_path / "base.json", _sections())
    new = _report(tmp_path / "new.json", _sections())
    argv = ["check", new, "--base", base, "--fail-on-regression", "5%", "--junit", str(tmp_path / "j.xml"),
            "--markdown", str(tmp_path / "s.md"), "--no-step-summary", "-q"]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("reportgen: --fail-on-regression cannot judge: no step durations in BASE and NEW")
    assert "**Regression gate: cannot judge (failed)**" in (tmp_path / "s.md").read_text(encoding="utf-8")
    assert 'type="CannotJudge"' in (tmp_path / "j.xml").read_text(encoding="utf-8")
    assert cli.main([*argv, "--allow-unjudged"]) == 0
    assert "allowed by --allow-unjudged" in capsys.readouterr().err
    assert "cannot judge (passed: --allow-unjudged)" in (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "<skipped message=\"Regression check: cannot judge" in (tmp_path / "j.xml").read_text(encoding="utf-8")


def test_trend_shows_what_it_cannot_judge(tmp_path, capsys):
    a = _report(tmp_path / "a.json", _sections(_ranks(80, 1)))
    b = _report(tmp_path / "b.json", _sections())
    assert cli.main(["trend", a, b, "-o", "-", "--format", "md", "-q"]) == 0
    assert "cannot judge: no step durations in b" in capsys.readouterr().out
