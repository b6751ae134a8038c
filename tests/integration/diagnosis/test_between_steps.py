"""The loop's time between its steps, against a real Keras run's own timing (tests/recordings/keras, issue 46).

Keras runs a callback's on_train_batch_end after each step's annotation closes: the work is between the steps the
profiler records. The fix (the same fit without the callback) saved 20.5 s of a 36.4 s fit."""

from __future__ import annotations

import json

import pytest

from reportgen.diagnosis import diagnose
from reportgen.pipeline import analyze as analyze_source
from reportgen.rule_outputs import load_rule_outputs
from tests.support.paths import RECORDINGS

RUN = RECORDINGS / "keras" / "callback"


def test_a_keras_callbacks_work_between_steps_is_the_first_finding_with_its_measured_cost(tmp_path):
    truth = json.loads((RUN / "truth.json").read_text())
    diagnosis = diagnose(load_rule_outputs(analyze_source(str(RUN), tmp_path / "o")))
    assert diagnosis.status == "problems"
    top = diagnosis.findings[0]
    assert top.cause == "between-steps" and "on_train_batch_end" in top.fix
    assert "60 % of the profiled loop lies between its steps" in top.evidence[0]
    saved = truth["fit_s"] - truth["fix_fit_s"]  # 20.5 s
    assert top.seconds == pytest.approx(saved, rel=0.25)
    account = next(iter(diagnosis.evidence.trace_ranks.values())).account
    assert len(account.between_steps_ms) == 29 and sum(account.between_steps_ms) == pytest.approx(1923.8, abs=1)
