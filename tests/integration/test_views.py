"""Typed views of section data read by other rooms (issue #31, item 3): ``report.views.JobSummary``."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from reportgen.report.views import JobSummary


def test_a_view_keeps_the_numbers_as_given_and_drops_what_is_not_a_number():
    view = JobSummary.of({"job_duration_s": 3600, "initialization_s": 12.5, "initialization_pct": "12",
                          "training_loop_duration_s": True, "finalization_s": math.inf, "extra": 1})
    assert view == JobSummary(available=True, job_duration_s=3600, initialization_s=12.5)
    assert type(view.job_duration_s) is int  # an int stays an int: what is printed from it does not move
    assert JobSummary.of({"available": False}).available is False
    assert JobSummary.of(None) == JobSummary.of([1]) == JobSummary.of({}) == JobSummary()
    with pytest.raises(AttributeError):
        view.job_duration_s = 1  # frozen


def test_the_view_reads_what_the_summary_builder_writes(tmp_path: Path):
    from reportgen.engine import analyze
    from reportgen.report.build import build_report
    from reportgen.rule_outputs import load_rule_outputs
    from reportgen.section_ids import SectionId

    from tests.support.paths import ROOT as root
    outputs = load_rule_outputs(analyze(root / "sample_data", tmp_path / "analysis").report_dir)
    data = build_report(outputs).section(SectionId.TRAINING_JOB_SUMMARY).data
    view = JobSummary.of(data)
    assert view.available
    for name in ("job_duration_s", "initialization_s", "training_loop_duration_s", "finalization_s",
                 "initialization_pct", "training_loop_pct", "finalization_pct"):
        assert getattr(view, name) == data[name] and getattr(view, name) is not None, name
    assert view.initialization_s + view.training_loop_duration_s + view.finalization_s == pytest.approx(
        view.job_duration_s, abs=1)
