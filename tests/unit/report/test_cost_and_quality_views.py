"""The cost section's data as the diagnosis and the "At a glance" block read it (report.views.CostFigures), and
data-quality.json's problem log as the Data quality section reads it back (problems.LoggedProblems): built from
what reportgen writes, and from garbage, which reads as None or empty, never an error."""

from __future__ import annotations

from reportgen.problems import LoggedProblems, ProblemLog
from reportgen.report.build import data_quality_section
from reportgen.report.sections.cost import build as cost_section
from reportgen.report.views import CostFigures

HUGE = 10**400


def test_cost_figures_of_the_cost_section():
    figures = CostFigures.of(cost_section(3600.0, "ml.p3.2xlarge", 2).data)
    assert figures == CostFigures("ml.p3.2xlarge", 2, 3.825, 7.65, 7.65, "USD")
    assert isinstance(figures.instance_count, int)  # as given: "2 ×", not "2.0 ×"
    unknown = CostFigures.of(cost_section(None, None, None).data)
    assert unknown == CostFigures() and unknown.currency == "USD"


def test_cost_figures_of_garbage():
    assert CostFigures.of(None) == CostFigures() == CostFigures.of({}) == CostFigures.of([1])
    odd = CostFigures.of({"instance_type": 3, "instance_count": True, "price_per_hour": HUGE, "cost": "7",
                          "cost_rounded": float("nan"), "prices": {"currency": "EUR"}})
    assert odd == CostFigures(currency="EUR")
    assert CostFigures.of({"prices": {"currency": ""}}).currency == "USD"
    assert CostFigures.of({"prices": {"currency": 5}}).currency == "5"  # shown as text, as it was


def test_logged_problems_read_back_what_the_log_wrote():
    log = ProblemLog(cap=2)
    for line in (3, 9, 12):
        log.add("a.json", line, "bad event")
    log.add("b.json", None, "no end")
    found = LoggedProblems.of(log.to_json())
    assert found.total == 4 and found.by_reason == {"bad event": 3, "no end": 1}
    assert found.listed == [("a.json", 3, "bad event"), ("a.json", 9, "bad event")]
    section = data_quality_section([], log.to_json())
    reasons, problems = section.tables()
    assert reasons.rows == [["bad event", 3], ["no end", 1]]
    assert problems.rows == [["a.json", 3, "bad event"], ["a.json", 9, "bad event"]]
    assert problems.caption == "The first 2 of 4 problems" and section.data["problems"] == 4


def test_logged_problems_of_garbage():
    assert LoggedProblems.of(None) == LoggedProblems() == LoggedProblems.of({"total": "3"})
    odd = LoggedProblems.of({"total": 2, "by_reason": [1], "problems": [{"line": 4}, "x", {"file": 1, "reason": 2}]})
    assert odd == LoggedProblems(2, {}, [("", 4, ""), (1, None, 2)])  # missing: "" and None, as the table showed
    assert LoggedProblems.of({"total": 1, "problems": "abc"}).listed == []
    assert data_quality_section([], {"total": 1, "problems": 5}).tables()[1:] == []  # no listed problem: no table
